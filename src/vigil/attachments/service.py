"""Attachment use cases: staging a draft, uploading a file into a conversation, who sees a file,
and claiming drafts into an operation.

The bytes go to S3 before their record goes to the table, so a record never names bytes that
are not there: a draft's bytes are put under ``staged/`` first (a failure after that leaves
bytes with no record, which the bucket's lifecycle removes within a day), and a claim copies
them to their file key before the claim is committed (a failure after the copy leaves a file
no record names; the retry copies again, to the same key). Bytes are put once, never over
others. A large upload's bytes, which its presigned form can replace until the form expires,
are sealed under their hash when the upload finishes, and nothing reads the form's key again.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from vigil.attachments.blobs import Blobs
from vigil.attachments.records import (
    MAX_FILE_BYTES,
    MAX_INLINE_BYTES,
    UPLOAD_SECONDS,
    Attachment,
    too_large,
    upload_key,
)
from vigil.attachments.store import AttachmentPorts, Membership
from vigil.clock import Clock, to_ms
from vigil.errors import contended, invalid, not_found
from vigil.identity.records import Caller
from vigil.kit.retry import R, retry_on_conflict
from vigil.kit.uow import ConditionFailed, UnitOfWork, Write

# Files one list_attachments page reads.
FILES_SCAN = 50


def decoded(text: str) -> bytes:
    """The bytes of a base64 argument: strict (no stray characters), at most 64 KiB."""
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise invalid("base64 is not valid base64") from None
    if len(data) > MAX_INLINE_BYTES:
        raise too_large(MAX_INLINE_BYTES)
    return data


@dataclass(frozen=True)
class NewFile:
    """A file's bytes as they come, with the name and the media type its sender declares."""

    data: bytes
    file_name: str
    media_type: str


