"""Attachments: a file's metadata (the bytes live in S3) and the rules of its life.

A file reaches a conversation in one of two ways. ``stage_attachment`` keeps a private draft
for one later operation (a send, a start_chat) that claims it by id; ``upload_attachment`` adds
one to a conversation directly. A draft is claimed by exactly one operation: the same operation
retried (same idempotency key, same inputs) claims it again harmlessly, any other is refused. A
draft not claimed within 24 hours is gone: the claim checks the expiry itself (DynamoDB TTL and
S3 lifecycle only collect garbage, and moto applies neither).
"""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime, timedelta
from typing import Any, Literal

from vigil.errors import ErrorCode, VigilError, invalid, not_found
from vigil.kit.names import REFUSED_CATEGORIES
from vigil.kit.principals import new_id, number_in
from vigil.kit.records import Versioned

# Over MCP a file travels as base64 in one tool call: 64 KiB decoded at most (87,384 base64
# characters, as the seed says). Larger files, up to 5 MiB, go through presigned S3 URLs.
MAX_INLINE_BYTES = 64 * 1024
MAX_BASE64_CHARS = 87_384
MAX_FILE_BYTES = 5 * 1024 * 1024
DRAFT_SECONDS = 24 * 3600
# How long a presigned upload form works, and so how long its upload may wait to be finished.
UPLOAD_SECONDS = 3600
MAX_FILE_NAME = 255  # UTF-8 bytes, as most file systems allow
ATTACHMENT_ID_PATTERN = r"^att_[a-z2-7]{16}$"
_ATTACHMENT_ID = re.compile(ATTACHMENT_ID_PATTERN)
# RFC 6838: type "/" subtype, each a restricted name of at most 127 characters; then, as a
# Content-Type may have them (RFC 9110), parameters: ; name=value, the value a token or a
# "quoted string".
_NAME_OR_VALUE = r"[A-Za-z0-9!#$%&'*+.^_`|~-]+"
# ASCII only: the type travels in an HTTP header (S3's Content-Type).
_QUOTED = r'"(?:[\t\x20\x21\x23-\x5b\x5d-\x7e]|\\[\t\x20-\x7e])*"'
MEDIA_TYPE_PATTERN = (
    r"^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}"
    rf"(?:[ \t]*;[ \t]*{_NAME_OR_VALUE}=(?:{_NAME_OR_VALUE}|{_QUOTED}))*$"
)
_MEDIA_TYPE = re.compile(MEDIA_TYPE_PATTERN)
# Standard base64 with its padding, nothing else (no line breaks, no URL-safe alphabet).
BASE64_PATTERN = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
_UNSAFE = re.compile(r"[/\\]")

# upload: a large file's presigned upload, not finished yet; draft: staged, for one operation to
# claim; file: in a conversation.
AttachmentState = Literal["upload", "draft", "file"]


def safe_file_name(name: str) -> str:
    """``name`` made safe to show and to save: NFC, path separators as ``_``, no control or
    invisible characters, no leading dots or spaces, at most 255 bytes of UTF-8."""
    cleaned = "".join(
        c
        for c in unicodedata.normalize("NFC", name)
        if unicodedata.category(c) not in REFUSED_CATEGORIES
    )
    cleaned = _UNSAFE.sub("_", cleaned).strip().lstrip(".").strip()
    while len(cleaned.encode()) > MAX_FILE_NAME:
        cleaned = cleaned[:-1]
    if not cleaned:
        raise invalid("file_name has no printable characters left once made safe")
    return cleaned


def media_type(declared: str) -> str:
    """The declared media type with its type/subtype lower-cased (a parameter's value, such as
    a boundary, may depend on its case); invalid_argument unless it is type/subtype with
    parameters if any."""
    if not _MEDIA_TYPE.match(declared):
        raise invalid("media_type must be a type/subtype, e.g. application/pdf")
    essence, separator, parameters = declared.partition(";")
    return essence.lower() + separator + parameters


def is_attachment_id(value: str) -> bool:
    return bool(_ATTACHMENT_ID.match(value))


def too_large(limit: int) -> VigilError:
    return VigilError(
        ErrorCode.LIMIT_EXCEEDED, f"a file here may take at most {limit} bytes", limit=limit
    )


