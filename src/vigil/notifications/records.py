"""Channels: where a namespace's events go, and which of them.

A channel is a webhook, a Slack incoming webhook, a Microsoft Teams Workflows webhook, a Discord
webhook, a PagerDuty Events API v2 integration or an email address, with the rules that pick
the events it receives (by type, and by scope prefix). A webhook's signing secrets (Standard
Webhooks ``whsec_`` secrets) are kept sealed under the deployment's service key: the service
must be able to sign with them, so they cannot be kept as digests like the principals'
secrets, and a reader of the table learns nothing from them. A Slack, Teams or Discord
webhook's URL is a credential too (its path or query is the token), and so is a PagerDuty
routing key: each is kept sealed the same way.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal, get_args

from pydantic import Field

from vigil.clock import to_ms
from vigil.kit.principals import new_id
from vigil.kit.records import Record, Versioned
from vigil.kit.sealing import Sealed

ChannelKind = Literal["webhook", "slack", "email", "pagerduty", "teams", "discord"]
# The kinds whose receivers track an alert as an incident: told when a person acknowledges it.
ON_CALL: frozenset[str] = frozenset({"pagerduty"})
ChannelState = Literal["enabled", "disabled"]
EventType = Literal[
    "switch.fired",
    "request.opened",
    "request.expiring",
    "request.answered",
    "request.expired",
    "session.stale",
    "delivery.dead_lettered",
]
EVENT_TYPES: tuple[EventType, ...] = get_args(EventType)
# What follows an event to wherever that event went, chosen by no rule of its own: whoever was
# told a request opened (a Slack message, an email with its buttons) is told it was withdrawn,
# and whoever is told of a switch's deaths is told it recovered, or flaps, or settled.
FollowingType = Literal[
    "request.withdrawn",
    "switch.recovered",
    "switch.flapping",
    "switch.settled",
    "switch.ran_short",
]
FOLLOWS: dict[str, EventType] = {
    "request.withdrawn": "request.opened",
    "switch.recovered": "switch.fired",
    # A flapping switch is told once, where its deaths would be, and once more as it settles.
    "switch.flapping": "switch.fired",
    "switch.settled": "switch.fired",
    # A run that finished too soon is told where its switch's deaths would be.
    "switch.ran_short": "switch.fired",
}
# What only the agent it concerns reads, as its own event: no channel's rule chooses it.
AgentOnlyType = Literal["delivery.waiting", "instruction.posted"]
# What a notification may be of: the events channels' rules choose, the test an operator sends a
# channel, a person's acknowledgement of an alert (sent to the on-call services the alert went
# to, which track it too), and the events only their agents read.
NoticeType = (
    EventType | FollowingType | Literal["channel.test", "alert.acknowledged"] | AgentOnlyType
)

# A namespace keeps at most this many channels, each at most this many rules.
MAX_CHANNELS = 50
MAX_RULES = 20
# After a rotation, the replaced signing secret still signs (a second signature) this long, so
# that receivers can move to the new one without refusing a delivery.
ROTATION_OVERLAP = timedelta(hours=24)
# At most this many secrets sign at once: rotations in quick succession end the overlap of the
# oldest replaced secret early rather than grow the record and the signature header.
MAX_SIGNING_SECRETS = 3


# The events that are alerts: a person is reminded of them until one acknowledges them.
ALERTS: frozenset[str] = frozenset({"switch.fired", "switch.flapping", "request.opened"})
# An alert is repeated at most this many times on one channel.
MAX_REPEATS = 100


class Rule(Record):
    """The events of ``events`` whose scope begins with ``scope_prefix`` ("" takes every
    event, those without a scope included). An alert (ALERTS) it takes may be repeated every
    ``repeat_every`` until acknowledged, and escalated to channel ``escalate_to`` once after
    ``escalate_after`` unacknowledged."""

    events: list[EventType]
    scope_prefix: str = ""
    repeat_every: timedelta | None = None
    escalate_after: timedelta | None = None
    escalate_to: str | None = None

    def matches(self, event_type: str, scope: str | None) -> bool:
        if FOLLOWS.get(event_type, event_type) not in self.events:
            return False
        if self.scope_prefix == "":
            return True
        return scope is not None and scope.startswith(self.scope_prefix)


class SigningSecret(Record):
    """A webhook signing secret, sealed; ``until`` is when a replaced one stops signing."""

    sealed: Sealed
    created_at: datetime
    until: datetime | None = None


class Channel(Versioned):
    namespace: str
    id: str
    name: str
    kind: ChannelKind
    # The webhook's URL, the email address, or PagerDuty's host for the account's region. A
    # Slack, Teams or Discord URL is sealed, as a credential (its path or query is the token),
    # and shown only as its host; so is a PagerDuty routing key, kept here too.
    target: str
    sealed_target: Sealed | None = None
    rules: list[Rule]
    state: ChannelState = "enabled"
    disabled_reason: str | None = None
    secrets: list[SigningSecret] = Field(default_factory=list)
    created_by: str
    created_at: datetime
    updated_at: datetime

    @classmethod
    def created(
        cls,
        namespace: str,
        name: str,
        kind: ChannelKind,
        target: str,
        rules: list[Rule],
        by: str,
        now: datetime,
        *,
        sealed_target: Sealed | None = None,
        secret: Sealed | None = None,
        channel_id: str | None = None,
    ) -> Channel:
        at = to_ms(now)
        return cls(
            version=1,
            namespace=namespace,
            id=channel_id or new_id("chn"),
            name=name,
            kind=kind,
            target=target,
            sealed_target=sealed_target,
            rules=rules,
            secrets=[SigningSecret(sealed=secret, created_at=at)] if secret else [],
            created_by=by,
            created_at=at,
            updated_at=at,
        )

    @property
    def on_call(self) -> bool:
        return self.kind in ON_CALL

    def wants(self, event_type: str, scope: str | None) -> bool:
        return self.state == "enabled" and any(r.matches(event_type, scope) for r in self.rules)

    def follow_up(self, event_type: str, scope: str | None) -> Rule | None:
        """The first of its rules that takes this alert and repeats or escalates it."""
        if event_type not in ALERTS:
            return None
        for rule in self.rules:
            if rule.matches(event_type, scope) and (rule.repeat_every or rule.escalate_after):
                return rule
        return None

    def signing(self, now: datetime) -> list[SigningSecret]:
        """The secrets that sign now: the newest, and a replaced one within its overlap."""
        return [s for s in self.secrets if s.until is None or s.until > now]

    def rotated(self, secret: Sealed, now: datetime) -> Channel:
        """A new secret signs from now on; those that signed go on for ROTATION_OVERLAP (or
        what was left of theirs), the newest MAX_SIGNING_SECRETS - 1 of them."""
        at = to_ms(now)
        kept = [
            s.model_copy(update={"until": s.until or at + ROTATION_OVERLAP})
            for s in self.signing(now)[: MAX_SIGNING_SECRETS - 1]
        ]
        return self.changed(
            secrets=[SigningSecret(sealed=secret, created_at=at), *kept], updated_at=at
        )

    def disabled(self, reason: str, now: datetime) -> Channel:
        return self.changed(state="disabled", disabled_reason=reason, updated_at=to_ms(now))

    def enabled(self, now: datetime) -> Channel:
        return self.changed(state="enabled", disabled_reason=None, updated_at=to_ms(now))


def seal_context(namespace: str, channel_id: str, what: str) -> str:
    """What a channel's sealed parts are bound to: they open only for this channel."""
    return f"vigil:channel:{namespace}:{channel_id}:{what}"


