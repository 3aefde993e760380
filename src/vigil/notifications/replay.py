"""A failed delivery started again by an operator (``replay_delivery``): MAX_ATTEMPTS more
attempts, made by the notify function as the first ones were."""

from __future__ import annotations

from collections.abc import Callable

from vigil.alarms.timers import Alarms
from vigil.audit.records import AuditEvent
from vigil.clock import Clock, to_ms
from vigil.errors import contended
from vigil.kit.retry import R
from vigil.kit.uow import ConditionFailed, UnitOfWork
from vigil.notifications.outbox import attempt_timer
from vigil.notifications.records import DeliveryFailure
from vigil.notifications.store import ChannelPorts


def replay(
    namespace: str,
    channel_id: str,
    event_id: str,
    *,
    store: ChannelPorts,
    uow: UnitOfWork,
    clock: Clock,
    alarms: Alarms,
    audited: Callable[[int], tuple[R, AuditEvent]],
) -> R | None:
    """Starts a failed delivery again, MAX_ATTEMPTS more, the first at once (its timer armed
    first), and takes it off its channel's failures, with the audit event and result that
    ``audited`` makes of the attempt's number; None if there is no such failed delivery."""
    notification = store.get_notification(namespace, event_id)
    delivery = notification.deliveries.get(channel_id) if notification else None
    if notification is None or delivery is None or delivery.state != "failed":
        return None
    assert delivery.finished_at is not None
    now = to_ms(clock.now())
    replayed = delivery.replayed(now)
    failure = DeliveryFailure(
        namespace=namespace,
        channel_id=channel_id,
        event_id=event_id,
        event_type=notification.event_type,
        failed_at=delivery.finished_at,
        attempts=0,
        status=None,
        reason="",
    )
    attempt = delivery.attempt + 1
    result, audit = audited(attempt)
    alarms.arm(attempt_timer(namespace, event_id, channel_id, attempt, now), now)
    try:
        uow.commit(
            store.save_channel_delivery(namespace, event_id, replayed, delivery),
            store.remove_failure(failure),
            store.add_audit_event(audit),
            result=result,
        )
    except ConditionFailed:
        raise contended(
            "the delivery changed concurrently; list the failures again and retry"
        ) from None
    return result
