"""The alarm function: invoked by the EventBridge Scheduler (one timer per event) and by the
timer queue's event source mapping (batches, with partial batch failures)."""

from __future__ import annotations

import functools
import json
from typing import Any

from vigil.observability import get_logger, log_event
from vigil.timers import Timer, TimerHandler, TimerQueue, deliver

log = get_logger("vigil.alarm")

# Timer kinds and their handlers; each tool family that arms timers registers its own.
HANDLERS: dict[str, TimerHandler] = {}


@functools.cache
def _runtime() -> tuple[TimerQueue, Any]:
    from vigil.adapters.sqs import SqsTimerQueue
    from vigil.clock import SystemClock
    from vigil.wiring import aws_client, settings

    return SqsTimerQueue(aws_client("sqs"), settings().timer_queue_url), SystemClock()


def handle_timer(timer: Timer, queue: TimerQueue, now: Any) -> None:
    ran = deliver(timer, now, queue, HANDLERS)
    log_event(log, "timer delivered", kind=timer.kind, key=timer.key, ran=ran)


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    queue, clock = _runtime()
    records = event.get("Records")
    if records is None:
        # A Scheduler invocation: the event is the timer. Failing raises, so the Scheduler's
        # retry policy and dead-letter queue take over.
        handle_timer(Timer.model_validate(event), queue, clock.now())
        return {}
    failures = []
    for record in records:
        try:
            handle_timer(Timer.model_validate(json.loads(record["body"])), queue, clock.now())
        except Exception:
            log.exception("timer failed", extra={"fields": {"message_id": record.get("messageId")}})
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}
