"""An agent's own events, read by poll or subscribed to by webhook (the MCP Events extension):
the use cases behind ``events/list``, ``events/poll``, ``events/subscribe`` and
``events/unsubscribe``.

Every change is one conditional write of the caller's feed, at the version read, tried again
on a lost race. A caller reads and subscribes to its own feed only: the principal comes from
the credential, and a cursor names the feed it belongs to, so no argument reaches another's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from vigil.clock import Clock, to_ms
from vigil.errors import invalid
from vigil.kit.cursor import bad_cursor
from vigil.kit.keys import Keys
from vigil.kit.retry import retry_on_conflict
from vigil.mailboxes.events import DeliveryWaiting
from vigil.notifications.channel_secrets import seal_subscription_secret
from vigil.notifications.feeds import (
    DEFAULT_TTL,
    MAX_SUBSCRIPTIONS,
    MAX_TTL,
    MIN_TTL,
    AgentEventName,
    Feed,
    Subscription,
    after,
    position,
    subscription_id,
)
from vigil.notifications.store import FeedPorts
from vigil.notifications.webhooks import is_secret
from vigil.quotas.records import Quotas
from vigil.requests.events import RequestData
from vigil.sessions.events import InstructionPosted
from vigil.switches.events import SwitchFired, SwitchRecovered

# At most this many events read by one poll (one BatchGetItem).
MAX_PAGE = 100
# When a poll found nothing more, how long the host is asked to wait before the next.
NEXT_POLL = timedelta(seconds=5)
MAX_URL = 2000
MAX_CURSOR = 500

EVENT_TYPES: dict[AgentEventName, tuple[str, type[BaseModel]]] = {
    "delivery.waiting": (
        "An envelope waits in one of your mailboxes: receive it.",
        DeliveryWaiting,
    ),
    "request.answered": ("A request you asked was decided.", RequestData),
    "request.expiring": ("A request you asked expires soon, undecided.", RequestData),
    "request.expired": ("A request you asked expired undecided.", RequestData),
    "instruction.posted": (
        "An instruction was posted to your session: session_heartbeat hands it out.",
        InstructionPosted,
    ),
    "switch.fired": ("A switch whose alerts go to your mailbox fired.", SwitchFired),
    "switch.recovered": ("A switch whose death you were alerted of beats again.", SwitchRecovered),
}


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class NoArguments(Params):
    """The events of an agent take no arguments: whose they are is the credential's."""


class Poll(Params):
    name: AgentEventName
    arguments: NoArguments = NoArguments()
    cursor: str | None = Field(default=None, max_length=MAX_CURSOR)
    maxEvents: int = Field(default=MAX_PAGE, ge=1, le=MAX_PAGE)
    maxAgeMs: int | None = Field(default=None, ge=1)


class Webhook(Params):
    mode: Literal["webhook"]
    url: str = Field(max_length=MAX_URL, pattern=r"^https?://[^\s]+$")
    secret: str | None = Field(default=None, max_length=200)


class Subscribe(Params):
    name: AgentEventName
    arguments: NoArguments = NoArguments()
    delivery: Webhook
    ttlMs: int | None = Field(
        default=None,
        ge=int(MIN_TTL.total_seconds() * 1000),
        le=int(MAX_TTL.total_seconds() * 1000),
    )


class Unsubscribe(Params):
    name: AgentEventName
    arguments: NoArguments = NoArguments()
    delivery: Webhook


def catalog() -> list[dict[str, Any]]:
    """The event types a caller may subscribe to, as ``events/list`` shows them."""
    return [
        {
            "name": name,
            "description": description,
            "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
            "payloadSchema": data.model_json_schema(mode="serialization"),
            "delivery": ["poll", "webhook"],
        }
        for name, (description, data) in EVENT_TYPES.items()
    ]


