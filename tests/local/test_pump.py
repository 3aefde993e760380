"""The event pump plays the SQS event source mapping, the Scheduler and asynchronous invocation.

Time moves by the injected clock. SQS's own timings (visibility, delay) are moto's and run on
the wall clock: where a test needs a failed record back at once, it sets the queue's visibility
timeout to zero rather than waiting.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from vigil.clock import ManualClock
from vigil.errors import contended
from vigil.local.deployment import LocalDeployment
from vigil.local.moto_state import saved_schedules
from vigil.local.provisioning import provision
from vigil.local.pump import MAX_CONCURRENT_BATCHES, EventPump, concurrent_batches
from vigil.local.stack import AwsClients, LocalNames
from vigil.local.timetable import Timetable, fire_time, rate_period


class Recorder:
    """A handler that records its calls and answers, or raises, as told."""

    def __init__(self) -> None:
        self.calls: list[tuple[dict[str, Any], Any]] = []
        self.answer: Any = None
        self.error: Exception | None = None
        self.called = threading.Event()

    def __call__(self, event: dict[str, Any], context: Any) -> Any:
        self.calls.append((event, context))
        self.called.set()
        if self.error is not None:
            raise self.error
        return self.answer(event) if callable(self.answer) else self.answer

    @property
    def events(self) -> list[dict[str, Any]]:
        return [event for event, _ in self.calls]


@pytest.fixture
def deployment(cfn: dict[str, Any], clients: AwsClients, names: LocalNames) -> LocalDeployment:
    """The template provisioned, less its recurring sweep schedule: the tests of schedules
    here arm their own, and count every call the pump makes (the sweep's has a test below)."""
    deployment = provision(cfn, clients, names)
    clients.scheduler.delete_schedule(
        GroupName=deployment.schedule_groups["AlarmScheduleGroup"],
        Name=names.physical("SweepSchedule"),
    )
    return deployment


@pytest.fixture
def alarm() -> Recorder:
    return Recorder()


def handlers(alarm: Recorder) -> dict[str, Recorder]:
    return {"AlarmFunction": alarm, "ApiFunction": Recorder(), "NotifyFunction": Recorder()}


@pytest.fixture
def pump(
    deployment: LocalDeployment,
    clients: AwsClients,
    alarm: Recorder,
    clock: ManualClock,
    timetable: Timetable,
) -> EventPump:
    return EventPump(deployment, clients, handlers(alarm), clock, timetable=timetable)


def send(clients: AwsClients, deployment: LocalDeployment, body: str, **extra: Any) -> str:
    url = deployment.queues["TimerQueue"].url
    message_id: str = clients.sqs.send_message(QueueUrl=url, MessageBody=body, **extra)["MessageId"]
    return message_id


def queue_counts(clients: AwsClients, deployment: LocalDeployment, logical_id: str) -> list[int]:
    attributes = clients.sqs.get_queue_attributes(
        QueueUrl=deployment.queues[logical_id].url, AttributeNames=["All"]
    )["Attributes"]
    return [
        int(attributes[name])
        for name in (
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        )
    ]


def receive_all(clients: AwsClients, deployment: LocalDeployment, logical_id: str) -> list[Any]:
    return list(
        clients.sqs.receive_message(
            QueueUrl=deployment.queues[logical_id].url,
            MaxNumberOfMessages=10,
            MessageAttributeNames=["All"],
        ).get("Messages", [])
    )


def make_failed_records_visible_at_once(clients: AwsClients, deployment: LocalDeployment) -> None:
    clients.sqs.set_queue_attributes(
        QueueUrl=deployment.queues["TimerQueue"].url, Attributes={"VisibilityTimeout": "0"}
    )


# ---------------------------------------------------------------- SQS event source mapping


def test_a_message_reaches_the_function_as_an_sqs_event_and_is_deleted(
    pump: EventPump, alarm: Recorder, clients: AwsClients, deployment: LocalDeployment
) -> None:
    message_id = send(
        clients,
        deployment,
        '{"kind":"test"}',
        MessageAttributes={
            "origin": {"DataType": "String", "StringValue": "test"},
            "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
        },
    )

    pump.tick()

    [(event, context)] = alarm.calls
    [record] = event["Records"]
    queue = deployment.queues["TimerQueue"]
    assert record["messageId"] == message_id
    assert record["receiptHandle"]
    assert record["body"] == '{"kind":"test"}'
    assert record["md5OfBody"] == hashlib.md5(b'{"kind":"test"}').hexdigest()
    assert record["attributes"]["ApproximateReceiveCount"] == "1"
    assert {"SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp"} <= set(
        record["attributes"]
    )
    assert record["messageAttributes"] == {
        "origin": {
            "stringValue": "test",
            "stringListValues": [],
            "binaryListValues": [],
            "dataType": "String",
        },
        "blob": {
            "binaryValue": "AAE=",
            "stringListValues": [],
            "binaryListValues": [],
            "dataType": "Binary",
        },
    }
    assert record["md5OfMessageAttributes"]
    assert (record["eventSource"], record["eventSourceARN"], record["awsRegion"]) == (
        "aws:sqs",
        queue.arn,
        "us-east-1",
    )
    assert context.function_name == deployment.functions["AlarmFunction"].name
    assert context.get_remaining_time_in_millis() > 0
    assert queue_counts(clients, deployment, "TimerQueue") == [0, 0, 0]


def test_a_failed_record_comes_back_and_reaches_the_dlq_after_max_receive_count(
    pump: EventPump, alarm: Recorder, clients: AwsClients, deployment: LocalDeployment
) -> None:
    make_failed_records_visible_at_once(clients, deployment)
    good = send(clients, deployment, "good")
    bad = send(clients, deployment, "bad")
    alarm.answer = lambda event: {
        "batchItemFailures": [
            {"itemIdentifier": r["messageId"]} for r in event["Records"] if r["body"] == "bad"
        ]
    }

    for _ in range(11):
        pump.tick()

    delivered = [
        (r["messageId"], r["attributes"]["ApproximateReceiveCount"])
        for r in [record for event in alarm.events for record in event["Records"]]
    ]
    assert delivered.count((good, "1")) == 1
    # maxReceiveCount is 10: ten deliveries, then SQS moves the record on the eleventh receive.
    assert [count for message_id, count in delivered if message_id == bad] == [
        str(n) for n in range(1, 11)
    ]
    assert queue_counts(clients, deployment, "TimerQueue") == [0, 0, 0]
    [dead] = receive_all(clients, deployment, "TimerDLQ")
    assert dead["Body"] == "bad"


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param({"error": RuntimeError("boom")}, id="handler-raises"),
        pytest.param({"answer": {"batchItemFailures": [{"itemIdentifier": ""}]}}, id="bad-id"),
    ],
)
def test_a_failed_invocation_keeps_the_whole_batch(
    failure: dict[str, Any],
    pump: EventPump,
    alarm: Recorder,
    clients: AwsClients,
    deployment: LocalDeployment,
) -> None:
    make_failed_records_visible_at_once(clients, deployment)
    alarm.error = failure.get("error")
    alarm.answer = failure.get("answer")
    send(clients, deployment, "one")
    send(clients, deployment, "two")

    pump.tick()
    pump.tick()

    first, second = alarm.events
    assert len(first["Records"]) == len(second["Records"]) == 2
    assert {r["attributes"]["ApproximateReceiveCount"] for r in second["Records"]} == {"2"}


