"""Where conversations and their messages are kept, and what the conversations' use cases
reach."""

from __future__ import annotations

from abc import ABC, abstractmethod

from vigil.attachments.store import AttachmentPorts, Membership, Memberships
from vigil.conversations.records import Conversation, Message
from vigil.identity.store import IdentityStore
from vigil.kit.uow import Committer, Write
from vigil.mailboxes.store import MailboxStore


class ConversationStore(Memberships, ABC):
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

    def membership(
        self, namespace: str, conversation_id: str, principal_id: str
    ) -> Membership | None:
        conversation = self.get_conversation(namespace, conversation_id)
        participant = None if conversation is None else conversation.participant(principal_id)
        if conversation is None or participant is None:
            return None
        return Membership(
            namespace=namespace,
            conversation_id=conversation_id,
            version=conversation.version,
            sees_from=participant.sees_from,
            joined_at=participant.joined_at,
        )

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


class ConversationPorts(
    Committer, AttachmentPorts, ConversationStore, IdentityStore, MailboxStore, ABC
):
    """What the conversations' use cases read and write: the conversations, the files their
    messages claim, the principals brought into them and the mailboxes their agents read."""
