"""What an event is about, as the capability that tells of it defines it (``EventData``), and
the event ids derived from it; the port it is handed to is ``vigil.kit.publish``."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

ELLIPSIS = "…"
# "evt_" and 26 base32 characters: 130 bits of a SHA-256 digest.
EVENT_ID_PATTERN = r"^evt_[a-z2-7]{26}$"


def cut(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else its first ``limit - 1`` and "…"."""
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def cut_escaped(
    text: str,
    limit: int,
    escape: Callable[[str], str],
    measure: Callable[[str], int] = len,
) -> str:
    """``text`` escaped by ``escape``, in at most ``limit`` (as ``measure`` counts): cut with
    "…" between two characters' escapes, never inside one."""
    escaped = escape(text)
    if measure(escaped) <= limit:
        return escaped
    kept: list[str] = []
    room = limit - measure(ELLIPSIS)
    for char in text:
        piece = escape(char)
        room -= measure(piece)
        if room < 0:
            break
        kept.append(piece)
    return "".join(kept) + ELLIPSIS


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

    def readers(self) -> tuple[str, ...]:
        """The principals whose own news this is, who may read it as an event of theirs (the
        MCP Events extension), whatever the channels take: none unless the type says so."""
        return ()