def test_a_delayed_message_is_not_delivered_before_its_delay(
    pump: EventPump,
    alarm: Recorder,
    clients: AwsClients,
    deployment: LocalDeployment,
    clock: ManualClock,
) -> None:
    send(clients, deployment, "later", DelaySeconds=900)
    send(clients, deployment, "now")

    pump.tick()
    clock.advance(60)
    pump.tick()

    assert [r["body"] for event in alarm.events for r in event["Records"]] == ["now"]
    assert queue_counts(clients, deployment, "TimerQueue") == [0, 0, 1]


def test_the_background_thread_delivers_until_stopped(
    pump: EventPump, alarm: Recorder, clients: AwsClients, deployment: LocalDeployment
) -> None:
    pump.start()
    try:
        send(clients, deployment, "hello")
        assert alarm.called.wait(timeout=10)
    finally:
        pump.stop()
    assert alarm.events[0]["Records"][0]["body"] == "hello"


class Calls:
    """The operations a client makes, by name, while counting."""

    def __init__(self, client: Any) -> None:
        self.events = client.meta.events
        self.names: list[str] = []

    def _count(self, model: Any, **_: Any) -> None:
        self.names.append(model.name)

    def __enter__(self) -> list[str]:
        self.events.register("before-call", self._count)
        return self.names

    def __exit__(self, *_: object) -> None:
        self.events.unregister("before-call", self._count)


