"""Mailboxes: their registrations, deliveries and usage in the table; their messages in SQS."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime

from vigil.domain.idempotency import IdempotencyRecord
from vigil.domain.mailboxes import Delivery, Mailbox, UsageEvent


class MailboxPort(ABC):
    @abstractmethod
    def create_mailbox(self, mailbox: Mailbox, completes: IdempotencyRecord | None = None) -> None:
        """Raises ConditionFailed if the address is registered or ``completes`` is not ours."""

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
        """Records the envelope's first delivery; False (and nothing written) if recorded."""


@dataclass(frozen=True)
class QueueRef:
    name: str
    url: str
    dlq_url: str


@dataclass(frozen=True)
class QueueMessage:
    message_id: str  # SQS's id of this copy; a sender's retry makes another copy, another id
    receipt_handle: str
    body: str
    receive_count: int


class MailboxQueues(ABC):
    """The SQS queues behind mailboxes, each with a dead-letter queue that takes a message
    after ``MAX_HANDOUTS`` receives."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    @abstractmethod
    def ensure(self, name: str) -> QueueRef:
        """Creates the queue and its dead-letter queue unless they exist; idempotent."""

    @abstractmethod
    def send(self, ref: QueueRef, body: str) -> str:
        """Queues one message; returns its message id."""

    @abstractmethod
    def receive(
        self, ref: QueueRef, max_messages: int, wait_seconds: int, visibility_seconds: int
    ) -> list[QueueMessage]:
        """Up to ``max_messages`` visible messages, each hidden for ``visibility_seconds``;
        waits up to ``wait_seconds`` for the first one."""

    @abstractmethod
    def delete(self, ref: QueueRef, receipt_handle: str) -> None:
        """Deletes the message; deleting one already gone is not an error."""

    @abstractmethod
    def peek_dead_letters(self, ref: QueueRef, max_messages: int) -> list[QueueMessage]:
        """Up to ``max_messages`` dead letters, left in place and visible."""