class Attachments:
    """A principal's files: drafts it stages, files it adds to a conversation, and the drafts
    an operation claims into its message."""

    def __init__(self, store: AttachmentPorts, *, blobs: Blobs, clock: Clock) -> None:
        self.store = store
        self.blobs = blobs
        self.clock = clock

    def stage(
        self, uow: UnitOfWork, caller: Caller, file: NewFile, present: Callable[[Attachment], R]
    ) -> R:
        """A private draft of the caller's, its bytes put first."""
        draft = Attachment.staged(
            caller.namespace,
            caller.principal_id,
            file.file_name,
            file.media_type,
            len(file.data),
            hashlib.sha256(file.data).hexdigest(),
            to_ms(self.clock.now()),
        )
        self.blobs.put(draft.key, file.data, draft.media_type, draft.sha256)
        result = present(draft)
        uow.commit(self.store.save_attachment(draft, None), result=result)
        return result

    def begin_upload(
        self,
        uow: UnitOfWork,
        caller: Caller,
        file_name: str,
        media_type: str,
        present: Callable[[Attachment, dict[str, Any]], R],
    ) -> R:
        """A large file's upload: its record, and a presigned POST that puts at most 5 MiB at the
        upload's key until the form expires."""
        upload = Attachment.awaiting(
            caller.namespace, caller.principal_id, file_name, media_type, to_ms(self.clock.now())
        )
        form = self.blobs.upload_form(upload.key, MAX_FILE_BYTES, UPLOAD_SECONDS)
        result = present(upload, form)
        uow.commit(self.store.save_attachment(upload, None), result=result)
        return result

    def finish_upload(
        self,
        uow: UnitOfWork,
        caller: Caller,
        attachment_id: str,
        present: Callable[[Attachment], R],
    ) -> R:
        """The upload's bytes, checked (at most 5 MiB: S3 enforces the form's policy, and this
        check stands where it is not enforced) and hashed, make the upload a draft of exactly
        those bytes. The form works until its hour is up, so the bytes are first sealed where
        it cannot write (``sealed_key``), then the record names them (at the version read),
        then what the form put is deleted; from then on nothing reads the form's key. A finish
        driven again after a crash anywhere in between converges: an upload still open is
        sealed again from its key, a draft has its form's key deleted again."""
        now = to_ms(self.clock.now())

        def attempt() -> R:
            upload = self.store.get_attachment(caller.namespace, attachment_id)
            if upload is None:
                raise not_found("attachment")
            if not upload.awaits_bytes(caller.principal_id, now):
                return present(upload)
            data = self.blobs.get(upload.key)
            if not data:
                raise invalid("nothing was uploaded with this attachment's form yet")
            if len(data) > MAX_FILE_BYTES:
                raise too_large(MAX_FILE_BYTES)
            draft = upload.uploaded(len(data), hashlib.sha256(data).hexdigest(), now)
            self.blobs.put(draft.key, data, draft.media_type, draft.sha256)
            result = present(draft)
            uow.commit(self.store.save_attachment(draft, upload.version), result=result)
            return result

        result = retry_on_conflict(attempt, "the upload")
        self.blobs.delete(upload_key(caller.namespace, attachment_id))
        return result

    def upload(
        self,
        uow: UnitOfWork,
        caller: Caller,
        membership: Membership,
        file: NewFile,
        present: Callable[[Attachment], R],
    ) -> R:
        """A file into the conversation of the caller's ``membership``: the bytes first, then the
        record, committed only if the membership is still the one read (a removal in between
        refuses it, leaving bytes no record names)."""
        added = Attachment.uploaded_to(
            caller.namespace,
            caller.principal_id,
            membership.conversation_id,
            file.file_name,
            file.media_type,
            len(file.data),
            hashlib.sha256(file.data).hexdigest(),
            to_ms(self.clock.now()),
        )
        self.blobs.put(added.key, file.data, added.media_type, added.sha256)
        result = present(added)
        try:
            uow.commit(
                self.store.save_attachment(added, None),
                self.store.require_membership(membership),
                result=result,
            )
        except ConditionFailed:
            raise contended(
                "the conversation's members changed while the file came; retry"
            ) from None
        return result

    def member(self, caller: Caller, conversation_id: str) -> Membership:
        """The caller's part in the conversation. Anyone who takes none gets the not_found of a
        conversation that does not exist."""
        membership = self.store.membership(caller.namespace, conversation_id, caller.principal_id)
        if membership is None:
            raise not_found("conversation")
        return membership

    def seen_files(
        self, membership: Membership, after: str | None
    ) -> tuple[list[Attachment], str | None]:
        """A page of the conversation's files that the member may see now, and where the next
        page starts (None at the end). Pages read at most FILES_SCAN files."""
        found = self.store.files_of(
            membership.namespace, membership.conversation_id, after, FILES_SCAN + 1
        )
        scanned = found[:FILES_SCAN]
        seen = [f for f in scanned if f.visible_to(membership.sees_from, membership.joined_at)]
        more = len(found) > FILES_SCAN
        return seen, scanned[-1].list_position if more else None

    def readable_file(self, caller: Caller, attachment_id: str) -> Attachment:
        """A file the caller may read now: in a conversation it takes part in, and seen from
        where its history starts. Anything else is the not_found of a file that does not exist;
        a draft is its owner's own."""
        file = self.store.get_attachment(caller.namespace, attachment_id)
        if file is not None and file.state == "draft" and file.owner == caller.principal_id:
            return file
        if file is None or file.state != "file" or file.conversation_id is None:
            raise not_found("attachment")
        membership = self.store.membership(
            caller.namespace, file.conversation_id, caller.principal_id
        )
        if membership is None or not file.visible_to(membership.sees_from, membership.joined_at):
            raise not_found("attachment")
        return file

    def claim(
        self,
        caller: Caller,
        attachment_ids: list[str],
        operation: str,
        conversation_id: str,
        message_id: str,
        now: datetime,
    ) -> tuple[list[Attachment], list[Write]]:
        """The caller's drafts ``attachment_ids`` as claimed by ``operation`` (a stable name of
        the call: its tool, principal and idempotency key) into a conversation's message, and the
        writes that record the claim, to commit with the message. The bytes are copied to their
        file keys before this returns. A retry of the same operation gets the same files back."""
        if len(set(attachment_ids)) != len(attachment_ids):
            raise invalid("attachment_ids names a draft twice")
        found = {a.id: a for a in self.store.get_attachments(caller.namespace, attachment_ids)}
        pairs: list[tuple[Attachment, Attachment]] = []
        for attachment_id in attachment_ids:
            draft = found.get(attachment_id)
            if draft is None:
                raise not_found("attachment")
            claimed = draft.claimed(
                caller.principal_id, operation, conversation_id, message_id, now
            )
            pairs.append((draft, claimed))
        for draft, claimed in pairs:
            if draft.state == "draft":
                try:
                    self.blobs.copy(draft.key, claimed.key)
                except LookupError:
                    raise not_found("attachment") from None
        writes = [self.store.save_attachment(c, d.version) for d, c in pairs if c is not d]
        return [claimed for _, claimed in pairs], writes
