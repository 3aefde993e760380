"""Timers: the durable, precise alarm path that the alarm function serves.

A timer is a small message naming what is due and when. Alarms are armed in two stages: the
EventBridge Scheduler holds long horizons but fires only to the minute; the timer queue holds
the last stretch, an SQS message being delayable by up to 900 s, and delivers to the second.
A timer that arrives early is armed again for the time that remains; one that arrives on time
or late is handed to the handler of its kind. Every stage delivers at least once, so handlers
must be idempotent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

MAX_QUEUE_DELAY_SECONDS = 900
# A Scheduler alarm is set this long before the due time, so that its minute precision and
# its delivery delays leave the queue stage ample time to land on the second.
SCHEDULER_LEAD = timedelta(minutes=10)


# A timer whose handler failed goes back to its queue for this many seconds after its first
# receive, twice as long after each further one, up to the cap: it is tried again within
# seconds, not after the queue's visibility timeout of minutes, and reaches the dead-letter
# queue only after maxReceiveCount receives (template.yaml), some minutes later.
HAND_BACK_FIRST_SECONDS = 2
HAND_BACK_CAP_SECONDS = 60


def hand_back_seconds(receives: int) -> int:
    """How long a timer that failed at its ``receives``-th receive waits for the next."""
    return int(min(HAND_BACK_CAP_SECONDS, HAND_BACK_FIRST_SECONDS * 2 ** max(0, receives - 1)))


class Timer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str
    namespace: str
    key: str
    generation: int = 0
    due_at: datetime
    # How many times the timer came before what it is about was visible and was put back to
    # wait for it (a notification's first attempt, armed before the notification's commit).
    waits: int = 0


class Alarms(Protocol):
    def arm(self, timer: Timer, now: datetime) -> None:
        """Makes ``timer`` arrive at (or, by at most a poll interval, after) its due time."""

    def hand_back(self, record: Mapping[str, Any], seconds: int) -> None:
        """Makes the timer queue's ``record``, which its handler failed, come back in
        ``seconds``; at worst (the receipt is stale) it comes back when its queue's visibility
        timeout ends, as it would have anyway."""


# What a handler returns is not looked at.
TimerHandler = Callable[[Timer], object]


class UnknownTimerKind(Exception):
    """No handler is registered for this kind: the message must fail and reach the DLQ."""


def delay_for(timer: Timer, now: datetime) -> int:
    """Whole seconds to wait before the timer is due, capped at what SQS can delay."""
    remaining = (timer.due_at - now).total_seconds()
    if remaining <= 0:
        return 0
    return min(MAX_QUEUE_DELAY_SECONDS, int(remaining) + (remaining % 1 > 0))


def needs_scheduler(timer: Timer, now: datetime) -> bool:
    return (timer.due_at - now).total_seconds() > MAX_QUEUE_DELAY_SECONDS


def deliver(
    timer: Timer,
    now: datetime,
    alarms: Alarms,
    handlers: dict[str, TimerHandler],
) -> bool:
    """Runs the timer if due, else arms it again. Returns True if the handler ran."""
    handler = handlers.get(timer.kind)
    if handler is None:
        raise UnknownTimerKind(timer.kind)
    if timer.due_at > now:
        alarms.arm(timer, now)
        return False
    handler(timer)
    return True
