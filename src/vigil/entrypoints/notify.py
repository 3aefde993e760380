"""The notify function: one attempt of one notification's delivery per timer, invoked by the
EventBridge Scheduler (a retry hours away) and by the notify queue's event source mapping (the
first attempts, and retries within 15 minutes). It runs apart from the alarm function, so a
receiver that answers slowly holds up no switch's expiry."""

from __future__ import annotations

import functools
import json
from typing import Any

from vigil.alarms.timers import Timer, TimerHandler, deliver
from vigil.notifications.delivery import Notifier
from vigil.notifications.outbox import DEAD_LETTER_KIND, REMINDER_KIND, STALE_KIND, TIMER_KIND
from vigil.observability import get_logger, log_event, metrics

log = get_logger("vigil.notify")


@functools.cache
def notifier() -> Notifier:
    from vigil.wiring import aws_notifier

    return aws_notifier()


def handle_timer(timer: Timer, worker: Notifier) -> None:
    kinds: dict[str, TimerHandler] = {
        TIMER_KIND: worker.on_timer,
        REMINDER_KIND: worker.on_reminder,
        DEAD_LETTER_KIND: worker.on_dead_letter,
        STALE_KIND: worker.on_stale,
    }
    ran = deliver(timer, worker.clock.now(), worker.alarms, kinds)
    log_event(log, "timer delivered", kind=timer.kind, key=timer.key, ran=ran)


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    metrics.cold_start("notify")
    worker = notifier()
    records = event.get("Records")
    if records is None:
        # A Scheduler invocation: failing raises, for Lambda's retries and the dead-letter queue.
        handle_timer(Timer.model_validate(event), worker)
        return {}
    failures = []
    for record in records:
        try:
            handle_timer(Timer.model_validate(json.loads(record["body"])), worker)
        except Exception:
            log.exception("timer failed", extra={"fields": {"message_id": record.get("messageId")}})
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}
