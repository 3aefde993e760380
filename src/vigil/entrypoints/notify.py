"""The notify function: one attempt of one notification's delivery (or of what a Slack
interaction is owed) per timer, invoked by the EventBridge Scheduler (a retry hours away) and by
the notify queue's event source mapping (the first attempts, and retries within 15 minutes).
It runs apart from the alarm function, so a receiver that answers slowly holds up no switch's
expiry."""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

from vigil.alarms import kinds
from vigil.alarms.timers import Alarms, TimerHandler
from vigil.clock import Clock
from vigil.entrypoints.timer_events import in_a_unit_of_work, serve
from vigil.mailboxes.dead_letters import DeadLetters
from vigil.notifications.deliverer import NotificationDeliverer
from vigil.notifications.outbox import Outbox
from vigil.notifications.sending import Sender
from vigil.notifications.slack_responses import SlackResponder
from vigil.observability import get_logger, metrics
from vigil.sessions.watch import SessionWatch
from vigil.store import Store

log = get_logger("vigil.notify")


class Worker(NamedTuple):
    """What the notify function's handlers run on, built once per sandbox."""

    store: Store
    clock: Clock
    alarms: Alarms
    sender: Sender


@functools.cache
def notifier() -> Worker:
    from vigil import wiring

    return Worker(wiring.store(), wiring.clock(), wiring.alarms(), wiring.sender(wiring.keys()))


def handlers(worker: Worker) -> dict[str, TimerHandler]:
    """The kinds of timer the notify function serves, and their handlers."""
    store, clock, alarms = worker.store, worker.clock, worker.alarms
    deliverer = NotificationDeliverer(store, clock, alarms, worker.sender)
    outbox = Outbox(store, clock, alarms)
    watch = SessionWatch(store, clock, alarms, publish=outbox, audience=outbox)
    dead_letters = DeadLetters(store, clock, publish=outbox)
    return {
        kinds.NOTIFY: in_a_unit_of_work(store, deliverer.on_attempt),
        kinds.SLACK_RESPONSE: SlackResponder(store, clock, alarms, worker.sender).on_timer,
        kinds.REMIND: in_a_unit_of_work(store, deliverer.on_reminder),
        kinds.DEAD_LETTER: in_a_unit_of_work(store, dead_letters.on_timer),
        kinds.STALE: in_a_unit_of_work(store, watch.on_timer),
    }


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    metrics.cold_start("notify")
    worker = notifier()
    return serve(event, worker.clock, worker.alarms, functools.partial(handlers, worker), log)
