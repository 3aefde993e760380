"""The alarm function: invoked by the EventBridge Scheduler (one timer per event), by the
timer queue's event source mapping (batches, with partial batch failures), and by the sweep's
recurring schedule (vigil.entrypoints.sweep)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from vigil.alarms.timers import TimerHandler
from vigil.entrypoints import sweep
from vigil.entrypoints.timer_events import in_a_unit_of_work, serve, timers_of
from vigil.errors import VigilError
from vigil.kit.batch import one_batch
from vigil.observability import get_logger, log_failure, metrics
from vigil.switches.engine import SwitchEngine
from vigil.switches.timers import TIMER_KIND

if TYPE_CHECKING:
    from vigil.store import Store

log = get_logger("vigil.alarm")


@functools.cache
def switch_engine() -> SwitchEngine[Store]:
    from vigil.wiring import aws_switch_engine

    return aws_switch_engine()


def handlers(engine: SwitchEngine[Store]) -> dict[str, TimerHandler]:
    """Timer kinds and their handlers; each capability that arms timers adds its own. The
    requests' are imported with the first timer, not with the handler module."""
    from vigil.requests.service import TIMER_KIND as REQUEST_TIMER_KIND
    from vigil.requests.service import Requests
    from vigil.switches import sweep as sweeping

    requests = Requests(
        engine.store,
        queues=engine.queues,
        clock=engine.clock,
        alarms=engine.alarms,
        publish=engine.publish,
        audit=engine.store,
        quotas=engine.quotas,
    )

    return {
        TIMER_KIND: in_a_unit_of_work(engine.store, engine.on_timer),
        REQUEST_TIMER_KIND: in_a_unit_of_work(engine.store, requests.on_timer),
        # Each overdue switch a sweep timer finds runs in a unit of work of its own.
        sweeping.SWEEP_KIND: functools.partial(sweeping.on_timer, engine),
    }


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    metrics.cold_start("alarm")
    engine = switch_engine()
    if sweep.is_sweep(event):
        return sweep.run(engine)
    # The namespace-wide reads of a batch's fires (pauses, channels) are made once a batch,
    # and its switches are read together.
    with one_batch():
        try:
            engine.read_ahead(timers_of(event))
        except VigilError as error:
            # Each timer reads its own switch then.
            log_failure(log, "reading a batch's switches ahead failed", error)
        return serve(event, engine.clock, engine.alarms, functools.partial(handlers, engine), log)