class Attachment(Versioned):
    id: str
    namespace: str
    owner: str  # the principal that staged or uploaded it
    file_name: str
    media_type: str
    size: int
    sha256: str
    created_at: datetime
    state: AttachmentState
    key: str  # where the bytes are, in the attachments bucket
    expires_at: datetime | None = None  # a draft's end, unless claimed
    claimed_by: str | None = None  # the operation that claimed the draft
    conversation_id: str | None = None
    message_id: str | None = None
    added_at: datetime | None = None  # when it came into its conversation

    @property
    def list_position(self) -> str:
        """Where the file sorts among its conversation's: by when it was added, then id."""
        added = self.added_at or self.created_at
        return f"{int(added.timestamp() * 1000):015d}#{self.id}"

    @classmethod
    def _new(
        cls,
        namespace: str,
        owner: str,
        file_name: str,
        declared_type: str,
        now: datetime,
        state: AttachmentState,
        **fields: Any,
    ) -> Attachment:
        """A new attachment: its id, its checked name and type, and where its bytes go."""
        attachment_id = new_id("att")
        key = {"upload": upload_key, "draft": staged_key, "file": file_key}[state](
            namespace, attachment_id
        )
        return cls(
            id=attachment_id,
            namespace=namespace,
            owner=owner,
            file_name=safe_file_name(file_name),
            media_type=media_type(declared_type),
            created_at=now,
            state=state,
            key=key,
            version=1,
            **fields,
        )

    @classmethod
    def staged(
        cls,
        namespace: str,
        owner: str,
        file_name: str,
        declared_type: str,
        size: int,
        sha256: str,
        now: datetime,
    ) -> Attachment:
        return cls._new(
            namespace,
            owner,
            file_name,
            declared_type,
            now,
            "draft",
            size=size,
            sha256=sha256,
            expires_at=now + timedelta(seconds=DRAFT_SECONDS),
        )

    @classmethod
    def awaiting(
        cls, namespace: str, owner: str, file_name: str, declared_type: str, now: datetime
    ) -> Attachment:
        """A large file's upload, begun: its bytes are to come through a presigned POST."""
        return cls._new(
            namespace,
            owner,
            file_name,
            declared_type,
            now,
            "upload",
            size=0,
            sha256="",
            expires_at=now + timedelta(seconds=UPLOAD_SECONDS),
        )

    def awaits_bytes(self, owner: str, now: datetime) -> bool:
        """Whether this is ``owner``'s upload, still open for its bytes to be finished (True),
        or its draft, finished already (False). Anyone else's, a file, or an upload past its
        hour is not_found."""
        if self.owner != owner or self.state == "file":
            raise not_found("attachment")
        if self.state == "draft":
            return False
        assert self.expires_at is not None
        if self.expires_at <= now:
            raise not_found("attachment")
        return True

    def uploaded(self, size: int, sha256: str, now: datetime) -> Attachment:
        """The upload finished: a draft of the bytes found, for 24 hours from now, kept under
        their hash (``sealed_key``), where no upload form reaches."""
        return self.changed(
            state="draft",
            key=sealed_key(self.namespace, self.id, sha256),
            size=size,
            sha256=sha256,
            expires_at=now + timedelta(seconds=DRAFT_SECONDS),
        )

    @classmethod
    def uploaded_to(
        cls,
        namespace: str,
        owner: str,
        conversation_id: str,
        file_name: str,
        declared_type: str,
        size: int,
        sha256: str,
        now: datetime,
    ) -> Attachment:
        """A file added to a conversation directly, not through a message."""
        return cls._new(
            namespace,
            owner,
            file_name,
            declared_type,
            now,
            "file",
            size=size,
            sha256=sha256,
            conversation_id=conversation_id,
            added_at=now,
        )

    def visible_to(self, sees_from: int, joined_at: datetime) -> bool:
        """Whether a participant who reads a conversation's messages from number
        ``sees_from``, and joined at ``joined_at``, may see this file of it: file access
        follows history access. A message's file is seen with its message; a file added
        directly, by everyone who was there (or was given the history) when it came."""
        if sees_from <= 1:
            return True
        seq = None if self.message_id is None else number_in("msg", self.message_id)
        if seq is not None:
            return seq >= sees_from
        return (self.added_at or self.created_at) >= joined_at

    def claimed(
        self, owner: str, operation: str, conversation_id: str, message_id: str, now: datetime
    ) -> Attachment:
        """The draft as claimed by ``operation`` into a conversation's message. The same
        operation again gets the same claim back (a retry); anything else is refused: a draft
        of someone else, or gone, is not_found, one claimed by another operation is invalid."""
        if self.owner != owner or self.state == "upload":
            raise not_found("attachment")
        if self.state == "file":
            if self.claimed_by == operation:
                return self
            raise invalid(
                f"attachment {self.id} was claimed by another operation; stage a fresh copy",
                attachment_id=self.id,
            )
        assert self.expires_at is not None
        if self.expires_at <= now:
            raise not_found("attachment")
        return self.changed(
            state="file",
            key=file_key(self.namespace, self.id),
            expires_at=None,
            claimed_by=operation,
            conversation_id=conversation_id,
            message_id=message_id,
            added_at=now,
        )


def staged_key(namespace: str, attachment_id: str) -> str:
    # Under staged/, which the bucket's lifecycle empties after a day.
    return f"staged/{namespace}/{attachment_id}"


def upload_key(namespace: str, attachment_id: str) -> str:
    """Where an upload's presigned form puts its bytes. The form cannot be revoked and works
    until its hour is up, after the upload's finish too: once finished, nothing reads this key
    (what the form puts then is never served), and the bucket's lifecycle empties uploads/
    after a day."""
    return f"uploads/{namespace}/{attachment_id}"


def sealed_key(namespace: str, attachment_id: str, sha256: str) -> str:
    """Where a finished upload's bytes are kept as a draft's: named by their hash, so bytes
    found there are the bytes hashed (they are written once, and S3 checks them against the
    hash on the way in), and a finish driven again after a crash seals to the same key, or
    to another if the form put other bytes before the record said finished. Under staged/."""
    return f"{staged_key(namespace, attachment_id)}/{sha256}"


def file_key(namespace: str, attachment_id: str) -> str:
    return f"files/{namespace}/{attachment_id}"
