"""Builds the parts the functions run on from their settings and real AWS clients."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from vigil.clock import Clock, SystemClock
from vigil.config import Settings

if TYPE_CHECKING:
    from vigil.alarms.aws import AwsAlarms
    from vigil.alarms.redrive import DeadLetters
    from vigil.attachments.blobs import S3Blobs
    from vigil.kit.keys import Keys
    from vigil.mailboxes.sqs import SqsMailboxQueues
    from vigil.notifications.sending import Sender
    from vigil.quotas.records import Quotas
    from vigil.store import Store
    from vigil.stores.dynamo import DynamoStore
    from vigil.switches.engine import SwitchEngine


_clock: Clock = SystemClock()


def clock() -> Clock:
    """The functions' clock: the system's, unless the local runtime was started with another
    (tests move time through it)."""
    return _clock


def use_clock(replacement: Clock) -> None:
    global _clock
    _clock = replacement


@functools.cache
def settings() -> Settings:
    return Settings.from_env()


@functools.cache
def _session() -> Any:
    """botocore's session, as boto3's default session would hold it: importing boto3 and its
    resource layer, which nothing here uses, costs a cold start some 20 ms."""
    from botocore.loaders import Loader
    from botocore.session import get_session

    class Services(Loader):  # type: ignore[misc]
        def list_available_services(self, type_name: str) -> list[str]:
            """The names of the services botocore has data for, which a service's name is
            checked against before its model is loaded. botocore's own list looks into each of
            some 400 directories for a file of ``type_name`` (12 ms of a cold start); loading
            the model fails anyway if there is none."""
            paths = [path for path in self.search_paths if os.path.isdir(path)]
            return sorted({name for path in paths for name in os.listdir(path)})

    session = get_session()
    session.register_component("data_loader", Services())
    return session


def aws_client(service: str, read_timeout: int = 5) -> Any:
    from botocore.config import Config

    # Fail fast and retry with jitter inside the function's own timeout.
    config = Config(
        connect_timeout=2,
        read_timeout=read_timeout,
        retries={"mode": "standard", "max_attempts": 3},
    )
    return _session().create_client(service, config=config)


# botocore's session is not safe for threads: two clients built at once from it can fail. A
# call's pieces may run side by side (a batch's beats) and meet a client unbuilt together.
_BUILDING = threading.Lock()


class OnFirstUse:
    """Stands in for an AWS client and builds it when it is first used, once, whichever
    threads use it first."""

    def __init__(self, service: str, read_timeout: int = 5) -> None:
        self._service = service
        self._read_timeout = read_timeout
        self._client: Any = None

    @property
    def is_built(self) -> bool:
        return self._client is not None

    def __getattr__(self, name: str) -> Any:
        if self._client is None:
            with _BUILDING:
                if self._client is None:
                    self._client = aws_client(self._service, self._read_timeout)
        return getattr(self._client, name)


Connect = Callable[[str, int], Any]


def store() -> DynamoStore:
    from vigil.stores.dynamo import DynamoStore

    return DynamoStore(aws_client("dynamodb"), settings().table_name)


def queues(connect: Connect = aws_client) -> SqsMailboxQueues:
    from vigil.mailboxes.sqs import SqsMailboxQueues

    # Long polls wait up to 20 s: the read timeout must outlast them.
    config = settings()
    return SqsMailboxQueues(connect("sqs", 25), config.mailbox_queue_prefix, config.stack_name)


def blobs(connect: Connect = aws_client) -> S3Blobs:
    from vigil.attachments.blobs import S3Blobs

    return S3Blobs(connect("s3", 5), settings().attachments_bucket, presigner=_presigner())


def _presigner() -> Any:
    """The client that signs presigned URLs and forms: the function's own, unless
    PRESIGN_ACCESS_KEY_ID names a key kept for them alone (the local runtime's, whose key id
    may be handed out because it can do nothing else)."""
    key_id = os.environ.get("PRESIGN_ACCESS_KEY_ID")
    if not key_id:
        return None
    from botocore.config import Config

    return _session().create_client(
        "s3",
        aws_access_key_id=key_id,
        aws_secret_access_key=os.environ["PRESIGN_SECRET_ACCESS_KEY"],
        config=Config(signature_version="s3v4"),
    )


def alarms(connect: Connect = aws_client) -> AwsAlarms:
    from vigil.alarms.aws import AwsAlarms, Destination
    from vigil.alarms.kinds import NOTIFY, SLACK_RESPONSE, WATCH_KINDS

    config = settings()
    notify = Destination(config.notify_queue_url, config.notify_function_arn, config.notify_dlq_arn)
    watch = Destination(config.watch_queue_url, config.notify_function_arn, config.notify_dlq_arn)
    return AwsAlarms(
        sqs=connect("sqs", 5),
        scheduler=connect("scheduler", 5),
        queue_url=config.timer_queue_url,
        group=config.schedule_group,
        target_arn=config.alarm_function_arn,
        role_arn=config.scheduler_role_arn,
        dead_letter_arn=config.alarm_dlq_arn,
        by_kind={NOTIFY: notify, SLACK_RESPONSE: notify, **dict.fromkeys(WATCH_KINDS, watch)},
    )


def timer_routes() -> dict[str, str]:
    """The queue (its logical id in template.yaml) that serves each kind of timer today: the
    alarm function's kinds on the timer queue, the notify function's as ``alarms`` routes them."""
    from vigil.alarms.redrive import TIMER_QUEUE, notify_routes
    from vigil.requests.service import TIMER_KIND as REQUEST
    from vigil.switches.sweep import SWEEP_KIND as SWEEP
    from vigil.switches.timers import TIMER_KIND as SWITCH

    return {SWITCH: TIMER_QUEUE, REQUEST: TIMER_QUEUE, SWEEP: TIMER_QUEUE, **notify_routes()}


def dead_letters(connect: Connect = aws_client) -> DeadLetters | None:
    """The dead-letter queues of timers, for the console; None where the function is not
    given their URLs (only the API function is)."""
    from vigil.alarms.redrive import DeadLetters

    config = settings()
    queues = {
        "TimerDLQ": config.timer_dlq_url,
        "AlarmDLQ": config.alarm_dlq_url,
        "NotifyDLQ": config.notify_dlq_url,
        "TimerQueue": config.timer_queue_url,
        "NotifyQueue": config.notify_queue_url,
        "WatchQueue": config.watch_queue_url,
    }
    if not all(queues.values()):
        return None
    return DeadLetters(connect("sqs", 5), queues, timer_routes())


def keys() -> Keys:
    """The secret named by SERVICE_KEY_ARN, read from Secrets Manager on first use (once per
    sandbox), not at init: only calls that need a key pay for the read."""
    from vigil.kit.keys import Keys

    def load() -> str:
        arn = os.environ.get("SERVICE_KEY_ARN")
        if not arn:
            raise RuntimeError("missing configuration: SERVICE_KEY_ARN")
        value: str = aws_client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"]
        return value

    return Keys(load)


def sender(keys: Keys, connect: Connect = aws_client) -> Sender:
    """How notifications leave, as the settings say."""
    from vigil.notifications.sending import Sender

    config = settings()
    return Sender(
        keys=keys,
        clock=clock(),
        console_base=config.console_base_url or None,
        allow_private=config.local,
        email_sender=config.email_sender or None,
        ses=connect("sesv2", 5) if config.email_sender else None,
    )


def quotas() -> Quotas:
    from vigil.quotas.records import Quotas

    return Quotas.of(settings().quota_limits)


def aws_switch_engine() -> SwitchEngine[Store]:
    from vigil.notifications.publishing import outbox_on_first_event
    from vigil.switches.engine import SwitchEngine

    table, timers = store(), alarms()
    return SwitchEngine(
        store=table,
        clock=clock(),
        alarms=timers,
        queues=queues(),
        publish=outbox_on_first_event(table, clock(), timers),
        quotas=quotas(),
    )