def test_a_mapped_queue_is_received_from_when_a_message_may_be_there(
    pump: EventPump, alarm: Recorder, clients: AwsClients, deployment: LocalDeployment
) -> None:
    [mapping] = [m for m in deployment.event_source_mappings if m.function == "AlarmFunction"]
    now = time.time()
    with Calls(clients.sqs) as calls:
        pump.poll_when_due(mapping, now)  # the first pass looks, for what came before it
        pump.poll_when_due(mapping, now + 1)
    assert calls == ["ReceiveMessage"]

    send(clients, deployment, "later", DelaySeconds=900)
    sent = time.time()
    with Calls(clients.sqs) as calls:
        pump.poll_when_due(mapping, now + 1.2)
    assert calls == []

    send(clients, deployment, "now")
    with Calls(clients.sqs) as calls:
        pump.poll_when_due(mapping, time.time() + 0.01)
        pump.poll_when_due(mapping, time.time() + 0.02)  # after a batch, at once again
    assert calls[:2] == ["ReceiveMessage", "DeleteMessageBatch"]
    assert calls.count("ReceiveMessage") == 2
    assert [r["body"] for event in alarm.events for r in event["Records"]] == ["now"]

    with Calls(clients.sqs) as calls:
        pump.poll_when_due(mapping, now + 1.5)
        pump.poll_when_due(mapping, now + 60)  # failed records come back unannounced
        pump.poll_when_due(mapping, sent + 900.01)
    assert calls == ["ReceiveMessage", "ReceiveMessage"]


class Gate:
    """A handler that holds every batch inside it until released, counting how many are
    inside at once; ``full`` is set when ``wanted`` are."""

    def __init__(self, wanted: int) -> None:
        self.wanted = wanted
        self.inside = 0
        self.most = 0
        self.records: list[str] = []
        self.full = threading.Event()
        self.release = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, event: dict[str, Any], context: Any) -> Any:
        with self._lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
            self.records.extend(r["body"] for r in event["Records"])
            if self.inside == self.wanted:
                self.full.set()
        try:
            # A bound for a broken pump, not a timing: the test releases it.
            assert self.release.wait(timeout=60)
        finally:
            with self._lock:
                self.inside -= 1
        return None


def limited(deployment: LocalDeployment, batches: int) -> LocalDeployment:
    """The deployment with the timer queue's mapping limited to ``batches`` at once, as its
    ScalingConfig's MaximumConcurrency would."""
    mappings = [
        dataclasses.replace(m, maximum_concurrency=batches) if m.queue == "TimerQueue" else m
        for m in deployment.event_source_mappings
    ]
    return dataclasses.replace(deployment, event_source_mappings=mappings)


def test_batches_of_a_queue_run_at_once_up_to_the_mappings_limit(
    deployment: LocalDeployment, clients: AwsClients, clock: ManualClock, timetable: Timetable
) -> None:
    batches = 3
    gate = Gate(batches)
    pump = EventPump(
        limited(deployment, batches),
        clients,
        {**handlers(Recorder()), "AlarmFunction": gate},
        clock,
        timetable=timetable,
    )
    # One batch more than may run at once: ten messages a receive.
    bodies = {f"timer-{i}" for i in range((batches + 1) * 10)}
    for body in sorted(bodies):
        send(clients, deployment, body)

    pump.start()
    try:
        # Every batch allowed is inside the handler at the same time, none having returned.
        assert gate.full.wait(timeout=60)
        assert gate.most == batches
        # The receiving waits for a batch to end: the last ten are still on the queue.
        assert queue_counts(clients, deployment, "TimerQueue") == [10, batches * 10, 0]
        gate.release.set()
        deadline = time.monotonic() + 60
        while len(gate.records) < len(bodies) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        gate.release.set()
        pump.stop()
    assert sorted(gate.records) == sorted(bodies)
    assert gate.most == batches
    assert queue_counts(clients, deployment, "TimerQueue") == [0, 0, 0]


