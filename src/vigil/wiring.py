"""Builds the parts the functions run on from their settings and real AWS clients."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from vigil.clock import Clock, SystemClock
from vigil.config import Settings

if TYPE_CHECKING:
    from vigil.alarms.aws import AwsAlarms
    from vigil.attachments.blobs import S3Blobs
    from vigil.mailboxes.sqs import SqsMailboxQueues
    from vigil.stores.dynamo import DynamoStore
    from vigil.switches.service import Liveness


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


def store() -> DynamoStore:
    from vigil.stores.dynamo import DynamoStore

    return DynamoStore(aws_client("dynamodb"), settings().table_name)


def queues() -> SqsMailboxQueues:
    from vigil.mailboxes.sqs import SqsMailboxQueues

    # Long polls wait up to 20 s: the read timeout must outlast them.
    return SqsMailboxQueues(aws_client("sqs", read_timeout=25), settings().mailbox_queue_prefix)


@functools.cache
def s3() -> Any:
    """The S3 client: made at the first file call, or by the API function's init when that runs
    ahead of requests (``vigil.entrypoints.api.init``)."""
    return aws_client("s3")


def blobs() -> S3Blobs:
    from vigil.attachments.blobs import S3Blobs

    return S3Blobs(s3, settings().attachments_bucket)


def alarms() -> AwsAlarms:
    from vigil.alarms.aws import AwsAlarms

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


def aws_liveness() -> Liveness:
    from vigil.quotas.records import Quotas
    from vigil.switches.service import Liveness

    return Liveness(store(), clock(), alarms(), queues(), Quotas.from_env())
