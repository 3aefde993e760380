"""The net under the timers: a periodic sweep for armed switches whose alarm never came.

A switch's expiry rides on a chain of timers (vigil.alarms). If one is lost (a message in the
timer queue's dead-letter queue, a schedule deleted by hand, a bug), nothing else would ever
look at the switch again: it would stay armed past its deadline for good. The sweep reads every
armed switch's alarm, shard by shard (vigil.switches.store.SWEEP_SHARDS), and for each alarm
due more than ``SWEEP_GRACE`` ago hands the engine the very timer the alarm would have carried.
The engine does what that timer would have done: a switch past its deadline fires (once: the
firing is a conditional change, so the lost timer turning up later finds it fired), a switch
whose deadline moved gets its next alarm, a paused one is held. A switch the sweep finds is a
timer lost, so each is logged as a warning and counted (``SwitchesSwept``).

A run fans out on the timer queue: ``start`` arms one timer of kind ``sweep`` per shard, due at
once, and the alarm function's batches take them as they take every timer, as many at once as
its concurrency allows. A sweep timer reads ``PAGES_PER_TIMER`` pages of its shard and, if the
shard goes on, arms the next timer with where it stopped: no invocation reads more than a
bounded slice, so a run covers a million switches in about the time it covers a thousand, and a
shard whose chain broke (a crash between a page and its continuation) is read again by the next
run.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import NamedTuple, TypeVar

from vigil.alarms.timers import Timer
from vigil.clock import iso
from vigil.kit.uow import UnitOfWork
from vigil.observability import get_logger, log_event, log_failure, metrics
from vigil.switches.engine import SwitchEngine
from vigil.switches.store import SWEEP_SHARDS, ArmedAlarm, SwitchPorts
from vigil.switches.timers import TIMER_KIND

log = get_logger("vigil.switches.sweep")

S = TypeVar("S", bound=SwitchPorts)

# An alarm this late is taken for lost: a timer is delivered within seconds of its due time, so
# a minute leaves a slow delivery (the alarm function throttled, a batch retried) to the timer.
SWEEP_GRACE = timedelta(seconds=60)
SWEEP_KIND = "sweep"
# A sweep timer's namespace: none is named so (a namespace's name is a slug).
SWEEP_NAMESPACE = "*"
# Pages one sweep timer reads before the next timer goes on: a thousand switches, well under a
# second of reading and parsing, so a batch of ten sweep timers fits the function's timeout.
PAGES_PER_TIMER = 5
# Index entries one query reads: two BatchGetItem requests of switches.
SWEEP_PAGE = 200


class SweepResult(NamedTuple):
    checked: int  # armed switches read
    swept: int  # of them, those whose alarm was overdue, handed to the engine
    failed: int  # of those, the ones the engine failed on (the next run tries them again)
    finished: bool  # the shard was read to its end (else the next timer goes on)


def start(engine: SwitchEngine[S]) -> int:
    """One run: a timer per shard on the timer queue, due now; returns how many."""
    now = engine.clock.now()
    for shard in range(SWEEP_SHARDS):
        engine.alarms.arm(_timer(shard, None, now), now)
    log_event(log, "sweep started", shards=SWEEP_SHARDS)
    return SWEEP_SHARDS


def on_timer(engine: SwitchEngine[S], timer: Timer) -> SweepResult:
    """A sweep timer: up to ``PAGES_PER_TIMER`` pages of its shard from where it says, each
    overdue alarm handed to the engine; if the shard goes on, the next timer from there."""
    shard, after = _where(timer)
    now = engine.clock.now()
    cutoff = now - SWEEP_GRACE
    checked = swept = failed = 0
    for _ in range(PAGES_PER_TIMER):
        page = engine.store.armed_alarms(shard, after, SWEEP_PAGE)
        for alarm in page.alarms:
            checked += 1
            if alarm.alarm_due < cutoff:
                swept += 1
                failed += not _expire(engine, alarm, now)
        after = page.after
        if after is None:
            break
    if after is not None:
        engine.alarms.arm(_timer(shard, after, now), now)
    result = SweepResult(checked, swept, failed, after is None)
    log_event(
        log,
        "sweep page done",
        logging.WARNING if swept else logging.INFO,
        shard=shard,
        **result._asdict(),
    )
    return result


def _timer(shard: int, after: str | None, now: datetime) -> Timer:
    # No namespace's: a sweep reads them all. The key says where its shard's reading goes on.
    return Timer(
        kind=SWEEP_KIND,
        namespace=SWEEP_NAMESPACE,
        key=f"{shard}/{after or ''}",
        due_at=now,
    )


def _where(timer: Timer) -> tuple[int, str | None]:
    shard, _, after = timer.key.partition("/")
    return int(shard) % SWEEP_SHARDS, after or None


def _expire(engine: SwitchEngine[S], alarm: ArmedAlarm, now: datetime) -> bool:
    """Runs the timer ``alarm`` waited for, in a unit of work of its own, as the alarm function
    would have; whether the engine got through it."""
    log_event(
        log,
        "switch swept: its alarm did not come",
        logging.WARNING,
        namespace=alarm.namespace,
        scope=alarm.scope,
        generation=alarm.generation,
        alarm_due=iso(alarm.alarm_due),
        overdue_seconds=round((now - alarm.alarm_due).total_seconds(), 3),
    )
    metrics.switch_swept()
    timer = Timer(
        kind=TIMER_KIND,
        namespace=alarm.namespace,
        key=alarm.scope,
        generation=alarm.generation,
        due_at=alarm.alarm_due,
    )
    try:
        engine.on_timer(UnitOfWork(engine.store), timer)
    except Exception as error:
        log_failure(log, "sweeping a switch failed", error, namespace=alarm.namespace)
        return False
    return True