def test_a_stop_does_not_wait_for_a_batch_that_does_not_end(
    deployment: LocalDeployment, clients: AwsClients, clock: ManualClock, timetable: Timetable
) -> None:
    gate = Gate(1)
    pump = EventPump(
        deployment,
        clients,
        {**handlers(Recorder()), "AlarmFunction": gate},
        clock,
        timetable=timetable,
    )
    send(clients, deployment, "stuck")
    pump.start()
    try:
        assert gate.full.wait(timeout=60)
        pump.stop()
        # Stopped with the batch still inside the handler: its record is still in flight.
        assert gate.inside == 1
        assert queue_counts(clients, deployment, "TimerQueue") == [0, 1, 0]
    finally:
        gate.release.set()
        pump.stop()


def test_concurrent_batches_follow_scaling_config_and_reserved_concurrency(
    deployment: LocalDeployment,
) -> None:
    [mapping] = [m for m in deployment.event_source_mappings if m.queue == "TimerQueue"]
    function = dataclasses.replace(deployment.functions[mapping.function])
    unlimited = dataclasses.replace(mapping, maximum_concurrency=None)
    assert concurrent_batches(unlimited, function) == MAX_CONCURRENT_BATCHES
    # The template may lower the local ceiling, not raise it: one machine serves every batch.
    assert concurrent_batches(dataclasses.replace(mapping, maximum_concurrency=250), function) == (
        MAX_CONCURRENT_BATCHES
    )
    assert concurrent_batches(dataclasses.replace(mapping, maximum_concurrency=2), function) == 2
    function.reserved_concurrency = 3
    assert concurrent_batches(unlimited, function) == 3
    assert concurrent_batches(dataclasses.replace(mapping, maximum_concurrency=2), function) == 2


def test_a_pump_needs_a_handler_for_every_mapped_function(
    deployment: LocalDeployment, clients: AwsClients
) -> None:
    with pytest.raises(ValueError, match="AlarmFunction"):
        EventPump(deployment, clients, {}, timetable=Timetable())


# ---------------------------------------------------------------- Scheduler


@pytest.mark.parametrize(
    ("expression", "timezone", "fires_at"),
    [
        ("at(2026-01-01T00:00:30)", None, datetime(2026, 1, 1, 0, 1, tzinfo=UTC)),
        ("at(2026-01-01T00:01:00)", "UTC", datetime(2026, 1, 1, 0, 1, tzinfo=UTC)),
        ("at(2026-01-01T01:00:00)", "Europe/Paris", datetime(2026, 1, 1, 0, 0, tzinfo=UTC)),
        ("rate(5 minutes)", None, None),
    ],
)
def test_fire_time_is_the_first_whole_minute_at_or_after_the_at_time(
    expression: str, timezone: str | None, fires_at: datetime | None
) -> None:
    assert fire_time(expression, timezone) == fires_at


def schedule(
    clients: AwsClients,
    deployment: LocalDeployment,
    at: str,
    *,
    name: str = "alarm-1",
    target_arn: str | None = None,
    after: str = "DELETE",
    **target: Any,
) -> str:
    group = deployment.schedule_groups["AlarmScheduleGroup"]
    clients.scheduler.create_schedule(
        Name=name,
        GroupName=group,
        ScheduleExpression=f"at({at})",
        ScheduleExpressionTimezone="UTC",
        FlexibleTimeWindow={"Mode": "OFF"},
        ActionAfterCompletion=after,
        Target={
            "Arn": target_arn or deployment.functions["AlarmFunction"].arn,
            "RoleArn": deployment.roles["SchedulerRole"],
            "Input": json.dumps({"kind": "switch", "key": "k1"}),
            **target,
        },
    )
    return group


def schedule_names(clients: AwsClients, group: str) -> list[str]:
    return [s["Name"] for s in clients.scheduler.list_schedules(GroupName=group)["Schedules"]]


