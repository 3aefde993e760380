"""The port a capability tells people of its news through.

A capability with news (a switch fired, a request opened, a session gone stale, a delivery
dead-lettered) defines its event's data beside its records, as an ``EventData``
(``vigil.kit.events``), and hands it to ``Publish``, which the notifications implement: what it
returns is committed with the change the event tells of, so there is no event without its
change nor a change without its event, and no publisher imports the notifications. Nothing here
defines a model, so the functions that publish load it at no cost.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple, Protocol

from vigil.kit.uow import Write

if TYPE_CHECKING:
    from vigil.kit.events import EventData


class Published(NamedTuple):
    event_id: str
    # The event's notification, to commit with the change: none if no channel wants it.
    writes: list[Write]


class Publish(Protocol):
    def __call__(
        self,
        event_type: str,
        data: EventData,
        *,
        namespace: str,
        occurred_at: datetime,
        escalated_to: str | None = None,
    ) -> Published:
        """Writes down the event of ``event_type`` about ``data`` for the channels that want
        it, to be committed by the caller with what it tells of; or, ``escalated_to`` a
        channel, the escalation of that alert (the event told before) to that channel alone,
        unless a person acknowledged it."""
        ...
