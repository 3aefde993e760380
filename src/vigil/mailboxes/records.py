"""Mailboxes: addresses, the envelopes queued into them and the leased deliveries of those
envelopes, fenced by a generation."""

from __future__ import annotations

import base64
import hashlib
import re
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import Field

from vigil.kit.records import Record, Versioned

BOX_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,31}$"
ADDRESS_PATTERN = r"^agent:(agt_[a-z2-7]{16})(/[a-z0-9][a-z0-9_-]{0,31})?$"
# Loose enough for ids a sender derives from what it sends (hex or base32 digests).
ENVELOPE_ID_PATTERN = r"^env_[a-z0-9]{16,64}$"
_ADDRESS_RE = re.compile(ADDRESS_PATTERN)
_ENVELOPE_ID_LENGTH = 26

# Hand-outs of one envelope before SQS moves it to the mailbox's dead-letter queue.
MAX_HANDOUTS = 5
# Named boxes one agent may have, so that no caller can create queues without bound.
MAX_BOXES_PER_AGENT = 20
# The sender recorded on what Vigil itself queues, such as a dead-man switch's alert.
SYSTEM_SENDER = "vigil"

EnvelopeKind = Literal["alert", "message", "request", "response"]
DeliveryState = Literal["leased", "acknowledged"]


def parse_address(address: str) -> tuple[str, str | None] | None:
    """The owning agent's id and the box name (None for the agent's own address)."""
    match = _ADDRESS_RE.match(address)
    if match is None:
        return None
    box = match.group(2)
    return match.group(1), box[1:] if box else None


def agent_address(agent_id: str, box: str | None = None) -> str:
    return f"agent:{agent_id}" if box is None else f"agent:{agent_id}/{box}"


def queue_name(prefix: str, namespace: str, address: str) -> str:
    """The SQS queue behind a mailbox. Queue names allow only letters, digits, '-' and '_',
    80 at most, so the address is hashed; with its namespace, as addresses repeat across
    namespaces."""
    digest = hashlib.sha256(f"{namespace}/{address}".encode()).hexdigest()[:32]
    return f"{prefix}-{digest}"


def envelope_id_for(key: str) -> str:
    """A deterministic envelope id: a sender that may retry after a crash (the dead-man
    switch's alert) derives the id from what it is sending, so a retry queues a second copy
    of the same envelope, which is never handed out twice, rather than a second envelope."""
    digest = hashlib.sha256(key.encode()).digest()
    return "env_" + base64.b32encode(digest).decode().lower()[:_ENVELOPE_ID_LENGTH]


class Mailbox(Record):
    namespace: str
    address: str
    owner: str  # the agent's principal id
    queue_name: str
    created_at: datetime


class Envelope(Record):
    id: str = Field(pattern=ENVELOPE_ID_PATTERN)
    namespace: str
    address: str
    sender: str  # a principal id, or SYSTEM_SENDER
    kind: EnvelopeKind
    payload: dict[str, Any]
    sent_at: datetime


class Delivery(Versioned):
    """What Vigil knows about one envelope's delivery. Keyed by the envelope id, it names the
    one SQS copy (``message_id``) that may be handed out; any other copy is a duplicate."""

    namespace: str
    envelope_id: str
    address: str
    owner: str
    message_id: str
    receipt_handle: str  # of the latest hand-out: SQS deletes reliably only with the latest
    generation: int  # grows with every hand-out: the fencing token an acknowledgment echoes
    state: DeliveryState
    leased_until: datetime
    first_delivered_at: datetime
    acknowledged_at: datetime | None = None

    def leased(self, now: datetime) -> bool:
        return self.state == "leased" and self.leased_until > now

    @classmethod
    def handed_out(
        cls,
        current: Delivery | None,
        envelope: Envelope,
        mailbox: Mailbox,
        message_id: str,
        receipt_handle: str,
        lease_seconds: int,
        now: datetime,
    ) -> Delivery:
        """The next hand-out of ``envelope``: generation 1 the first time, one more on each
        hand-out after its lease lapsed."""
        return cls(
            namespace=mailbox.namespace,
            envelope_id=envelope.id,
            address=mailbox.address,
            owner=mailbox.owner,
            message_id=message_id,
            receipt_handle=receipt_handle,
            generation=1 if current is None else current.generation + 1,
            state="leased",
            leased_until=now + timedelta(seconds=lease_seconds),
            first_delivered_at=now if current is None else current.first_delivered_at,
            version=1 if current is None else current.version + 1,
        )

    def acknowledged(self, now: datetime) -> Delivery:
        return self.changed(state="acknowledged", acknowledged_at=now)

    def usage(self, envelope: Envelope) -> UsageEvent:
        """The billable event of this delivery: its envelope's first delivery."""
        return UsageEvent(
            namespace=self.namespace,
            envelope_id=self.envelope_id,
            address=self.address,
            recipient=self.owner,
            sender=envelope.sender,
            kind=envelope.kind,
            delivered_at=self.first_delivered_at,
        )


class UsageEvent(Record):
    """The billable event: an envelope's first delivery. One per envelope, ever."""

    namespace: str
    envelope_id: str
    address: str
    recipient: str
    sender: str
    kind: EnvelopeKind
    delivered_at: datetime

    @property
    def day(self) -> str:
        """The UTC day it is billed on, YYYY-MM-DD. Every hand-out of an envelope carries the
        time of its first, so the day is the same whichever hand-out records it."""
        return self.delivered_at.astimezone(UTC).date().isoformat()


class UsageDay(Record):
    """The first deliveries of one UTC day to one principal (its mailboxes), by kind."""

    day: str
    principal: str
    deliveries: int
    by_kind: dict[EnvelopeKind, int]


# The counters of a usage day, on one item: the total and one per envelope kind.
USAGE_KINDS: tuple[EnvelopeKind, ...] = ("alert", "message", "request", "response")
