"""Settings read once from the environment that template.yaml (or the local runtime) sets."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

# What template.yaml must set on every function (tests/template checks it does).
REQUIRED = (
    "TABLE_NAME",
    "TIMER_QUEUE_URL",
    "SCHEDULE_GROUP",
    "SCHEDULER_ROLE_ARN",
    "ALARM_FUNCTION_ARN",
    "ALARM_DLQ_ARN",
    "MAILBOX_QUEUE_PREFIX",
    "ATTACHMENTS_BUCKET",
    "NOTIFY_QUEUE_URL",
    "WATCH_QUEUE_URL",
    "NOTIFY_FUNCTION_ARN",
    "NOTIFY_DLQ_ARN",
)


@dataclass(frozen=True)
class Settings:
    table_name: str
    timer_queue_url: str
    schedule_group: str
    scheduler_role_arn: str
    alarm_function_arn: str
    alarm_dlq_arn: str
    mailbox_queue_prefix: str
    attachments_bucket: str
    allowed_origins: frozenset[str]
    notify_queue_url: str = ""
    watch_queue_url: str = ""
    notify_function_arn: str = ""
    notify_dlq_arn: str = ""
    stack_name: str = ""
    # The dead-letter queues of timers, which only the API function is given (its console
    # counts them and sends their timers back).
    timer_dlq_url: str = ""
    alarm_dlq_url: str = ""
    notify_dlq_url: str = ""
    # The verified SES identity emails are sent from; none, and email channels cannot deliver.
    email_sender: str = ""
    # Where the console's pages hang from, for links in notifications (empty: no links).
    console_base_url: str = ""
    # The hosts whose OAuth client metadata documents are accepted (empty: any), and refused.
    oauth_client_hosts: str = ""
    oauth_blocked_client_hosts: str = ""
    # An external identity provider whose tokens are taken (vigil.oauth.external): its issuer
    # URL, the audience its tokens must name, and the rule mapping their claims to principals.
    oauth_issuer: str = ""
    oauth_audience: str = ""
    oauth_claim_rule: str = ""
    # On the local runtime: notifications may go to private and loopback addresses.
    local: bool = False
    # The per-namespace quotas set as QUOTA_<NAME> (template parameters), as set, by lower-case
    # name: vigil.quotas.records.Quotas reads those it knows, its defaults for the others.
    quota_limits: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        source = os.environ if env is None else env
        missing = [name for name in REQUIRED if not source.get(name)]
        if missing:
            raise RuntimeError(f"missing configuration: {', '.join(missing)}")
        origins = source.get("ALLOWED_ORIGINS", "")
        return cls(
            table_name=source["TABLE_NAME"],
            timer_queue_url=source["TIMER_QUEUE_URL"],
            schedule_group=source["SCHEDULE_GROUP"],
            scheduler_role_arn=source["SCHEDULER_ROLE_ARN"],
            alarm_function_arn=source["ALARM_FUNCTION_ARN"],
            alarm_dlq_arn=source["ALARM_DLQ_ARN"],
            mailbox_queue_prefix=source["MAILBOX_QUEUE_PREFIX"],
            attachments_bucket=source["ATTACHMENTS_BUCKET"],
            allowed_origins=frozenset(o.strip() for o in origins.split(",") if o.strip()),
            notify_queue_url=source["NOTIFY_QUEUE_URL"],
            watch_queue_url=source["WATCH_QUEUE_URL"],
            notify_function_arn=source["NOTIFY_FUNCTION_ARN"],
            notify_dlq_arn=source["NOTIFY_DLQ_ARN"],
            stack_name=source.get("STACK_NAME", ""),
            timer_dlq_url=source.get("TIMER_DLQ_URL", ""),
            alarm_dlq_url=source.get("ALARM_DLQ_URL", ""),
            notify_dlq_url=source.get("NOTIFY_DLQ_URL", ""),
            email_sender=source.get("NOTIFY_EMAIL_SENDER", ""),
            console_base_url=source.get("CONSOLE_BASE_URL", ""),
            oauth_client_hosts=source.get("OAUTH_CLIENT_HOSTS", ""),
            oauth_blocked_client_hosts=source.get("OAUTH_BLOCKED_CLIENT_HOSTS", ""),
            oauth_issuer=source.get("OAUTH_ISSUER", ""),
            oauth_audience=source.get("OAUTH_AUDIENCE", ""),
            oauth_claim_rule=source.get("OAUTH_CLAIM_RULE", ""),
            local=source.get("VIGIL_ENV") == "local",
            quota_limits=_quota_limits(source),
        )


def _quota_limits(source: Mapping[str, str]) -> dict[str, str]:
    return {
        name.removeprefix("QUOTA_").lower(): raw
        for name, raw in source.items()
        if name.startswith("QUOTA_") and raw
    }