def test_a_one_shot_schedule_fires_once_at_its_minute_and_is_deleted(
    pump: EventPump,
    alarm: Recorder,
    clients: AwsClients,
    deployment: LocalDeployment,
    clock: ManualClock,
) -> None:
    group = schedule(clients, deployment, "2026-01-01T00:00:30")

    pump.tick()
    clock.advance(45)  # 00:00:45: past the at() time, but the Scheduler fires by the minute
    pump.tick()
    assert alarm.calls == []

    clock.advance(15)  # 00:01:00
    pump.tick()
    [(event, context)] = alarm.calls
    assert event == {"kind": "switch", "key": "k1"}
    assert context.invoked_function_arn == deployment.functions["AlarmFunction"].arn
    assert schedule_names(clients, group) == []

    clock.advance(3600)
    pump.tick()
    assert len(alarm.calls) == 1


def test_a_kept_schedule_fires_only_once(
    pump: EventPump,
    alarm: Recorder,
    clients: AwsClients,
    deployment: LocalDeployment,
    clock: ManualClock,
) -> None:
    group = schedule(clients, deployment, "2026-01-01T00:01:00", after="NONE")
    clock.advance(60)

    for _ in range(3):
        pump.tick()
        clock.advance(60)

    assert len(alarm.calls) == 1
    assert schedule_names(clients, group) == ["alarm-1"]


def test_a_schedule_can_send_to_a_queue(
    pump: EventPump, clients: AwsClients, deployment: LocalDeployment, clock: ManualClock
) -> None:
    schedule(
        clients, deployment, "2026-01-01T00:01:00", target_arn=deployment.queues["TimerDLQ"].arn
    )
    clock.advance(60)

    pump.tick()

    [message] = receive_all(clients, deployment, "TimerDLQ")
    assert json.loads(message["Body"]) == {"kind": "switch", "key": "k1"}


@pytest.mark.parametrize(
    ("expression", "period"),
    [
        ("rate(5 minutes)", 300),
        ("rate(1 minute)", 60),
        ("rate(2 hours)", 7200),
        ("rate(1 day)", 86400),
        ("cron(0/5 * * * ? *)", None),
        ("at(2026-01-01T00:00:00)", None),
    ],
)
def test_rate_period_reads_a_rate_expression(expression: str, period: int | None) -> None:
    found = rate_period(expression)
    assert (found.total_seconds() if found else None) == period


def test_the_stacks_sweep_schedule_invokes_the_alarm_function_every_period(
    cfn: dict[str, Any],
    clients: AwsClients,
    names: LocalNames,
    alarm: Recorder,
    clock: ManualClock,
    timetable: Timetable,
) -> None:
    deployment = provision(cfn, clients, names)
    pump = EventPump(deployment, clients, handlers(alarm), clock, timetable=timetable)

    pump.tick()  # seen for the first time: it fires a period (SweepMinutes, 5) from now
    clock.advance(299)
    pump.tick()
    assert alarm.calls == []
    clock.advance(1)
    pump.tick()
    [(event, context)] = alarm.calls
    assert event == {"sweep": "switches"}
    assert context.invoked_function_arn == deployment.functions["AlarmFunction"].arn
    clock.advance(300)
    pump.tick()
    assert len(alarm.calls) == 2
    # The clock jumps eleven periods: one run for them, then a period after the one missed.
    clock.advance(3600)
    pump.tick()
    assert len(alarm.calls) == 3
    clock.advance(299)
    pump.tick()
    assert len(alarm.calls) == 3
    clock.advance(1)
    pump.tick()
    assert len(alarm.calls) == 4
    group = deployment.schedule_groups["AlarmScheduleGroup"]
    assert schedule_names(clients, group) == [names.physical("SweepSchedule")]


def test_a_failing_function_is_retried_by_lambda_then_dead_lettered(
    pump: EventPump,
    alarm: Recorder,
    clients: AwsClients,
    deployment: LocalDeployment,
    clock: ManualClock,
) -> None:
    alarm.error = RuntimeError("boom")
    group = schedule(clients, deployment, "2026-01-01T00:01:00")
    clock.advance(60)

    pump.tick()
    # Lambda accepted the asynchronous invocation: the Scheduler is done with it.
    assert schedule_names(clients, group) == []
    pump.tick()
    assert len(alarm.calls) == 1
    clock.advance(60)  # Lambda's first retry comes a minute later
    pump.tick()
    clock.advance(119)
    pump.tick()
    assert len(alarm.calls) == 2
    assert receive_all(clients, deployment, "AlarmDLQ") == []
    clock.advance(1)  # and the second two minutes after that
    pump.tick()

    assert len(alarm.calls) == 3
    request_ids = {context.aws_request_id for _, context in alarm.calls}
    assert len(request_ids) == 1
    [dead] = receive_all(clients, deployment, "AlarmDLQ")
    assert json.loads(dead["Body"]) == {"kind": "switch", "key": "k1"}
    assert dead["MessageAttributes"]["RequestID"]["StringValue"] == request_ids.pop()
    assert dead["MessageAttributes"]["ErrorMessage"]["StringValue"] == "RuntimeError"


