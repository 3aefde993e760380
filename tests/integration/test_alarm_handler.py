"""The alarm function: early timers go back on the queue, due ones run, unknown kinds fail."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import boto3
import pytest

from tests.conftest import ROOT
from vigil import timers, wiring
from vigil.clock import ManualClock
from vigil.entrypoints import alarm
from vigil.timers import Timer, delay_for


class RecordingQueue:
    def __init__(self) -> None:
        self.sent: list[tuple[Timer, int]] = []

    def send(self, timer: Timer, delay_seconds: int) -> None:
        self.sent.append((timer, delay_seconds))


def timer(due_in: float, clock: ManualClock, kind: str = "test") -> Timer:
    return Timer(
        kind=kind, namespace="acme", key="k", due_at=clock.now() + timedelta(seconds=due_in)
    )


def test_delay_rounds_up_and_caps_at_the_sqs_limit(clock: ManualClock) -> None:
    assert delay_for(timer(0.2, clock), clock.now()) == 1
    assert delay_for(timer(-5, clock), clock.now()) == 0
    assert delay_for(timer(3600, clock), clock.now()) == 900


def test_early_timers_are_requeued_and_due_ones_run(clock: ManualClock) -> None:
    queue, ran = RecordingQueue(), []
    handlers = {"test": ran.append}
    early = timer(1200, clock)
    assert timers.deliver(early, clock.now(), queue, handlers) is False
    assert queue.sent == [(early, 900)]
    clock.advance(1200)
    assert timers.deliver(early, clock.now(), queue, handlers) is True
    assert ran == [early]
    with pytest.raises(timers.UnknownTimerKind):
        timers.deliver(timer(0, clock, kind="other"), clock.now(), queue, handlers)


@pytest.fixture
def queue_url(aws: None, monkeypatch: pytest.MonkeyPatch) -> str:
    url: str = boto3.client("sqs", region_name="us-east-1").create_queue(QueueName="timers")[
        "QueueUrl"
    ]
    for key in ("TABLE_NAME", "ATTACHMENTS_BUCKET", "SCHEDULE_GROUP", "SCHEDULER_ROLE_ARN"):
        monkeypatch.setenv(key, "unused")
    monkeypatch.setenv("ALARM_FUNCTION_ARN", "arn:aws:lambda:us-east-1:123456789012:function:a")
    monkeypatch.setenv("ALARM_DLQ_ARN", "arn:aws:sqs:us-east-1:123456789012:dlq")
    monkeypatch.setenv("TIMER_QUEUE_URL", url)
    wiring.settings.cache_clear()
    alarm._runtime.cache_clear()
    yield url
    wiring.settings.cache_clear()
    alarm._runtime.cache_clear()


def test_sqs_batch_reports_only_the_failed_records(
    queue_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[Timer] = []
    monkeypatch.setitem(alarm.HANDLERS, "sample", ran.append)
    event: dict[str, Any] = json.loads((ROOT / "events" / "timer_sqs.json").read_text())
    unknown = dict(
        event["Records"][0],
        messageId="m-2",
        body=json.dumps(
            {"kind": "nobody", "namespace": "local", "key": "x", "due_at": "2026-01-01T00:00:00Z"}
        ),
    )
    event["Records"].append(unknown)
    result = alarm.handler(event)
    assert result == {"batchItemFailures": [{"itemIdentifier": "m-2"}]}
    assert [t.key for t in ran] == ["sample-1"]


def test_a_scheduler_event_for_a_future_timer_lands_on_the_queue(
    queue_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[Timer] = []
    monkeypatch.setitem(alarm.HANDLERS, "sample", ran.append)
    event = json.loads((ROOT / "events" / "timer_scheduler.json").read_text())
    event["due_at"] = "2999-01-01T00:00:00Z"
    alarm.handler(event)
    assert ran == []
    attributes = boto3.client("sqs", region_name="us-east-1").get_queue_attributes(
        QueueUrl=queue_url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesDelayed"],
    )["Attributes"]
    queued = int(attributes["ApproximateNumberOfMessages"])
    queued += int(attributes["ApproximateNumberOfMessagesDelayed"])
    assert queued == 1
