"""Where attachment metadata is kept, and what files read of the conversations they belong to."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime

from vigil.attachments.records import Attachment
from vigil.kit.uow import Write


class AttachmentStore(ABC):
    @abstractmethod
    def save_attachment(self, attachment: Attachment, expected_version: int | None) -> Write:
        """Stores ``attachment`` if the stored version is ``expected_version`` (None: none
        stored yet). A file in a conversation is also listed under it (``files_of``)."""

    @abstractmethod
    def get_attachment(self, namespace: str, attachment_id: str) -> Attachment | None: ...

    @abstractmethod
    def get_attachments(self, namespace: str, attachment_ids: list[str]) -> list[Attachment]:
        """Those of ``attachment_ids`` that exist, in one read."""

    @abstractmethod
    def files_of(
        self, namespace: str, conversation_id: str, after: str | None, limit: int
    ) -> list[Attachment]:
        """The conversation's files in the order they were added, after the position ``after``
        (an attachment's ``list_position``), at most ``limit``."""


@dataclass(frozen=True)
class Membership:
    """A principal's part in a conversation, as its files see it: the messages it reads from
    (``sees_from``), when it joined, and the membership it was read at (``version``)."""

    namespace: str
    conversation_id: str
    version: int
    sees_from: int
    joined_at: datetime


class Memberships(ABC):
    """Who takes part in a conversation, in the terms of its files: the conversations' store
    implements it."""

    @abstractmethod
    def membership(
        self, namespace: str, conversation_id: str, principal_id: str
    ) -> Membership | None:
        """``principal_id``'s part in the conversation now; None if it takes none, or the
        conversation does not exist."""

    @abstractmethod
    def require_membership(self, membership: Membership) -> Write:
        """Changes nothing, and holds only while the conversation's membership is as read
        (its version unchanged; messages may have come). Committed with other writes, it
        makes them depend on who takes part."""


class AttachmentPorts(AttachmentStore, Memberships, ABC):
    """What the attachments' use cases read and write."""
