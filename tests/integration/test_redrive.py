"""Dead-lettered timers on SQS (moto): each goes back to the queue that serves its kind, what
is no timer stays, a dry run moves nothing, and a bounded run says what is left."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from vigil import wiring
from vigil.alarms import kinds
from vigil.alarms.redrive import QUEUES, DeadLetters
from vigil.alarms.timers import Timer

DUE = datetime(2026, 1, 1, tzinfo=UTC)


def timer(kind: str, namespace: str = "acme", key: str = "k") -> Timer:
    return Timer(kind=kind, namespace=namespace, key=key, due_at=DUE)


@pytest.fixture
def sqs(aws: None) -> Any:
    return boto3.client("sqs", region_name="us-east-1")


@pytest.fixture
def queues(sqs: Any) -> dict[str, str]:
    return {name: sqs.create_queue(QueueName=f"vigil-{name}")["QueueUrl"] for name in QUEUES}


@pytest.fixture
def dead_letters(sqs: Any, queues: dict[str, str]) -> DeadLetters:
    return DeadLetters(sqs, queues, wiring.timer_routes(), poll_seconds=0)


def put(sqs: Any, url: str, *bodies: str) -> None:
    for body in bodies:
        sqs.send_message(QueueUrl=url, MessageBody=body)


def bodies(sqs: Any, url: str) -> list[str]:
    found: list[str] = []
    while True:
        messages = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=300
        ).get("Messages", [])
        if not messages:
            return sorted(found)
        found += [m["Body"] for m in messages]


def test_each_kind_goes_back_to_the_queue_that_serves_it(
    sqs: Any, queues: dict[str, str], dead_letters: DeadLetters
) -> None:
    switch, request = timer("switch"), timer("request")
    notify, slack = timer(kinds.NOTIFY), timer(kinds.SLACK_RESPONSE)
    watched = [timer(kind) for kind in kinds.WATCH_KINDS]
    # The timer queue's own dead letters, and the alarm function's undelivered Scheduler
    # events; the notify and watch queues' dead letters, and the notify function's.
    put(sqs, queues["TimerDLQ"], switch.model_dump_json())
    put(sqs, queues["AlarmDLQ"], request.model_dump_json())
    put(sqs, queues["NotifyDLQ"], *(t.model_dump_json() for t in [notify, slack, *watched]))
    assert dead_letters.depths() == {"TimerDLQ": 1, "AlarmDLQ": 1, "NotifyDLQ": 5}

    moved = {q: dead_letters.send_back(q, limit=100) for q in ("TimerDLQ", "AlarmDLQ", "NotifyDLQ")}

    assert moved["TimerDLQ"].moved == {"TimerQueue": 1}
    assert moved["AlarmDLQ"].moved == {"TimerQueue": 1}
    assert moved["NotifyDLQ"].moved == {"NotifyQueue": 2, "WatchQueue": 3}
    assert all(o.left == 0 and not o.kept and not o.failed for o in moved.values())
    assert dead_letters.depths() == {"TimerDLQ": 0, "AlarmDLQ": 0, "NotifyDLQ": 0}
    assert bodies(sqs, queues["TimerQueue"]) == sorted(
        [switch.model_dump_json(), request.model_dump_json()]
    )
    assert bodies(sqs, queues["NotifyQueue"]) == sorted(
        [notify.model_dump_json(), slack.model_dump_json()]
    )
    assert bodies(sqs, queues["WatchQueue"]) == sorted(t.model_dump_json() for t in watched)


def test_what_is_no_timer_or_of_no_served_kind_stays_and_is_reported(
    sqs: Any, queues: dict[str, str], dead_letters: DeadLetters
) -> None:
    sweep = '{"sweep": "switches"}'  # a sweep's event the Scheduler could not deliver
    put(sqs, queues["AlarmDLQ"], sweep, "not json", timer("gone").model_dump_json())
    put(sqs, queues["AlarmDLQ"], timer("switch").model_dump_json())

    outcome = dead_letters.send_back("AlarmDLQ", limit=100)

    assert outcome.moved == {"TimerQueue": 1}
    assert sorted(k.why for k in outcome.kept) == [
        "no queue serves timers of kind 'gone'",
        "not a timer",
        "not a timer",
    ]
    # Left where they were, and visible again at once.
    assert outcome.left == 3
    assert bodies(sqs, queues["AlarmDLQ"]) == sorted(
        [sweep, "not json", timer("gone").model_dump_json()]
    )


def test_a_dry_run_moves_nothing_and_says_where_each_would_go(
    sqs: Any, queues: dict[str, str], dead_letters: DeadLetters
) -> None:
    put(sqs, queues["NotifyDLQ"], timer(kinds.NOTIFY).model_dump_json(), "garbage")
    put(sqs, queues["NotifyDLQ"], timer(kinds.STALE).model_dump_json())

    outcome = dead_letters.send_back("NotifyDLQ", limit=100, dry_run=True)

    assert outcome.moved == {"NotifyQueue": 1, "WatchQueue": 1}
    assert [k.why for k in outcome.kept] == ["not a timer"]
    assert outcome.as_json()["would_move"] == {"NotifyQueue": 1, "WatchQueue": 1}
    assert outcome.left == 3
    assert dead_letters.depths()["NotifyDLQ"] == 3
    assert bodies(sqs, queues["NotifyQueue"]) == bodies(sqs, queues["WatchQueue"]) == []
    # What a dry run looked at is visible again: a real run moves it at once.
    assert dead_letters.send_back("NotifyDLQ", limit=100).moved_count == 2


def test_a_bounded_run_says_what_is_left_and_the_next_run_takes_it(
    sqs: Any, queues: dict[str, str], dead_letters: DeadLetters
) -> None:
    put(
        sqs,
        queues["TimerDLQ"],
        *(timer("switch", key=f"k{i}").model_dump_json() for i in range(25)),
    )

    first = dead_letters.send_back("TimerDLQ", limit=10)
    assert first.moved == {"TimerQueue": 10}
    assert first.left == 15
    second = dead_letters.send_back("TimerDLQ", limit=100)
    assert second.moved == {"TimerQueue": 15}
    assert second.left == 0
    assert len(bodies(sqs, queues["TimerQueue"])) == 25


def test_a_namespaces_run_moves_its_own_timers_only(
    sqs: Any, queues: dict[str, str], dead_letters: DeadLetters
) -> None:
    put(
        sqs,
        queues["TimerDLQ"],
        timer("switch", "acme").model_dump_json(),
        timer("switch", "globex").model_dump_json(),
        "garbage",
    )

    outcome = dead_letters.send_back("TimerDLQ", limit=100, namespace="acme")

    assert outcome.moved == {"TimerQueue": 1}
    assert outcome.others == 2  # another namespace's timer, and what is no timer
    assert outcome.kept == []  # nor said to a namespace's operator
    assert outcome.left == 2
    assert bodies(sqs, queues["TimerQueue"]) == [timer("switch", "acme").model_dump_json()]


def test_a_timer_sqs_refuses_stays_in_its_dead_letter_queue(
    sqs: Any, queues: dict[str, str]
) -> None:
    class Refusing:
        """SQS, refusing every message sent to the timer queue."""

        def __getattr__(self, name: str) -> Any:
            return getattr(sqs, name)

        def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> Any:
            failed = [
                {"Id": e["Id"], "Code": "InternalError", "SenderFault": False} for e in Entries
            ]
            return {"Successful": [], "Failed": failed}

    put(sqs, queues["TimerDLQ"], timer("switch").model_dump_json())
    outcome = DeadLetters(Refusing(), queues, wiring.timer_routes(), poll_seconds=0).send_back(
        "TimerDLQ", limit=100
    )
    assert outcome.moved == {}
    assert outcome.failed == 1
    assert outcome.left == 1


@pytest.fixture
def api_env(queues: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The API function's environment, as template.yaml sets it, on the moto queues."""
    env = {
        "TABLE_NAME": "vigil",
        "TIMER_QUEUE_URL": queues["TimerQueue"],
        "NOTIFY_QUEUE_URL": queues["NotifyQueue"],
        "WATCH_QUEUE_URL": queues["WatchQueue"],
        "TIMER_DLQ_URL": queues["TimerDLQ"],
        "ALARM_DLQ_URL": queues["AlarmDLQ"],
        "NOTIFY_DLQ_URL": queues["NotifyDLQ"],
        "SCHEDULE_GROUP": "alarms",
        "SCHEDULER_ROLE_ARN": "arn:aws:iam::123456789012:role/scheduler",
        "ALARM_FUNCTION_ARN": "arn:aws:lambda:us-east-1:123456789012:function:alarm",
        "ALARM_DLQ_ARN": "arn:aws:sqs:us-east-1:123456789012:vigil-AlarmDLQ",
        "MAILBOX_QUEUE_PREFIX": "vigil-mb",
        "ATTACHMENTS_BUCKET": "attachments",
        "NOTIFY_FUNCTION_ARN": "arn:aws:lambda:us-east-1:123456789012:function:notify",
        "NOTIFY_DLQ_ARN": "arn:aws:sqs:us-east-1:123456789012:vigil-NotifyDLQ",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    wiring.settings.cache_clear()
    yield
    wiring.settings.cache_clear()


def test_every_kind_goes_back_where_the_functions_serve_it_and_the_alarms_arm_it(
    api_env: None, queues: dict[str, str]
) -> None:
    from tests.liveness_support import World
    from vigil.clock import ManualClock
    from vigil.entrypoints import alarm, notify

    world = World(ManualClock())
    worker = notify.Worker(world.store, world.clock, world.alarms, world.sender)
    routes = wiring.timer_routes()
    assert set(routes) == set(alarm.handlers(world.switch_engine)) | set(notify.handlers(worker))

    armed = wiring.alarms()
    for kind, queue in routes.items():
        assert armed.by_kind.get(kind, armed.default).queue_url == queues[queue], kind

    built = wiring.dead_letters()
    assert built is not None
    assert built.queues == queues
    assert built.routes == routes


def test_a_function_not_given_the_dead_letter_queues_has_none(
    api_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TIMER_DLQ_URL")
    wiring.settings.cache_clear()
    assert wiring.dead_letters() is None
