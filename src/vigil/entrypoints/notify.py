"""The notify function: one attempt of one notification's delivery per timer, invoked by the
EventBridge Scheduler (a retry hours away) and by the notify queue's event source mapping (the
first attempts, and retries within 15 minutes). It runs apart from the alarm function, so a
receiver that answers slowly holds up no switch's expiry."""

from __future__ import annotations

import functools
from typing import Any

from vigil.alarms import kinds
from vigil.alarms.timers import TimerHandler
from vigil.entrypoints.timer_events import serve
from vigil.notifications.delivery import Notifier
from vigil.observability import get_logger, metrics

log = get_logger("vigil.notify")


@functools.cache
def notifier() -> Notifier:
    from vigil.wiring import aws_notifier

    return aws_notifier()


def handlers(worker: Notifier) -> dict[str, TimerHandler]:
    """The kinds of timer routed to this function (``vigil.alarms.kinds``) and their handlers."""
    return {
        kinds.NOTIFY: worker.on_timer,
        kinds.REMIND: worker.on_reminder,
        kinds.DEAD_LETTER: worker.on_dead_letter,
        kinds.STALE: worker.on_stale,
    }


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    metrics.cold_start("notify")
    worker = notifier()
    return serve(event, worker.clock, worker.alarms, functools.partial(handlers, worker), log)
