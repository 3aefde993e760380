"""The alarm function: invoked by the EventBridge Scheduler (one timer per event) and by the
timer queue's event source mapping (batches, with partial batch failures)."""

from __future__ import annotations

import functools
import json
from typing import Any

from vigil.alarms.timers import Timer, TimerHandler, deliver
from vigil.observability import get_logger, log_event, metrics
from vigil.switches.service import TIMER_KIND, Liveness

log = get_logger("vigil.alarm")


@functools.cache
def liveness() -> Liveness:
    from vigil.wiring import aws_liveness

    return aws_liveness()


def handlers(machinery: Liveness) -> dict[str, TimerHandler]:
    """Timer kinds and their handlers; each capability that arms timers adds its own. The
    requests' are imported with the first timer, not with the handler module."""
    from vigil.kit.uow import UnitOfWork
    from vigil.notifications.outbox import Outbox
    from vigil.requests.service import TIMER_KIND as REQUEST_TIMER_KIND
    from vigil.requests.service import Requests

    requests = Requests(
        machinery.store,
        queues=machinery.queues,
        clock=machinery.clock,
        alarms=machinery.alarms,
        publish=Outbox(machinery.store, machinery.clock, machinery.alarms),
        quotas=machinery.quotas,
    )

    def on_request_timer(timer: Timer) -> None:
        requests.on_timer(UnitOfWork(machinery.store), timer)

    return {TIMER_KIND: machinery.on_timer, REQUEST_TIMER_KIND: on_request_timer}


def handle_timer(timer: Timer, machinery: Liveness) -> None:
    ran = deliver(timer, machinery.clock.now(), machinery.alarms, handlers(machinery))
    log_event(log, "timer delivered", kind=timer.kind, key=timer.key, ran=ran)


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    metrics.cold_start("alarm")
    machinery = liveness()
    records = event.get("Records")
    if records is None:
        # A Scheduler invocation: the event is the timer. Failing raises, so Lambda's retries
        # for asynchronous invocations and then the dead-letter queue take over.
        handle_timer(Timer.model_validate(event), machinery)
        return {}
    failures = []
    for record in records:
        try:
            handle_timer(Timer.model_validate(json.loads(record["body"])), machinery)
        except Exception:
            log.exception("timer failed", extra={"fields": {"message_id": record.get("messageId")}})
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}
