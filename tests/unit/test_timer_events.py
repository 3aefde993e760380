"""The timer functions' batch loop logs a failure as what it is: a retry the design expects
(a retryable error, e.g. a watch that lost to its session's beats) as a warning with its reason
and no traceback; anything else as an error with its traceback. Both records go back to their
queue."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from vigil.alarms.memory import MemoryAlarms
from vigil.alarms.timers import Timer
from vigil.clock import ManualClock
from vigil.entrypoints.timer_events import serve
from vigil.errors import contended


def record(message_id: str, kind: str, clock: ManualClock) -> dict[str, str]:
    due = clock.now() - timedelta(seconds=1)
    timer = Timer(kind=kind, namespace="acme", key=message_id, due_at=due)
    return {"messageId": message_id, "body": timer.model_dump_json()}


def lost_races(timer: Timer) -> None:
    raise contended("the session's watch lost to its beats; retry later")


def broken(timer: Timer) -> None:
    raise RuntimeError("a bug")


def test_a_retry_is_a_warning_with_its_reason_and_a_bug_an_error_with_its_traceback(
    clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    handlers = {"contended": lost_races, "broken": broken, "fine": lambda timer: None}
    event = {
        "Records": [
            record("m-1", "contended", clock),
            record("m-2", "broken", clock),
            record("m-3", "fine", clock),
        ]
    }
    log = logging.getLogger("tests.timer_events")

    with caplog.at_level(logging.INFO, logger=log.name):
        answer = serve(event, clock, MemoryAlarms(), lambda: handlers, log)

    assert answer == {"batchItemFailures": [{"itemIdentifier": "m-1"}, {"itemIdentifier": "m-2"}]}
    failed = {r.fields["message_id"]: r for r in caplog.records if "message_id" in r.fields}
    retried, bug = failed["m-1"], failed["m-2"]
    assert retried.levelno == logging.WARNING
    assert retried.exc_info is None
    assert retried.fields["code"] == "version_conflict"
    assert retried.fields["reason"] == "the session's watch lost to its beats; retry later"
    assert bug.levelno == logging.ERROR
    assert bug.exc_info is not None
    assert "a bug" in caplog.text


def test_a_failed_timer_comes_back_in_seconds_then_longer_each_receive(
    aws: None, clock: ManualClock
) -> None:
    import time

    import boto3
    from moto.sqs.models import sqs_backends

    from vigil.alarms.aws import AwsAlarms
    from vigil.local.lambda_events import sqs_event

    sqs = boto3.client("sqs", region_name="us-east-1")
    url = sqs.create_queue(QueueName="timers", Attributes={"VisibilityTimeout": "180"})["QueueUrl"]
    arn = "arn:aws:sqs:us-east-1:123456789012:timers"
    alarms = AwsAlarms(sqs, None, url, "group", "target", "role", "dlq")
    sqs.send_message(QueueUrl=url, MessageBody=record("m-1", "broken", clock)["body"])
    (stored,) = sqs_backends["123456789012"]["us-east-1"].queues["timers"]._messages
    handlers = {"broken": broken}

    waits = []
    for _ in range(3):
        # moto keeps the visibility on its own clock, the wall clock: it is read, not waited.
        stored.visible_at = 0.0
        received = sqs.receive_message(
            QueueUrl=url, MessageSystemAttributeNames=["All"], MaxNumberOfMessages=1
        )["Messages"]
        answer = serve(
            sqs_event(received, arn, "us-east-1"),
            clock,
            alarms,
            lambda: handlers,
            logging.getLogger("tests.timer_events"),
        )
        assert answer["batchItemFailures"] == [{"itemIdentifier": received[0]["MessageId"]}]
        waits.append(round((stored.visible_at - time.time() * 1000) / 1000))

    # Not the queue's 180 s: 2 s after the first receive, then twice as long each time.
    assert waits == [2, 4, 8]
