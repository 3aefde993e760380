"""Where conversations and their messages are kept."""

from __future__ import annotations

from abc import ABC, abstractmethod

from vigil.conversations.records import Conversation, Message
from vigil.kit.uow import Write


class ConversationStore(ABC):
    @abstractmethod
    def get_conversation(self, namespace: str, conversation_id: str) -> Conversation | None: ...

    @abstractmethod
    def get_direct(self, namespace: str, one: str, other: str) -> str | None:
        """The id of the direct conversation the two principals reuse, whichever is ``one``."""

    @abstractmethod
    def start_conversation(
        self, conversation: Conversation, first: Message, reused: bool = False
    ) -> Write:
        """Creates ``conversation`` (its ``last_seq`` already 1) with its ``first`` message;
        ``reused`` records it as the direct conversation its two participants reuse. The
        commit fails if the conversation exists, or the pair has one to reuse already."""

    @abstractmethod
    def add_message(self, conversation: Conversation, message: Message) -> Write:
        """Stores ``message`` and moves the conversation's ``last_seq`` to its number, if the
        conversation is stored at ``conversation.version`` with ``last_seq`` one less; the
        commit fails otherwise (another message took the number, or the membership changed)."""

    @abstractmethod
    def save_conversation(self, conversation: Conversation) -> Write:
        """Replaces the conversation if it is stored at version ``conversation.version - 1``
        and with its ``last_seq``, so that no message lands unseen by a membership change."""

    @abstractmethod
    def require_membership(self, conversation: Conversation) -> Write:
        """Changes nothing, and holds only while the conversation's membership is as read
        (its version unchanged; messages may have come). Committed with other writes, it
        makes them depend on who takes part."""

    @abstractmethod
    def get_message(self, namespace: str, conversation_id: str, seq: int) -> Message | None: ...

    @abstractmethod
    def list_messages(
        self, namespace: str, conversation_id: str, after: int, limit: int
    ) -> list[Message]:
        """Up to ``limit`` messages numbered after ``after``, in number order, read
        consistently."""

    @abstractmethod
    def mark_delivered(self, message: Message, count: int) -> None:
        """Records that the first ``count`` of the message's recipients have their envelope
        queued. A single conditional write of its own, like a delivery's: it raises
        ConditionFailed, and changes nothing, if as many or more are recorded already."""
