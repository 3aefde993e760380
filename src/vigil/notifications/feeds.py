"""An agent's own events, as the MCP Events extension hands them out: its feed, and the webhook
subscriptions that read it.

A principal's feed is one record (``Feed``) and a ring of at most ``kept`` entries: event
number ``n`` lives in slot ``n % kept``, so what is kept is bounded by construction and nothing
is ever deleted. The outbox appends an event of the principal's (``EventData.readers``) only
while somebody listens: a host polled within ``POLL_LISTENING``, or a webhook subscription is
live. A poll's cursor is a position in the feed; a reader left more than ``kept`` events behind
is told it was (``truncated``) and resumes at the oldest kept. The feed remembers the ids of
its last events (``recent``), so an event told again (a retry after a crash) is appended once.

A webhook subscription lives inside the feed's record (a quota keeps them few): the URL, the
host's ``whsec_`` secret sealed, its event name and its expiry, which the host pushes back by
subscribing again with the same request before it comes.
"""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import datetime, timedelta
from typing import Any, Literal, get_args

from vigil.kit.cursor import cursor_position, encode_cursor
from vigil.kit.records import Record, Versioned
from vigil.kit.sealing import Sealed

AgentEventName = Literal[
    "delivery.waiting",
    "request.answered",
    "request.expiring",
    "request.expired",
    "instruction.posted",
    "switch.fired",
    "switch.recovered",
]
AGENT_EVENTS: tuple[AgentEventName, ...] = get_args(AgentEventName)

# A poll keeps its feed written for this long; the refresh is written at most once per half.
POLL_LISTENING = timedelta(minutes=15)
# A webhook subscription's life when the host asks for none, and the bounds of what it may ask.
DEFAULT_TTL = timedelta(hours=1)
MIN_TTL = timedelta(minutes=1)
MAX_TTL = timedelta(hours=24)
# Ids of the last events appended, against appending one twice.
RECENT = 20
# Whatever the quota says: more subscriptions, with URLs of 2,000 characters, would outgrow the
# feed's record (400 KB).
MAX_SUBSCRIPTIONS = 100


def subscription_id(namespace: str, principal: str, name: str, url: str) -> str:
    """The id of the subscription of ``principal`` to ``name`` at ``url``: the same request
    names the same subscription, so subscribing again refreshes it."""
    digest = hashlib.sha256(json.dumps([namespace, principal, name, url]).encode()).digest()
    return "sub_" + base64.b32encode(digest).decode().lower()[:26]


# The listing a feed's cursors belong to.
LISTING = "events"


def position(principal: str, seq: int) -> str:
    """The cursor just after event ``seq`` of ``principal``'s feed: bound to that feed, so that
    no other reader can page it."""
    return encode_cursor(LISTING, p=principal, a=seq)


def after(cursor: str, principal: str) -> int:
    """The place in ``principal``'s feed that ``cursor`` continues after; invalid_argument for a
    cursor of another feed, or none of ours."""
    seq: int = cursor_position(cursor, LISTING, int, p=principal)
    return seq


def delivery_key(principal: str, subscription: str, seq: int) -> str:
    """How a notification names its delivery to a subscription, beside those to channels: the
    reader, the subscription and the event's place in the reader's feed."""
    return f"{principal}/{subscription}/{seq}"


def subscription_of(key: str) -> tuple[str, str, int] | None:
    """The reader, subscription and place that ``key`` names; None for a channel's id."""
    parts = key.split("/")
    if len(parts) != 3 or not parts[2].isdigit():
        return None
    return parts[0], parts[1], int(parts[2])


class Subscription(Record):
    id: str
    namespace: str
    principal: str
    name: AgentEventName
    url: str
    sealed_secret: Sealed
    expires_at: datetime
    created_at: datetime

    def live(self, now: datetime) -> bool:
        return self.expires_at > now


class FeedEntry(Record):
    namespace: str
    principal: str
    seq: int
    event_type: str
    event: dict[str, Any]  # the event's JSON, as the outbox wrote it

    def occurrence(self, cursor: str) -> dict[str, Any]:
        """The entry as the extension shows an event: ``{eventId, name, timestamp, data,
        cursor}``, ``cursor`` the position just after it."""
        return {
            "eventId": self.event["id"],
            "name": self.event_type,
            "timestamp": self.event["occurred_at"],
            "data": self.event["data"],
            "cursor": cursor,
        }


class Feed(Versioned):
    namespace: str
    principal: str
    seq: int = 0  # the number of the last event appended; 0 before any
    kept: int  # how many of the last events are kept: the ring's size
    polled_until: datetime | None = None
    subscriptions: dict[str, Subscription] = {}
    recent: list[str] = []

    def slot(self, seq: int) -> int:
        return seq % self.kept

    def listening(self, now: datetime) -> bool:
        polled = self.polled_until is not None and self.polled_until > now
        return polled or any(s.live(now) for s in self.subscriptions.values())

    def wanting(self, event_type: str, now: datetime) -> list[Subscription]:
        return [s for s in self.subscriptions.values() if s.name == event_type and s.live(now)]

    def appended(self, event: dict[str, Any], event_type: str) -> tuple[Feed, FeedEntry]:
        """The feed with ``event`` as its next entry, and that entry."""
        seq = self.seq + 1
        entry = FeedEntry(
            namespace=self.namespace,
            principal=self.principal,
            seq=seq,
            event_type=event_type,
            event=event,
        )
        return self.changed(seq=seq, recent=[*self.recent, event["id"]][-RECENT:]), entry

    def polled(self, now: datetime) -> Feed | None:
        """The feed kept listening for a poll at ``now``; None if it listens long enough."""
        if self.polled_until is not None and self.polled_until - now > POLL_LISTENING / 2:
            return None
        return self.changed(polled_until=now + POLL_LISTENING)

    def live_subscriptions(self, now: datetime) -> dict[str, Subscription]:
        """The subscriptions not lapsed at ``now``: a lapsed one is dropped at the next change."""
        return {sid: s for sid, s in self.subscriptions.items() if s.live(now)}

    def oldest_kept(self) -> int:
        return max(1, self.seq - self.kept + 1)

    def listens_until(self) -> datetime | None:
        """When nobody listens any more, unless a poll or a subscription comes."""
        ends = [s.expires_at for s in self.subscriptions.values()]
        if self.polled_until is not None:
            ends.append(self.polled_until)
        return max(ends, default=None)
