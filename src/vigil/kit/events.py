"""Events a capability tells people of, and the port it tells them through.

A capability with news (a switch fired, a request opened, a session gone stale, a delivery
dead-lettered) defines its event's data beside its records, as an ``EventData``, and hands it to
``Publish``, which the notifications implement: what it returns is committed with the change the
event tells of, so there is no event without its change nor a change without its event, and no
publisher imports the notifications.
"""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import datetime
from typing import NamedTuple, Protocol

from pydantic import BaseModel, ConfigDict

from vigil.kit.uow import Write

ELLIPSIS = "…"
# "evt_" and 26 base32 characters: 130 bits of a SHA-256 digest.
EVENT_ID_PATTERN = r"^evt_[a-z2-7]{26}$"


def cut(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else its first ``limit - 1`` and "…"."""
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def event_id(*parts: str) -> str:
    """The id of the event that ``parts`` identify (its namespace, its type, what it is about):
    the same parts always give the same id."""
    # As a JSON list, so that no two different lists of parts give the same text.
    digest = hashlib.sha256(json.dumps(list(parts)).encode()).digest()
    return "evt_" + base64.b32encode(digest).decode().lower()[:26]


class EventModel(BaseModel):
    # Built on first use, as the records are: a function that never notifies pays nothing.
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class EventData(EventModel):
    """What an event is about, typed by its event type."""

    def identity(self) -> tuple[str, ...]:
        """What makes this event this one (with its namespace and type): an event built again
        after a crash has the same parts, and so the same id."""
        raise NotImplementedError


class Published(NamedTuple):
    event_id: str
    # The event's notification, to commit with the change: none if no channel wants it.
    writes: list[Write]


class Publish(Protocol):
    def __call__(
        self, event_type: str, data: EventData, *, namespace: str, occurred_at: datetime
    ) -> Published:
        """Writes down the event of ``event_type`` about ``data`` for the channels that want
        it, to be committed by the caller with what it tells of."""
        ...
