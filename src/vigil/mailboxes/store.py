"""Where mailboxes' registrations, deliveries and usage are kept (their messages are in SQS:
vigil.mailboxes.queues).

Deliveries and usage are single conditional writes of their own: the tools that make them
(receive, acknowledge) take no idempotency key, their conditions are what make them safe."""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime
from typing import Protocol

from vigil.audit.store import AuditStore
from vigil.identity.records import Principal
from vigil.identity.store import IdentityStore
from vigil.kit.uow import Committer, Count, Write
from vigil.mailboxes.records import Delivery, Mailbox, UsageDay, UsageEvent
from vigil.quotas.store import QuotaStore


def usage_pk(namespace: str) -> str:
    """The partition of a namespace's usage days: one item per UTC day and principal, sorted
    by day, then principal (``<YYYY-MM-DD>#<principal id>``)."""
    return f"NS#{namespace}#USAGE"


def usage_counts(usage: UsageEvent) -> tuple[Count, ...]:
    """What one first delivery adds to its day: one to the total and one to its kind."""
    pk, sk = usage_pk(usage.namespace), f"{usage.day}#{usage.recipient}"
    return (Count(pk, sk, "deliveries", 1), Count(pk, sk, usage.kind, 1))


class MailboxStore(ABC):
    @abstractmethod
    def add_mailbox(self, mailbox: Mailbox) -> Write:
        """Registers the mailbox; fails if the address is registered."""

    @abstractmethod
    def get_mailbox(self, namespace: str, address: str) -> Mailbox | None:
        """A named box (``agent:<id>/<box>``); an agent's own address has no record."""

    @abstractmethod
    def list_mailboxes(self, namespace: str, owner: str, limit: int) -> list[Mailbox]:
        """The named boxes of one agent, in address order."""

    @abstractmethod
    def get_delivery(self, namespace: str, envelope_id: str) -> Delivery | None: ...

    @abstractmethod
    def lease_delivery(self, delivery: Delivery, expected_version: int | None) -> None:
        """Stores one hand-out of ``delivery``: created (``expected_version`` None) if no
        delivery of the envelope exists, else replacing the stored one only if its version is
        still ``expected_version`` and it is not acknowledged. Raises ConditionFailed otherwise,
        so of two receivers that read the same record, one wins and the other hands nothing out.
        """

    @abstractmethod
    def acknowledge_delivery(self, delivery: Delivery, now: datetime) -> None:
        """Stores the acknowledged ``delivery`` if the stored one is leased, still has its
        generation and version (``delivery.version - 1``), and its lease is live at ``now``.
        Raises ConditionFailed otherwise."""

    @abstractmethod
    def record_usage(self, usage: UsageEvent) -> bool:
        """Records the envelope's first delivery and counts it in its usage day, in one
        transaction; False (and nothing written) if recorded."""

    @abstractmethod
    def usage_days(
        self, namespace: str, first_day: str, last_day: str, after: str | None, limit: int
    ) -> list[UsageDay]:
        """Up to ``limit`` usage days of the namespace from ``first_day`` to ``last_day``
        (inclusive), in day then principal order, beginning after the position ``after``
        (``<day>#<principal>``)."""


class MailboxReadPorts(IdentityStore, MailboxStore, ABC):
    """What reading mailboxes and their usage takes: the mailboxes, and the directory that
    says whose an address is."""


class MailboxPorts(AuditStore, MailboxReadPorts, QuotaStore, ABC):
    """What a mailbox owner's use cases use: the mailboxes and the directory, the audit trail
    of an operator's boxes for others, and the namespace's count of named boxes."""


class AddressRegistry(Protocol):
    """Where mailbox addresses are registered: an agent's own by its principal record, a named
    box by its mailbox record. What ``require_registered`` reads, and so whoever delivers."""

    def get_principal(self, namespace: str, principal_id: str) -> Principal | None: ...

    def get_mailbox(self, namespace: str, address: str) -> Mailbox | None: ...


class DeadLetterPorts(Committer, MailboxStore, ABC):
    """What the end of a last hand-out reads and writes: the envelope's delivery, and the
    event."""
