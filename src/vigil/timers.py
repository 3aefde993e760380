"""Timers: the durable, precise alarm path that the alarm function serves.

A timer is a small message naming what is due and when. The EventBridge Scheduler delivers
long horizons to the minute; the timer queue delivers the last stretch to the second, an SQS
message being delayable by up to 900 s. A timer that arrives early is put back on the queue
for the remaining time; one that arrives on time or late is handed to the handler of its kind.
Handlers must be idempotent: every stage delivers at least once.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from pydantic import BaseModel, ConfigDict

MAX_QUEUE_DELAY_SECONDS = 900


class Timer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str
    namespace: str
    key: str
    due_at: datetime


class TimerQueue(Protocol):
    def send(self, timer: Timer, delay_seconds: int) -> None: ...


TimerHandler = Callable[[Timer], None]


class UnknownTimerKind(Exception):
    """No handler is registered for this kind: the message must fail and reach the DLQ."""


def delay_for(timer: Timer, now: datetime) -> int:
    """Whole seconds to wait before the timer is due, capped at what SQS can delay."""
    remaining = (timer.due_at - now).total_seconds()
    if remaining <= 0:
        return 0
    return min(MAX_QUEUE_DELAY_SECONDS, int(remaining) + (remaining % 1 > 0))


def deliver(
    timer: Timer,
    now: datetime,
    queue: TimerQueue,
    handlers: dict[str, TimerHandler],
) -> bool:
    """Runs the timer if due, else re-queues it. Returns True if the handler ran."""
    handler = handlers.get(timer.kind)
    if handler is None:
        raise UnknownTimerKind(timer.kind)
    delay = delay_for(timer, now)
    if delay > 0:
        queue.send(timer, delay)
        return False
    handler(timer)
    return True
