"""Alarms on AWS: a delayed message on the timer queue for the last 900 s, an EventBridge
Scheduler one-shot schedule before that."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from vigil.alarms.timers import SCHEDULER_LEAD, Timer, delay_for, needs_scheduler
from vigil.kit.aws import aws_failure, error_code
from vigil.observability import get_logger, log_failure

log = get_logger("vigil.alarms")


def schedule_name(timer: Timer) -> str:
    """Deterministic, so arming the same alarm twice creates one schedule (the second create
    is refused as a conflict): the Scheduler's ClientToken is not relied on."""
    digest = hashlib.sha256(f"{timer.namespace}/{timer.kind}/{timer.key}".encode()).hexdigest()
    return f"{timer.kind}-{digest[:32]}-{timer.generation}-{int(timer.due_at.timestamp())}"


@dataclass(frozen=True)
class Destination:
    """Where timers of a kind go: the queue of their last stretch, the function a schedule
    invokes, and where a schedule that cannot invoke it leaves the event."""

    queue_url: str
    target_arn: str
    dead_letter_arn: str


class AwsAlarms:
    """``by_kind`` sends timers of some kinds elsewhere than to the alarm function (the
    notifications' attempts to the notify function, whose slow receivers cannot hold up a
    switch's expiry)."""

    def __init__(
        self,
        sqs: Any,
        scheduler: Any,
        queue_url: str,
        group: str,
        target_arn: str,
        role_arn: str,
        dead_letter_arn: str,
        by_kind: Mapping[str, Destination] | None = None,
    ) -> None:
        self.sqs = sqs
        self.scheduler = scheduler
        self.group = group
        self.role_arn = role_arn
        self.default = Destination(queue_url, target_arn, dead_letter_arn)
        self.by_kind = dict(by_kind or {})

    def arm(self, timer: Timer, now: datetime) -> None:
        try:
            self._arm(timer, now)
        except Exception as error:
            code = error_code(error)
            if code is None:
                raise
            if code == "ConflictException":
                return  # the same schedule, armed by an earlier attempt of this same step
            raise aws_failure(code, "the alarm service") from None

    def hand_back(self, record: Mapping[str, Any], seconds: int) -> None:
        # The queue's URL from its ARN (arn:aws:sqs:<region>:<account>:<name>), on the endpoint
        # this client speaks to: no lookup, and the same on the local runtime's moto.
        account, name = str(record["eventSourceARN"]).split(":")[4:6]
        try:
            self.sqs.change_message_visibility(
                QueueUrl=f"{self.sqs.meta.endpoint_url}/{account}/{name}",
                ReceiptHandle=record["receiptHandle"],
                VisibilityTimeout=seconds,
            )
        except Exception as error:
            if error_code(error) is None:
                raise
            # Stale, or SQS is failing too: the record comes back at its visibility timeout.
            log_failure(log, "timer not handed back", error, message_id=record.get("messageId"))

    def _arm(self, timer: Timer, now: datetime) -> None:
        destination = self.by_kind.get(timer.kind, self.default)
        if not needs_scheduler(timer, now):
            self.sqs.send_message(
                QueueUrl=destination.queue_url,
                MessageBody=timer.model_dump_json(),
                DelaySeconds=delay_for(timer, now),
            )
            return
        at = (timer.due_at - SCHEDULER_LEAD).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
        self.scheduler.create_schedule(
            Name=schedule_name(timer),
            GroupName=self.group,
            ScheduleExpression=f"at({at})",
            ScheduleExpressionTimezone="UTC",
            FlexibleTimeWindow={"Mode": "OFF"},
            ActionAfterCompletion="DELETE",
            Target={
                "Arn": destination.target_arn,
                "RoleArn": self.role_arn,
                "Input": timer.model_dump_json(),
                "DeadLetterConfig": {"Arn": destination.dead_letter_arn},
                "RetryPolicy": {"MaximumEventAgeInSeconds": 3600, "MaximumRetryAttempts": 10},
            },
        )
