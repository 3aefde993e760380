"""The alarm function: early timers are armed again, due ones run, unknown kinds fail."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import pytest

from tests.conftest import ROOT, create_tables_from_template
from tests.support import import_entry_point, refuse_aws_clients
from vigil import wiring
from vigil.alarms import timers
from vigil.alarms.memory import MemoryAlarms
from vigil.alarms.timers import Timer, delay_for
from vigil.clock import ManualClock
from vigil.entrypoints import alarm


def timer(due_in: float, clock: ManualClock, kind: str = "test") -> Timer:
    return Timer(
        kind=kind, namespace="acme", key="k", due_at=clock.now() + timedelta(seconds=due_in)
    )


def test_delay_rounds_up_and_caps_at_the_sqs_limit(clock: ManualClock) -> None:
    assert delay_for(timer(0.2, clock), clock.now()) == 1
    assert delay_for(timer(-5, clock), clock.now()) == 0
    assert delay_for(timer(3600, clock), clock.now()) == 900


def test_early_timers_are_armed_again_and_due_ones_run(clock: ManualClock) -> None:
    alarms, ran = MemoryAlarms(), []
    handlers = {"test": ran.append}
    early = timer(1200, clock)
    assert timers.deliver(early, clock.now(), alarms, handlers) is False
    assert alarms.armed == [early]
    clock.advance(1200)
    assert timers.deliver(early, clock.now(), alarms, handlers) is True
    assert ran == [early]
    with pytest.raises(timers.UnknownTimerKind):
        timers.deliver(timer(0, clock, kind="other"), clock.now(), alarms, handlers)


@pytest.fixture
def deployed(aws: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    sqs = boto3.client("sqs", region_name="us-east-1")
    scheduler = boto3.client("scheduler", region_name="us-east-1")
    queue = sqs.create_queue(QueueName="timers")["QueueUrl"]
    dlq = sqs.create_queue(QueueName="alarm-dlq")["QueueUrl"]
    scheduler.create_schedule_group(Name="alarms")
    env = {
        "TABLE_NAME": create_tables_from_template(boto3.client("dynamodb"))["VigilTable"],
        "TIMER_QUEUE_URL": queue,
        "SCHEDULE_GROUP": "alarms",
        "SCHEDULER_ROLE_ARN": "arn:aws:iam::123456789012:role/scheduler",
        "ALARM_FUNCTION_ARN": "arn:aws:lambda:us-east-1:123456789012:function:alarm",
        "ALARM_DLQ_ARN": sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"],
        "MAILBOX_QUEUE_PREFIX": "test-mb",
        "ATTACHMENTS_BUCKET": "test-attachments",
        "NOTIFY_QUEUE_URL": sqs.create_queue(QueueName="notify")["QueueUrl"],
        "WATCH_QUEUE_URL": sqs.create_queue(QueueName="watch")["QueueUrl"],
        "NOTIFY_FUNCTION_ARN": "arn:aws:lambda:us-east-1:123456789012:function:notify",
        "NOTIFY_DLQ_ARN": "arn:aws:sqs:us-east-1:123456789012:notify-dlq",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    wiring.settings.cache_clear()
    alarm.switch_engine.cache_clear()
    yield env
    wiring.settings.cache_clear()
    alarm.switch_engine.cache_clear()


def sample(name: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((ROOT / "events" / name).read_text())
    return event


def test_sqs_batch_reports_only_the_failed_records(deployed: dict[str, str]) -> None:
    event = sample("timer_sqs.json")
    unknown = dict(event["Records"][0], messageId="m-2")
    unknown["body"] = json.dumps(
        {"kind": "nobody", "namespace": "local", "key": "x", "due_at": "2026-01-01T00:00:00Z"}
    )
    event["Records"].append(unknown)
    assert alarm.handler(event) == {"batchItemFailures": [{"itemIdentifier": "m-2"}]}


def test_the_entry_points_import_builds_what_timers_run_on(
    deployed: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = import_entry_point("alarm")
    monkeypatch.setattr(wiring, "aws_client", refuse_aws_clients)
    assert entry.handler(sample("timer_sqs.json")) == {"batchItemFailures": []}
    assert alarm.switch_engine.cache_info().currsize == 1


class Context:
    def __init__(self, left_ms: int) -> None:
        self.left_ms = left_ms

    def get_remaining_time_in_millis(self) -> int:
        return self.left_ms


def test_the_sweeps_event_arms_a_sweep_timer_per_shard_on_the_timer_queue(
    deployed: dict[str, str],
) -> None:
    from vigil.entrypoints.sweep import SWEEP_EVENT
    from vigil.switches.store import SWEEP_SHARDS

    assert alarm.handler(dict(SWEEP_EVENT), Context(30_000)) == {"shards": SWEEP_SHARDS}
    assert queued(deployed["TIMER_QUEUE_URL"]) == SWEEP_SHARDS
    bodies = boto3.client("sqs", region_name="us-east-1").receive_message(
        QueueUrl=deployed["TIMER_QUEUE_URL"], MaxNumberOfMessages=10
    )["Messages"]
    # Each a timer the alarm function serves, for a shard from its start; and served, it
    # finds nothing to sweep in an empty table.
    event = {"Records": [{"messageId": m["MessageId"], "body": m["Body"]} for m in bodies]}
    assert {json.loads(m["Body"])["kind"] for m in bodies} == {"sweep"}
    assert alarm.handler(event) == {"batchItemFailures": []}


def queued(url: str) -> int:
    attributes = boto3.client("sqs", region_name="us-east-1").get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesDelayed"],
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(
        attributes["ApproximateNumberOfMessagesDelayed"]
    )


def test_a_timer_due_within_15_minutes_goes_on_the_queue(deployed: dict[str, str]) -> None:
    from vigil.clock import SystemClock, iso

    event = sample("timer_scheduler.json")
    event["due_at"] = iso(SystemClock().now() + timedelta(minutes=5))
    alarm.handler(event)
    assert queued(deployed["TIMER_QUEUE_URL"]) == 1


def test_a_later_timer_becomes_one_schedule_even_when_armed_twice(
    deployed: dict[str, str],
) -> None:
    from vigil.clock import SystemClock, iso

    event = sample("timer_scheduler.json")
    event["due_at"] = iso(SystemClock().now() + timedelta(hours=3))
    alarm.handler(event)
    alarm.handler(event)  # the Scheduler delivers at least once
    schedules = boto3.client("scheduler", region_name="us-east-1").list_schedules(
        GroupName="alarms"
    )["Schedules"]
    assert len(schedules) == 1
    assert queued(deployed["TIMER_QUEUE_URL"]) == 0


@pytest.mark.parametrize(
    ("code", "expected"),
    [("RequestThrottled", "throttled"), ("InternalError", "unavailable")],
)
def test_aws_failures_arming_an_alarm_are_typed_and_retryable(
    clock: ManualClock, code: str, expected: str
) -> None:
    from botocore.stub import Stubber

    from vigil.alarms.aws import AwsAlarms
    from vigil.errors import VigilError

    sqs = boto3.client(
        "sqs", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    alarms = AwsAlarms(sqs, None, "https://queue", "group", "arn:fn", "arn:role", "arn:dlq")
    with Stubber(sqs) as stub:
        stub.add_client_error("send_message", service_error_code=code, service_message="AWS text")
        with pytest.raises(VigilError) as raised:
            alarms.arm(timer(30, clock), clock.now())
    assert raised.value.code.value == expected
    assert raised.value.to_dict()["retryable"] is True
    assert "AWS text" not in str(raised.value.to_dict())


def test_timers_of_the_notify_function_go_to_its_queues_never_to_the_alarm_functions(
    deployed: dict[str, str],
) -> None:
    """A notification's attempts and what a Slack interaction is owed on the notify queue; its
    reminders, a session's watch and an envelope's last hand-out on the watch queue, behind no
    attempt that waits on a receiver."""
    from vigil.alarms import kinds
    from vigil.alarms.timers import Timer
    from vigil.clock import SystemClock

    now = SystemClock().now()
    armed = wiring.alarms()
    for kind in kinds.NOTIFY_KINDS:
        armed.arm(Timer(kind=kind, namespace="acme", key="k", due_at=now), now)
    assert queued(deployed["NOTIFY_QUEUE_URL"]) == 2
    assert queued(deployed["WATCH_QUEUE_URL"]) == len(kinds.WATCH_KINDS) == 3
    assert queued(deployed["TIMER_QUEUE_URL"]) == 0


def test_the_notify_function_serves_the_kinds_routed_to_it_and_the_alarm_function_none_of_them(
    clock: ManualClock,
) -> None:
    from tests.liveness_support import World
    from vigil.alarms import kinds
    from vigil.entrypoints import notify

    world = World(clock)
    worker = notify.Worker(world.store, clock, world.alarms, world.sender)
    assert set(notify.handlers(worker)) == set(kinds.NOTIFY_KINDS)
    assert set(alarm.handlers(world.switch_engine)).isdisjoint(kinds.NOTIFY_KINDS)