@dataclass
class Subscribing:
    """Polling and subscribing to the caller's own events."""

    store: FeedPorts
    clock: Clock
    keys: Keys
    quotas: Quotas

    def poll(self, namespace: str, principal: str, asked: Poll) -> dict[str, Any]:
        """The caller's events of ``asked.name`` after its cursor; with no cursor, none and the
        cursor of now. Each poll keeps the feed written for a while (``POLL_LISTENING``)."""
        now = to_ms(self.clock.now())
        feed = self._listening(namespace, principal, now)
        if asked.cursor is None:
            return _page([], position(principal, feed.seq), more=False, truncated=False)
        last_read = after(asked.cursor, principal)
        if last_read > feed.seq:
            raise bad_cursor()
        first = max(last_read + 1, feed.oldest_kept())
        truncated = first > last_read + 1
        last = min(feed.seq, first + asked.maxEvents - 1)
        seqs = list(range(first, last + 1))
        # A slot written over since the feed was read holds a newer event, which is past this
        # page's cursor: it is left for the next poll, and this one is told it lost its own.
        found = self.store.get_feed_entries(feed, seqs)
        entries = {e.seq: e for e in found if first <= e.seq <= last}
        truncated = truncated or len(entries) < len(seqs)
        oldest = None if asked.maxAgeMs is None else now - timedelta(milliseconds=asked.maxAgeMs)
        events = [
            entry.occurrence(position(principal, seq))
            for seq, entry in entries.items()
            if entry.event_type == asked.name
            and (oldest is None or datetime.fromisoformat(entry.event["occurred_at"]) >= oldest)
        ]
        return _page(events, position(principal, last), more=last < feed.seq, truncated=truncated)

    def _listening(self, namespace: str, principal: str, now: datetime) -> Feed:
        """The caller's feed, made or kept listening for its polls."""

        def attempt() -> Feed:
            feed = self.store.get_feed(namespace, principal) or self._new(namespace, principal)
            polled = feed.polled(now)
            if polled is None:
                return feed
            self.store.commit([self.store.save_feed(polled)])
            return polled

        return retry_on_conflict(attempt, "the caller's events")

    def _new(self, namespace: str, principal: str) -> Feed:
        return Feed(
            namespace=namespace, principal=principal, kept=self.quotas.events_kept, version=0
        )

    def subscribe(self, namespace: str, principal: str, asked: Subscribe) -> dict[str, Any]:
        """Subscribes the caller's webhook to its events of ``asked.name``, or refreshes the
        subscription the same request made: a new expiry, and the secret it gives now."""
        secret = asked.delivery.secret
        if secret is None or not is_secret(secret):
            raise invalid("delivery.secret must be whsec_ and the base64 of a key")
        now = to_ms(self.clock.now())
        ttl = DEFAULT_TTL if asked.ttlMs is None else timedelta(milliseconds=asked.ttlMs)
        sid = subscription_id(namespace, principal, asked.name, asked.delivery.url)
        subscription = Subscription(
            id=sid,
            namespace=namespace,
            principal=principal,
            name=asked.name,
            url=asked.delivery.url,
            sealed_secret=seal_subscription_secret(self.keys, namespace, principal, sid, secret),
            expires_at=now + ttl,
            created_at=now,
        )

        quotas = replace(
            self.quotas, subscriptions=min(self.quotas.subscriptions, MAX_SUBSCRIPTIONS)
        )

        def attempt() -> None:
            feed = self.store.get_feed(namespace, principal) or self._new(namespace, principal)
            live = feed.live_subscriptions(now)
            if sid not in live and len(live) >= quotas.subscriptions:
                raise quotas.exceeded("subscriptions")
            created = live[sid].created_at if sid in live else now
            live[sid] = subscription.model_copy(update={"created_at": created})
            self.store.commit([self.store.save_feed(feed.changed(subscriptions=live))])

        retry_on_conflict(attempt, "the caller's events")
        return {"id": sid, "expiresAt": subscription.expires_at.isoformat()}

    def unsubscribe(self, namespace: str, principal: str, asked: Unsubscribe) -> None:
        """Withdraws the subscription the same request made; none is no error."""
        now = to_ms(self.clock.now())
        sid = subscription_id(namespace, principal, asked.name, asked.delivery.url)

        def attempt() -> None:
            feed = self.store.get_feed(namespace, principal)
            if feed is None or sid not in feed.subscriptions:
                return
            live = feed.live_subscriptions(now)
            live.pop(sid, None)
            self.store.commit([self.store.save_feed(feed.changed(subscriptions=live))])

        retry_on_conflict(attempt, "the caller's events")


def _page(
    events: list[dict[str, Any]], cursor: str, *, more: bool, truncated: bool
) -> dict[str, Any]:
    return {
        "events": events,
        "cursor": cursor,
        "hasMore": more,
        "truncated": truncated,
        "nextPollMs": 0 if more else int(NEXT_POLL.total_seconds() * 1000),
    }
