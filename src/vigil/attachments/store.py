"""Where attachment metadata is kept."""

from __future__ import annotations

from abc import ABC, abstractmethod

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