# -- notifications: an event on its way to the channels it was routed to -------------------------

ChannelDeliveryState = Literal["pending", "sending", "delivered", "failed"]
AttemptOutcome = Literal["delivered", "retry", "gone", "rejected", "interrupted"]

# Attempts of one delivery, the first at once and each next one after a backoff that grows
# BACKOFF_FACTOR-fold from FIRST_BACKOFF up to MAX_BACKOFF, each stretched or shrunk by up to
# JITTER: about 30 s, 2 min, 8 min, 32 min, 2 h 8 min, 4 h, 4 h; the eighth attempt is made some
# 11 h after the first. A receiver's Retry-After is honoured when it asks for longer.
MAX_ATTEMPTS = 8
FIRST_BACKOFF = timedelta(seconds=30)
BACKOFF_FACTOR = 4
MAX_BACKOFF = timedelta(hours=4)
JITTER = 0.25
# An attempt claimed this long ago and still without an outcome stopped before recording one
# (its function crashed or timed out): it counts as failed, and the next is scheduled. Longer
# than the notify function's timeout (60 s), so no run is still making it.
ATTEMPT_LIMIT = timedelta(seconds=90)
# A notification, and a channel's record of a failed delivery, are kept this long.
NOTIFICATION_RETENTION = timedelta(days=30)
# How many of a delivery's latest attempts its record keeps.
KEPT_ATTEMPTS = 10


def backoff(attempt: int, jitter: float) -> timedelta:
    """How long after attempt ``attempt`` (1 for the first) the next one is made, for a
    ``jitter`` between -1 and 1 (derived from the delivery, so a retry computes the same)."""
    base: timedelta = min(FIRST_BACKOFF * BACKOFF_FACTOR ** (attempt - 1), MAX_BACKOFF)
    return base * (1 + JITTER * jitter)


class Attempt(Record):
    number: int
    at: datetime
    outcome: AttemptOutcome
    status: int | None = None
    reason: str


