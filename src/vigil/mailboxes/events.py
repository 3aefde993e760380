"""What a mailbox tells of: to people, a delivery dead-lettered, handed out its last time; to
the mailbox's owner, a delivery waiting to be received."""

from __future__ import annotations

from pydantic import AwareDatetime, Field

from vigil.kit.events import EventData
from vigil.mailboxes.records import EnvelopeKind


class DeliveryDeadLettered(EventData):
    """A mailbox delivery was handed out its last time without being acknowledged."""

    mailbox_owner: str = Field(description="Principal id of the mailbox's owner.")
    envelope_id: str
    kind: EnvelopeKind
    attempts: int = Field(description="How many times it was handed out.")
    dead_lettered_at: AwareDatetime

    def identity(self) -> tuple[str, ...]:
        return (self.envelope_id,)


class DeliveryWaiting(EventData):
    """An envelope was queued into a mailbox: its owner may receive it. What it carries is
    for ``receive`` to hand out, leased; the event says only that it waits, and from whom."""

    mailbox_owner: str = Field(description="Principal id of the mailbox's owner.")
    address: str
    envelope_id: str
    kind: EnvelopeKind
    sender: str = Field(description="Principal id of who sent it, or vigil.")
    sent_at: AwareDatetime

    def identity(self) -> tuple[str, ...]:
        return (self.envelope_id,)

    def readers(self) -> tuple[str, ...]:
        return (self.mailbox_owner,)
