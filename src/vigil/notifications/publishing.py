"""The ``Publish`` port as the functions and the calls are given it: the notifications'
outbox, loaded with the first event told, so that a call or a timer with nothing to tell (a
beat, most alarms) never loads the events' models."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vigil.alarms.timers import Alarms
    from vigil.clock import Clock
    from vigil.kit.events import EventData
    from vigil.kit.publish import Publish, Published
    from vigil.notifications.store import OutboxPorts


def outbox_on_first_event(store: OutboxPorts, clock: Clock, alarms: Alarms) -> Publish:
    """The outbox on ``store``, built when an event is first told."""

    def publish(
        event_type: str,
        data: EventData,
        *,
        namespace: str,
        occurred_at: datetime,
        escalated_to: str | None = None,
    ) -> Published:
        from vigil.notifications.outbox import Outbox

        return Outbox(store, clock, alarms)(
            event_type,
            data,
            namespace=namespace,
            occurred_at=occurred_at,
            escalated_to=escalated_to,
        )

    return publish
