"""The SQS queues behind mailboxes, as the mailboxes use them."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass


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
    def find(self, name: str) -> QueueRef | None:
        """The queue and its dead-letter queue if both exist; never creates anything."""

    @abstractmethod
    def remove(self, name: str) -> None:
        """Deletes the queue and its dead-letter queue, with what they hold; removing queues
        that are gone is not an error."""

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
    def depth(self, ref: QueueRef) -> int:
        """How many messages the queue holds, waiting, delayed or handed out (not its dead
        letters); SQS gives an approximate figure."""

    @abstractmethod
    def peek_dead_letters(self, ref: QueueRef, max_messages: int) -> list[QueueMessage]:
        """Up to ``max_messages`` dead letters, left in place and visible."""
