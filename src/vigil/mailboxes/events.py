"""What a mailbox tells people of: a delivery dead-lettered, handed out its last time."""

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
