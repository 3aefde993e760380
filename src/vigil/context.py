"""The context of one tool call: what the app hands a tool, built anew for each call.

Each capability's tools declare, as a protocol beside them, the part of it they read (their
store ports, the caller, the clock...); the catalog has the type checker confirm that this
context gives every one of them what it names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from vigil.alarms.timers import Alarms
from vigil.attachments.blobs import Blobs
from vigil.audit.store import AuditStore
from vigil.clock import Clock
from vigil.identity.records import Caller
from vigil.kit.keys import Keys
from vigil.kit.publish import Publish
from vigil.kit.uow import UnitOfWork
from vigil.mailboxes.queues import MailboxQueues
from vigil.notifications.publishing import outbox_on_first_event
from vigil.quotas.records import Quotas
from vigil.store import Store

if TYPE_CHECKING:
    from vigil.mailboxes.service import Mailboxes
    from vigil.notifications.sending import Sender


@dataclass(frozen=True)
class Context:
    """Everything a tool needs for one call, and nothing ambient: each capability's tools read
    the part of it that their own context protocol names."""

    store: Store
    clock: Clock
    caller: Caller
    queues: MailboxQueues
    alarms: Alarms
    uow: UnitOfWork
    quotas: Quotas
    blobs: Blobs
    keys: Keys
    # How notifications leave (test_channel sends one at once).
    sender: Sender

    @property
    def mailboxes(self) -> Mailboxes:
        """The mailbox owners' use cases, on this call's store and queues."""
        from vigil.mailboxes.service import Mailboxes

        return Mailboxes(
            self.store, queues=self.queues, clock=self.clock, quotas=self.quotas, alarms=self.alarms
        )

    @property
    def audit_trail(self) -> AuditStore:
        """Where votes and decisions on requests are audited: the call's store."""
        return self.store

    @property
    def escalation_channels(self) -> Store:
        """The channels a request may escalate to: the call's store's."""
        return self.store

    @property
    def publish(self) -> Publish:
        """Where the call's news goes: the notifications' outbox."""
        return outbox_on_first_event(self.store, self.clock, self.alarms)