class ChannelDelivery(Record):
    """One notification's way to one channel. ``attempt`` counts the attempts started; each is
    claimed by a conditional write from the number before it, so two runs never make the same
    attempt, and an outcome is recorded only by the run that claimed it."""

    channel_id: str
    state: ChannelDeliveryState = "pending"
    attempt: int = 0
    # Attempts made before the latest replay: each replay gives MAX_ATTEMPTS more.
    replayed_after: int = 0
    next_at: datetime
    claimed_at: datetime | None = None
    finished_at: datetime | None = None
    attempts: list[Attempt] = Field(default_factory=list)

    def due(self, attempt: int) -> bool:
        """Whether attempt number ``attempt`` is the one this delivery waits for."""
        return self.state == "pending" and self.attempt == attempt - 1

    def interrupted(self, attempt: int, now: datetime) -> bool:
        """Whether attempt ``attempt`` was claimed and its run stopped before its outcome."""
        return (
            self.state == "sending"
            and self.attempt == attempt
            and self.claimed_at is not None
            and self.claimed_at + ATTEMPT_LIMIT <= now
        )

    def claimed(self, now: datetime) -> ChannelDelivery:
        return self.model_copy(
            update={"state": "sending", "attempt": self.attempt + 1, "claimed_at": to_ms(now)}
        )

    @property
    def exhausted(self) -> bool:
        return self.attempt - self.replayed_after >= MAX_ATTEMPTS

    def concluded(
        self,
        outcome: AttemptOutcome,
        status: int | None,
        reason: str,
        now: datetime,
        retry_at: datetime | None,
    ) -> ChannelDelivery:
        """After the claimed attempt came to ``outcome``: delivered, pending again until
        ``retry_at``, or failed (when ``retry_at`` is None and it was not delivered)."""
        at = to_ms(now)
        record = Attempt(number=self.attempt, at=at, outcome=outcome, status=status, reason=reason)
        kept = [*self.attempts, record][-KEPT_ATTEMPTS:]
        if outcome == "delivered":
            return self.model_copy(
                update={"state": "delivered", "finished_at": at, "attempts": kept}
            )
        if retry_at is not None:
            return self.model_copy(
                update={"state": "pending", "next_at": to_ms(retry_at), "attempts": kept}
            )
        return self.model_copy(update={"state": "failed", "finished_at": at, "attempts": kept})

    def replayed(self, now: datetime) -> ChannelDelivery:
        """A failed delivery started again: MAX_ATTEMPTS more, the first at once."""
        return self.model_copy(
            update={
                "state": "pending",
                "replayed_after": self.attempt,
                "next_at": to_ms(now),
                "claimed_at": None,
                "finished_at": None,
            }
        )


class Acknowledgement(Record):
    by: str
    at: datetime


class Notification(Record):
    """An event, written in the same commit as what it tells of, with its deliveries to the
    channels its rules routed it to when it was written. An alert's acknowledgement is kept on
    it (on the first alert's, for a repeat)."""

    namespace: str
    event_id: str
    event_type: NoticeType
    event: dict[str, Any]  # the event's JSON, as sent
    deliveries: dict[str, ChannelDelivery]
    created_at: datetime
    acknowledged: Acknowledgement | None = None

    @property
    def alert_id(self) -> str:
        """The id of the alert this notification is, or repeats."""
        reminder = self.event.get("reminder") or {}
        return str(reminder.get("of") or self.event_id)


class DeliveryFailure(Record):
    """A channel's record of a delivery that gave up: what an operator lists and replays."""

    namespace: str
    channel_id: str
    event_id: str
    event_type: NoticeType
    failed_at: datetime
    attempts: int
    status: int | None
    reason: str

    @property
    def position(self) -> str:
        """Where it sorts among the channel's failures: by when it failed, then by event."""
        return f"{int(self.failed_at.timestamp() * 1000):015d}#{self.event_id}"


# -- people's accounts on a channel's far side, and the answers owed to Slack --------------------

AccountSurface = Literal["slack", "email"]
# How long Slack lets an interaction's response_url be used (and at most five times).
RESPONSE_URL_LIFETIME = timedelta(minutes=30)


class AccountLink(Record):
    """A person's account on a surface (a Slack user, ``<team id>/<user id>``, or an email
    address), linked once from the console: what a click or a link there decides as."""

    namespace: str
    surface: AccountSurface
    account: str
    principal_id: str
    linked_at: datetime


class SlackResponse(Record):
    """What is owed to one Slack interaction, sent through its ``response_url`` after the
    interaction was acknowledged: the request's message redrawn from its stored state
    (``update``), and a note only the clicker sees. Its id is derived from the interaction's
    signature, so a replayed interaction owes nothing more."""

    namespace: str
    id: str
    request_id: str | None
    response_url: Sealed
    update: bool
    note: str | None
    created_at: datetime

    def usable(self, now: datetime) -> bool:
        return now < self.created_at + RESPONSE_URL_LIFETIME


def response_context(namespace: str, response_id: str) -> str:
    """What a sealed response_url is bound to: it opens only for its own response."""
    return f"vigil:slack-response:{namespace}:{response_id}"
