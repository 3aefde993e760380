"""The events of the functions that run timers (alarm and notify), served one way: the
EventBridge Scheduler invokes a function with one timer as the event, and the function's queue's
event source mapping with a batch of them, one a record, whose failures are reported one by one
(partial batch failures). Each timer goes to the handler of its kind, with a unit of work of its
own, or is armed again when it came early."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from typing import Any

from vigil.alarms.timers import Alarms, Timer, TimerHandler, deliver, hand_back_seconds
from vigil.clock import Clock
from vigil.kit.uow import Committer, UnitOfWork
from vigil.observability import log_event, log_failure


def in_a_unit_of_work(
    committer: Committer, handle: Callable[[UnitOfWork, Timer], None]
) -> TimerHandler:
    """``handle``, given each timer and a unit of work of its own: a timer is no call, so it
    carries no idempotency claim, but its steps commit the one way every change does."""
    return lambda timer: handle(UnitOfWork(committer), timer)


def timers_of(event: dict[str, Any]) -> list[Timer]:
    """The timers of a batch event that can be read (``serve`` fails the others)."""
    found = []
    for record in event.get("Records") or []:
        with contextlib.suppress(ValueError):
            found.append(Timer.model_validate_json(record.get("body", "")))
    return found


def serve(
    event: dict[str, Any],
    clock: Clock,
    alarms: Alarms,
    handlers: Callable[[], dict[str, TimerHandler]],
    log: logging.Logger,
) -> dict[str, Any]:
    """Runs the timers of ``event``, each with the handler of its kind. ``handlers`` builds them
    for each timer, so that what they import is imported with the first timer, not with the
    function's module."""

    def run(timer: Timer) -> None:
        ran = deliver(timer, clock.now(), alarms, handlers())
        log_event(log, "timer delivered", kind=timer.kind, key=timer.key, ran=ran)

    records = event.get("Records")
    if records is None:
        # A Scheduler invocation: the event is the timer. Failing raises, so Lambda's retries
        # for asynchronous invocations and then the dead-letter queue take over.
        run(Timer.model_validate(event))
        return {}
    failures = []
    for record in records:
        try:
            run(Timer.model_validate(json.loads(record["body"])))
        except Exception as error:
            # The record goes back to its queue, handed back for seconds (more after each
            # receive), and to its dead-letter queue after maxReceiveCount receives.
            log_failure(log, "timer failed", error, message_id=record.get("messageId"))
            failures.append({"itemIdentifier": record["messageId"]})
            receives = int((record.get("attributes") or {}).get("ApproximateReceiveCount", 1))
            if "receiptHandle" in record:
                alarms.hand_back(record, hand_back_seconds(receives))
    return {"batchItemFailures": failures}