def test_an_unreachable_target_follows_the_schedule_retry_policy_and_dlq(
    pump: EventPump,
    alarm: Recorder,
    clients: AwsClients,
    deployment: LocalDeployment,
    clock: ManualClock,
) -> None:
    missing = deployment.functions["AlarmFunction"].arn + "-missing"
    group = schedule(
        clients,
        deployment,
        "2026-01-01T00:01:00",
        target_arn=missing,
        RetryPolicy={"MaximumRetryAttempts": 1, "MaximumEventAgeInSeconds": 3600},
        DeadLetterConfig={"Arn": deployment.queues["AlarmDLQ"].arn},
    )
    clock.advance(60)

    pump.tick()
    assert schedule_names(clients, group) == ["alarm-1"]
    assert receive_all(clients, deployment, "AlarmDLQ") == []
    clock.advance(1)
    pump.tick()

    [dead] = receive_all(clients, deployment, "AlarmDLQ")
    attributes = {k: v["StringValue"] for k, v in dead["MessageAttributes"].items()}
    assert attributes["EXHAUSTED_RETRY_CONDITION"] == "MaximumRetryAttempts"
    assert attributes["RETRY_ATTEMPTS"] == "1"
    assert attributes["TARGET_ARN"] == missing
    assert json.loads(dead["Body"]) == {"kind": "switch", "key": "k1"}
    assert schedule_names(clients, group) == []
    assert alarm.calls == []


def test_a_pass_asks_moto_only_about_the_schedules_that_are_due(
    pump: EventPump,
    alarm: Recorder,
    clients: AwsClients,
    deployment: LocalDeployment,
    clock: ManualClock,
) -> None:
    for index in range(1000):
        schedule(clients, deployment, "2026-01-02T00:00:00", name=f"later-{index}")
    schedule(clients, deployment, "2026-01-01T00:01:00", name="soon")

    with Calls(clients.scheduler) as calls:
        pump.tick()
        pump.tick()
    assert calls == []

    clock.advance(60)
    with Calls(clients.scheduler) as calls:
        pump.tick()
    assert calls == ["GetSchedule", "DeleteSchedule"]
    assert len(alarm.calls) == 1


def test_a_schedule_created_while_a_later_one_waits_fires_at_its_own_time(
    pump: EventPump,
    alarm: Recorder,
    clients: AwsClients,
    deployment: LocalDeployment,
    clock: ManualClock,
) -> None:
    schedule(clients, deployment, "2026-01-01T01:00:00", name="later")
    pump.tick()
    schedule(clients, deployment, "2026-01-01T00:02:00", name="sooner")

    clock.advance(120)
    pump.tick()
    assert len(alarm.calls) == 1
    group = deployment.schedule_groups["AlarmScheduleGroup"]
    assert schedule_names(clients, group) == ["later"]

    clock.advance(3480)
    pump.tick()
    assert len(alarm.calls) == 2
    assert schedule_names(clients, group) == []


def racing(clients: AwsClients, change: Callable[[], None]) -> Callable[..., Any]:
    """A GetSchedule that ``change`` overtakes once: what the pump reads is moto after it."""
    read = clients.scheduler.get_schedule
    pending = [change]

    def get_schedule(**request: Any) -> Any:
        while pending:
            pending.pop()()
        return read(**request)

    return get_schedule


