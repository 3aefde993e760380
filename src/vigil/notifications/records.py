"""Channels: where a namespace's events go, and which of them.

A channel is a webhook, a Slack incoming webhook or an email address, with the rules that pick
the events it receives (by type, and by scope prefix). A webhook's signing secrets (Standard
Webhooks ``whsec_`` secrets) are kept sealed under the deployment's service key: the service
must be able to sign with them, so they cannot be kept as digests like the principals'
secrets, and a reader of the table learns nothing from them. A Slack webhook's URL is a
credential too (its path is the token), and is kept sealed the same way.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal, get_args

from pydantic import Field

from vigil.clock import to_ms
from vigil.identity.records import new_id
from vigil.kit.records import Record, Versioned
from vigil.kit.sealing import Sealed

ChannelKind = Literal["webhook", "slack", "email"]
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

# A namespace keeps at most this many channels, each at most this many rules.
MAX_CHANNELS = 50
MAX_RULES = 20
# After a rotation, the replaced signing secret still signs (a second signature) this long, so
# that receivers can move to the new one without refusing a delivery.
ROTATION_OVERLAP = timedelta(hours=24)
# At most this many secrets sign at once: rotations in quick succession end the overlap of the
# oldest replaced secret early rather than grow the record and the signature header.
MAX_SIGNING_SECRETS = 3


class Rule(Record):
    """The events of ``events`` whose scope begins with ``scope_prefix`` ("" takes every
    event, those without a scope included)."""

    events: list[EventType]
    scope_prefix: str = ""

    def matches(self, event_type: str, scope: str | None) -> bool:
        if event_type not in self.events:
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
    # The webhook's URL, or the email address; a Slack URL is sealed, as a credential, and
    # shown only as its host.
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

    def wants(self, event_type: str, scope: str | None) -> bool:
        return self.state == "enabled" and any(r.matches(event_type, scope) for r in self.rules)

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
