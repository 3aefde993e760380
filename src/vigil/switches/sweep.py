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

A run reads shards a few at a time, and takes no new page once its invocation has less than
``SWEEP_MARGIN_SECONDS`` left: a run cut short says so (``SweepsUnfinished``), and the next run
begins with other shards.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
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
# Shards read at once: each is a chain of queries and reads that mostly waits on DynamoDB.
SWEEP_WORKERS = 4
# Index entries one query reads: two BatchGetItem requests of switches.
SWEEP_PAGE = 200
# A run takes no new page, and starts no switch's expiry, with less left of its invocation: a
# page's reads and the expiries it may start (each a few writes) fit in it many times over.
SWEEP_MARGIN_SECONDS = 10.0


class SweepResult(NamedTuple):
    checked: int  # armed switches read
    swept: int  # of them, those whose alarm was overdue, handed to the engine
    failed: int  # of those, the ones the engine failed on (the next run tries them again)
    finished: bool  # every shard was read to its end


def sweep(
    engine: SwitchEngine[S],
    remaining: Callable[[], float] | None = None,
) -> SweepResult:
    """One run over every shard. ``remaining`` is the seconds left to the run (the Lambda
    context's); None: no limit."""
    now = engine.clock.now()
    cutoff = now - SWEEP_GRACE
    # Each run begins with other shards, so that runs cut short still reach them all in turn.
    first = int(now.timestamp() // 60) % SWEEP_SHARDS
    shards = [(first + i) % SWEEP_SHARDS for i in range(SWEEP_SHARDS)]

    def time_left() -> bool:
        return remaining is None or remaining() > SWEEP_MARGIN_SECONDS

    def one_shard(shard: int) -> SweepResult:
        checked = swept = failed = 0
        after: str | None = None
        while time_left():
            page = engine.store.armed_alarms(shard, after, SWEEP_PAGE)
            for alarm in page.alarms:
                checked += 1
                if alarm.alarm_due >= cutoff:
                    continue
                if not time_left():
                    return SweepResult(checked, swept, failed, False)
                swept += 1
                if not _expire(engine, alarm, now):
                    failed += 1
            if page.after is None:
                return SweepResult(checked, swept, failed, True)
            after = page.after
        return SweepResult(checked, swept, failed, False)

    with ThreadPoolExecutor(SWEEP_WORKERS, thread_name_prefix="vigil-sweep") as pool:
        results = list(pool.map(one_shard, shards))
    result = SweepResult(
        sum(r.checked for r in results),
        sum(r.swept for r in results),
        sum(r.failed for r in results),
        all(r.finished for r in results),
    )
    if not result.finished:
        metrics.sweep_unfinished()
    log_event(
        log,
        "sweep done",
        logging.INFO if result.finished and not result.swept else logging.WARNING,
        **result._asdict(),
    )
    return result


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