def test_a_schedule_deleted_after_it_came_due_is_not_fired(
    pump: EventPump,
    alarm: Recorder,
    clients: AwsClients,
    deployment: LocalDeployment,
    clock: ManualClock,
    timetable: Timetable,
) -> None:
    group = schedule(clients, deployment, "2026-01-01T00:01:00")
    clock.advance(60)

    def delete() -> None:
        clients.scheduler.delete_schedule(GroupName=group, Name="alarm-1")

    clients.scheduler.get_schedule = racing(clients, delete)  # type: ignore[method-assign]
    try:
        pump.tick()
    finally:
        del clients.scheduler.get_schedule

    clock.advance(3600)
    pump.tick()
    assert alarm.calls == []
    assert timetable.pending(group) == 0


def test_a_schedule_moved_later_after_it_came_due_fires_at_its_new_time_only(
    pump: EventPump,
    alarm: Recorder,
    clients: AwsClients,
    deployment: LocalDeployment,
    clock: ManualClock,
) -> None:
    group = schedule(clients, deployment, "2026-01-01T00:01:00")
    described = clients.scheduler.get_schedule(GroupName=group, Name="alarm-1")

    def move() -> None:
        clients.scheduler.update_schedule(
            Name="alarm-1",
            GroupName=group,
            ScheduleExpression="at(2026-01-01T00:10:00)",
            ScheduleExpressionTimezone="UTC",
            FlexibleTimeWindow={"Mode": "OFF"},
            ActionAfterCompletion="DELETE",
            Target=described["Target"],
        )

    clock.advance(60)
    clients.scheduler.get_schedule = racing(clients, move)  # type: ignore[method-assign]
    try:
        pump.tick()
    finally:
        del clients.scheduler.get_schedule
    assert alarm.calls == []

    clock.advance(539)
    pump.tick()
    assert alarm.calls == []
    clock.advance(1)
    pump.tick()
    pump.tick()
    assert len(alarm.calls) == 1


def test_a_schedule_updated_in_the_timetable_keeps_only_its_latest_time(
    pump: EventPump,
    alarm: Recorder,
    clients: AwsClients,
    deployment: LocalDeployment,
    clock: ManualClock,
    timetable: Timetable,
) -> None:
    group = schedule(clients, deployment, "2026-01-01T00:05:00")
    described = clients.scheduler.get_schedule(GroupName=group, Name="alarm-1")
    clients.scheduler.update_schedule(
        Name="alarm-1",
        GroupName=group,
        ScheduleExpression="at(2026-01-01T00:01:00)",
        FlexibleTimeWindow={"Mode": "OFF"},
        ActionAfterCompletion="DELETE",
        Target=described["Target"],
    )
    assert timetable.pending(group) == 1

    clock.advance(60)
    pump.tick()
    clock.advance(600)
    pump.tick()
    assert len(alarm.calls) == 1


def test_a_pump_on_a_timetable_rebuilt_from_moto_fires_what_was_pending(
    deployment: LocalDeployment, clients: AwsClients, alarm: Recorder, clock: ManualClock
) -> None:
    group = schedule(clients, deployment, "2026-01-01T00:01:00")
    # What a restart does: a new timetable from the schedules moto restored.
    rebuilt = Timetable()
    for saved in saved_schedules():
        rebuilt.note(*saved)
    assert rebuilt.pending(group) == 1
    pump = EventPump(deployment, clients, handlers(alarm), clock, timetable=rebuilt)

    clock.advance(60)
    pump.tick()
    assert len(alarm.calls) == 1
    assert schedule_names(clients, group) == []


# ---------------------------------------------------------------- what is logged


@pytest.mark.parametrize("source", ["queue", "scheduler"])
@pytest.mark.parametrize(
    ("error", "level", "traceback"),
    [
        (contended("the function lost races; retry later"), logging.WARNING, False),
        (RuntimeError("a bug"), logging.ERROR, True),
    ],
    ids=["retryable", "unexpected"],
)
def test_a_failed_invocation_is_logged_as_what_it_is(
    source: str,
    error: Exception,
    level: int,
    traceback: bool,
    pump: EventPump,
    alarm: Recorder,
    clients: AwsClients,
    deployment: LocalDeployment,
    clock: ManualClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    alarm.error = error
    if source == "queue":
        send(clients, deployment, "one")
    else:
        schedule(clients, deployment, "2026-01-01T00:01:00")
        clock.advance(60)

    pump.tick()
    pump.tick()

    assert len(alarm.calls) == 1
    [failed] = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert failed.levelno == level
    assert (failed.exc_info is not None) == traceback
