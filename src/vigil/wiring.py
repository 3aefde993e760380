"""Builds the application from its settings and real AWS clients."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from vigil.app import App
from vigil.clock import SystemClock
from vigil.config import Settings

if TYPE_CHECKING:
    from vigil.adapters.alarms import AwsAlarms
    from vigil.adapters.dynamo import DynamoStore
    from vigil.adapters.sqs_mailboxes import SqsMailboxQueues
    from vigil.tools.switches import Liveness


@functools.cache
def settings() -> Settings:
    return Settings.from_env()


def aws_client(service: str, read_timeout: int = 5) -> Any:
    import boto3
    from botocore.config import Config

    # Fail fast and retry with jitter inside the function's own timeout.
    config = Config(
        connect_timeout=2,
        read_timeout=read_timeout,
        retries={"mode": "standard", "max_attempts": 3},
    )
    return boto3.client(service, config=config)


def _store() -> DynamoStore:
    from vigil.adapters.dynamo import DynamoStore

    return DynamoStore(aws_client("dynamodb"), settings().table_name)


def _queues() -> SqsMailboxQueues:
    from vigil.adapters.sqs_mailboxes import SqsMailboxQueues

    # Long polls wait up to 20 s: the read timeout must outlast them.
    return SqsMailboxQueues(aws_client("sqs", read_timeout=25), settings().mailbox_queue_prefix)


def _alarms() -> AwsAlarms:
    from vigil.adapters.alarms import AwsAlarms

    config = settings()
    return AwsAlarms(
        sqs=aws_client("sqs"),
        scheduler=aws_client("scheduler"),
        queue_url=config.timer_queue_url,
        group=config.schedule_group,
        target_arn=config.alarm_function_arn,
        role_arn=config.scheduler_role_arn,
        dead_letter_arn=config.alarm_dlq_arn,
    )


def aws_app() -> App:
    return App(_store(), SystemClock(), queues=_queues(), alarms=_alarms())


def aws_liveness() -> Liveness:
    from vigil.tools.switches import Liveness

    return Liveness(_store(), SystemClock(), _alarms(), _queues())
