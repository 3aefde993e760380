"""Attachment metadata and bytes in memory."""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from vigil.attachments.blobs import Blobs
from vigil.attachments.records import Attachment
from vigil.attachments.store import AttachmentStore
from vigil.kit.memory import MemoryBase, MemoryWrite


class MemoryAttachments(MemoryBase, AttachmentStore):
    def __init__(self) -> None:
        self.attachments: dict[tuple[str, str], Attachment] = {}
        super().__init__()

    def save_attachment(self, attachment: Attachment, expected_version: int | None) -> MemoryWrite:
        key = (attachment.namespace, attachment.id)
        write = self._versioned(self.attachments, key, attachment, expected_version)
        # As on DynamoDB: a file in a conversation is listed under it in the same transaction.
        copies = 2 if attachment.conversation_id is not None else 1
        return MemoryWrite(write.check, write.apply, write.sizes * copies)

    def get_attachment(self, namespace: str, attachment_id: str) -> Attachment | None:
        with self._lock:
            found = self.attachments.get((namespace, attachment_id))
            return found.model_copy() if found else None

    def get_attachments(self, namespace: str, attachment_ids: list[str]) -> list[Attachment]:
        with self._lock:
            return [
                self.attachments[(namespace, i)].model_copy()
                for i in dict.fromkeys(attachment_ids)
                if (namespace, i) in self.attachments
            ]

    def files_of(
        self, namespace: str, conversation_id: str, after: str | None, limit: int
    ) -> list[Attachment]:
        with self._lock:
            found = sorted(
                (
                    a.model_copy()
                    for (ns, _), a in self.attachments.items()
                    if ns == namespace
                    and a.conversation_id == conversation_id
                    and (after is None or a.list_position > after)
                ),
                key=lambda a: a.list_position,
            )
        return found[:limit]


class MemoryBlobs(Blobs):
    """The attachments bucket for tests that need no S3: the bytes in a dict."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.objects: dict[str, bytes] = {}

    def put(self, key: str, data: bytes, media_type: str, sha256: str) -> None:
        if hashlib.sha256(data).hexdigest() != sha256:
            raise ValueError(f"the bytes for {key} do not match their SHA-256")
        with self._lock:
            self.objects.setdefault(key, bytes(data))

    def get(self, key: str) -> bytes | None:
        with self._lock:
            return self.objects.get(key)

    def copy(self, source: str, target: str) -> None:
        with self._lock:
            if source not in self.objects:
                raise LookupError(source)
            self.objects[target] = self.objects[source]

    def delete(self, key: str) -> None:
        with self._lock:
            self.objects.pop(key, None)

    def upload_form(self, key: str, max_bytes: int, expires_seconds: int) -> dict[str, Any]:
        return {"url": f"memory://{key}", "fields": {"key": key}}

    def download_url(self, key: str, expires_seconds: int) -> str:
        return f"memory://{key}"
