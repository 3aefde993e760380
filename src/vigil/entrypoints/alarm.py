"""The alarm function: invoked by the EventBridge Scheduler (one timer per event) and by the
timer queue's event source mapping (batches, with partial batch failures)."""

from __future__ import annotations

import functools
from typing import Any

from vigil.alarms.timers import TimerHandler
from vigil.entrypoints.timer_events import serve
from vigil.observability import get_logger, metrics
from vigil.switches.service import TIMER_KIND, Liveness

log = get_logger("vigil.alarm")


@functools.cache
def liveness() -> Liveness:
    from vigil.wiring import aws_liveness

    return aws_liveness()


def handlers(machinery: Liveness) -> dict[str, TimerHandler]:
    """Timer kinds and their handlers; each capability that arms timers adds its own. The
    requests' are imported with the first timer, not with the handler module."""
    from vigil.requests.service import TIMER_KIND as REQUEST_TIMER_KIND
    from vigil.requests.service import Requests

    requests = Requests(
        machinery.store,
        machinery.queues,
        machinery.clock,
        machinery.alarms,
        quotas=machinery.quotas,
    )
    return {TIMER_KIND: machinery.on_timer, REQUEST_TIMER_KIND: requests.on_timer}


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    metrics.cold_start("alarm")
    machinery = liveness()
    return serve(
        event, machinery.clock, machinery.alarms, functools.partial(handlers, machinery), log
    )
