"""Attachments: staging a private draft (bytes in the bucket first, then the record), the rules
of its name and type, its size limits, and claiming drafts into exactly one operation."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest

from tests.support import Tenant, app_on, error_of
from vigil.attachments.blobs import Blobs, S3Blobs
from vigil.attachments.memory import MemoryBlobs
from vigil.attachments.records import MAX_INLINE_BYTES, safe_file_name
from vigil.attachments.service import Attachments
from vigil.clock import ManualClock, parse_iso
from vigil.errors import ErrorCode
from vigil.identity.records import Caller
from vigil.stores.memory import MemoryStore


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def blobs() -> MemoryBlobs:
    return MemoryBlobs()


@pytest.fixture
def tenant(store: MemoryStore, blobs: MemoryBlobs, clock: ManualClock) -> Tenant:
    return Tenant(app_on(store, clock, blobs=blobs), clock, "acme")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def stage(tenant: Tenant, secret: str, data: bytes = b"hello", **more: Any) -> dict[str, Any]:
    arguments = {"base64": b64(data), "file_name": "notes.txt", "media_type": "text/plain"}
    return tenant.call("stage_attachment", secret, **{**arguments, **more})


def caller_of(tenant: Tenant, principal_id: str) -> Caller:
    principal = tenant.app.store.get_principal("acme", principal_id)
    assert principal is not None
    return Caller("acme", principal.id, principal.kind, principal.role, principal, "rest")


def test_a_staged_draft_keeps_its_bytes_and_metadata(
    tenant: Tenant, store: MemoryStore, blobs: MemoryBlobs, clock: ManualClock
) -> None:
    me, secret = tenant.register()
    data = bytes(range(256)) * 256  # exactly 64 KiB
    assert len(data) == MAX_INLINE_BYTES
    draft = stage(tenant, secret, data, file_name="../etc/pass\u202ewd", media_type="Text/Plain")
    assert draft["state"] == "draft"
    assert (draft["size"], draft["sha256"]) == (len(data), hashlib.sha256(data).hexdigest())
    assert (draft["file_name"], draft["media_type"]) == ("_etc_passwd", "text/plain")
    assert parse_iso(draft["expires_at"]) == clock.now() + timedelta(hours=24)
    stored = store.get_attachment("acme", draft["id"])
    assert stored is not None
    assert (stored.owner, stored.key) == (me, f"staged/acme/{draft['id']}")
    assert blobs.get(stored.key) == data


def test_an_empty_file_and_a_media_type_with_parameters_are_accepted(
    tenant: Tenant, blobs: MemoryBlobs
) -> None:
    # The seed's base64 may encode no bytes, and its media_type is a declared Content-Type.
    _, secret = tenant.register()
    draft = stage(tenant, secret, b"", media_type='Text/Plain; charset=UTF-8; name="a b"')
    assert (draft["size"], draft["sha256"]) == (0, hashlib.sha256(b"").hexdigest())
    assert draft["media_type"] == 'text/plain; charset=UTF-8; name="a b"'
    stored = tenant.app.store.get_attachment("acme", draft["id"])
    assert stored is not None
    assert blobs.get(stored.key) == b""


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        ({"base64": "not base64!"}, ErrorCode.INVALID_ARGUMENT),
        ({"base64": "aGVsbG8"}, ErrorCode.INVALID_ARGUMENT),  # unpadded
        ({"media_type": "text"}, ErrorCode.INVALID_ARGUMENT),
        ({"media_type": "text/plain; charset"}, ErrorCode.INVALID_ARGUMENT),
        ({"media_type": 'text/plain; name="\u00e9"'}, ErrorCode.INVALID_ARGUMENT),
        ({"file_name": "\u200b\u202e"}, ErrorCode.INVALID_ARGUMENT),
        ({"file_name": " . "}, ErrorCode.INVALID_ARGUMENT),
        ({"file_name": ""}, ErrorCode.INVALID_ARGUMENT),
    ],
)
def test_bad_files_are_refused_and_store_nothing(
    tenant: Tenant,
    store: MemoryStore,
    blobs: MemoryBlobs,
    arguments: dict[str, Any],
    code: ErrorCode,
) -> None:
    _, secret = tenant.register()
    assert error_of(stage, tenant, secret, **arguments).code is code
    assert store.attachments == {}
    assert blobs.objects == {}


def test_one_byte_over_64_kib_of_valid_base64_is_limit_exceeded(tenant: Tenant) -> None:
    # 65,537 bytes is 87,384 base64 characters: within the schema, over the decoded limit.
    _, secret = tenant.register()
    text = b64(b"x" * (MAX_INLINE_BYTES + 1))
    assert len(text) == 87_384
    assert error_of(stage, tenant, secret, base64=text).code is ErrorCode.LIMIT_EXCEEDED


def test_safe_file_names() -> None:
    assert safe_file_name("report.pdf") == "report.pdf"
    assert safe_file_name("a/b\\c") == "a_b_c"
    assert safe_file_name(" ..hidden ") == "hidden"
    assert safe_file_name("e\u0301t\u00e9.txt") == "\u00e9t\u00e9.txt"
    assert len(safe_file_name("\U0001f4c4" * 100).encode()) <= 255


def test_a_draft_is_claimed_by_one_operation_only(
    tenant: Tenant, store: MemoryStore, blobs: MemoryBlobs, clock: ManualClock
) -> None:
    me, secret = tenant.register()
    draft = stage(tenant, secret)
    caller = caller_of(tenant, me)
    claim = Attachments(store, blobs=blobs, clock=clock).claim
    files, writes = claim(caller, [draft["id"]], "send/k1", "cnv_1", "msg_1", clock.now())
    store.commit(writes)
    (file,) = files
    assert (file.state, file.conversation_id, file.key) == (
        "file",
        "cnv_1",
        f"files/acme/{file.id}",
    )
    assert blobs.get(file.key) == b"hello"
    # The same operation again (a retry): the same file, nothing written.
    again, more = claim(caller, [draft["id"]], "send/k1", "cnv_1", "msg_1", clock.now())
    assert (again, more) == (files, [])
    # Any other operation is refused.
    error = error_of(claim, caller, [draft["id"]], "send/k2", "cnv_2", "msg_2", clock.now())
    assert error.code is ErrorCode.INVALID_ARGUMENT


def test_only_the_owner_claims_a_live_draft(
    tenant: Tenant, store: MemoryStore, blobs: MemoryBlobs, clock: ManualClock
) -> None:
    me, secret = tenant.register()
    other, _ = tenant.register(name="other")
    draft = stage(tenant, secret)
    claim = Attachments(store, blobs=blobs, clock=clock).claim
    for who, ids in ((other, [draft["id"]]), (me, ["att_aaaaaaaaaaaaaaaa"])):
        error = error_of(claim, caller_of(tenant, who), ids, "op", "c", "m", clock.now())
        assert error.code is ErrorCode.NOT_FOUND
    error = error_of(claim, caller_of(tenant, me), [draft["id"]] * 2, "op", "c", "m", clock.now())
    assert error.code is ErrorCode.INVALID_ARGUMENT
    clock.advance(24 * 3600)
    expired = error_of(claim, caller_of(tenant, me), [draft["id"]], "op", "c", "m", clock.now())
    assert expired.code is ErrorCode.NOT_FOUND
    stored = store.get_attachment("acme", draft["id"])
    assert stored is not None
    assert stored.state == "draft"


@pytest.mark.parametrize("backend", ["memory", "s3"])
def test_the_blob_store_contract(backend: str, request: Any) -> None:
    blobs: Blobs
    if backend == "s3":
        request.getfixturevalue("aws")
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="attachments")
        blobs = S3Blobs(client, "attachments")
    else:
        blobs = MemoryBlobs()
    assert blobs.get("staged/acme/a") is None
    digest = hashlib.sha256(b"\x00bytes").hexdigest()
    blobs.put("staged/acme/a", b"\x00bytes", "application/octet-stream", digest)
    blobs.put("staged/acme/a", b"\x00bytes", "application/octet-stream", digest)  # idempotent
    # Written once: a key that holds bytes keeps them.
    other = hashlib.sha256(b"other").hexdigest()
    blobs.put("staged/acme/a", b"other", "application/octet-stream", other)
    assert blobs.get("staged/acme/a") == b"\x00bytes"
    if isinstance(blobs, S3Blobs):
        # S3 is told the bytes' SHA-256, checks them against it and keeps it with the object.
        head = client.head_object(Bucket="attachments", Key="staged/acme/a", ChecksumMode="ENABLED")
        assert base64.b64decode(head["ChecksumSHA256"]).hex() == digest
    blobs.copy("staged/acme/a", "files/acme/a")
    blobs.copy("staged/acme/a", "files/acme/a")
    assert blobs.get("files/acme/a") == b"\x00bytes"
    with pytest.raises(LookupError):
        blobs.copy("staged/acme/missing", "files/acme/missing")
    blobs.delete("files/acme/a")
    blobs.delete("files/acme/a")  # idempotent
    assert blobs.get("files/acme/a") is None
    form = blobs.upload_form("files/acme/b", 5 * 1024 * 1024, 300)
    assert set(form) == {"url", "fields"}
    assert blobs.download_url("files/acme/a", 300)


def test_a_presigned_download_is_saved_by_a_browser_never_shown(aws: Any) -> None:
    # Whatever type its uploader's form declared, the bucket's answer is bytes to save: a file
    # of HTML opened from a link never runs as a page.
    client = boto3.client("s3", region_name="us-east-1")
    url = S3Blobs(client, "attachments").download_url("files/acme/a", 300)
    query = parse_qs(urlsplit(url).query)
    assert query["response-content-disposition"] == ["attachment"]
    assert query["response-content-type"] == ["application/octet-stream"]


# -- large files: a presigned upload, then finish ------------------------------------------------
def begin(tenant: Tenant, secret: str) -> dict[str, Any]:
    return tenant.call(
        "begin_attachment_upload", secret, file_name="big.bin", media_type="application/zip"
    )


def post(blobs: MemoryBlobs, form: dict[str, Any], data: bytes) -> None:
    """What S3 does with a POST of the presigned form: whatever is at its key is replaced."""
    blobs.objects[form["fields"]["key"]] = data


def test_a_large_upload_becomes_a_draft_once_its_bytes_are_checked(
    tenant: Tenant, store: MemoryStore, blobs: MemoryBlobs, clock: ManualClock
) -> None:
    me, secret = tenant.register()
    begun = begin(tenant, secret)
    upload = begun["attachment"]
    assert (upload["state"], begun["max_bytes"]) == ("upload", 5 * 1024 * 1024)
    assert begun["upload"]["fields"]["key"] == f"uploads/acme/{upload['id']}"
    # Not claimable, and not finishable, before its bytes are there.
    stored = store.get_attachment("acme", upload["id"])
    assert stored is not None
    claim = Attachments(store, blobs=blobs, clock=clock).claim
    error = error_of(claim, caller_of(tenant, me), [upload["id"]], "o", "c", "m", clock.now())
    assert error.code is ErrorCode.NOT_FOUND
    nothing = error_of(tenant.call, "finish_attachment_upload", secret, id=upload["id"])
    assert nothing.code is ErrorCode.INVALID_ARGUMENT

    data = b"\x01" * (5 * 1024 * 1024)
    post(blobs, begun["upload"], data)
    clock.advance(60)
    draft = tenant.call("finish_attachment_upload", secret, id=upload["id"])
    assert (draft["state"], draft["size"]) == ("draft", len(data))
    assert draft["sha256"] == hashlib.sha256(data).hexdigest()
    assert parse_iso(draft["expires_at"]) == clock.now() + timedelta(hours=24)
    assert tenant.call("finish_attachment_upload", secret, id=upload["id"]) == draft


def test_a_large_upload_is_bounded_owned_and_timed(
    tenant: Tenant, store: MemoryStore, blobs: MemoryBlobs, clock: ManualClock
) -> None:
    _, secret = tenant.register()
    _, other = tenant.register(name="other")
    too_big, late = begin(tenant, secret), begin(tenant, secret)
    for begun in (too_big, late):
        post(blobs, begun["upload"], b"\x01" * (5 * 1024 * 1024 + (begun is too_big)))
    too_big, late = too_big["attachment"], late["attachment"]
    error = error_of(tenant.call, "finish_attachment_upload", secret, id=too_big["id"])
    assert error.code is ErrorCode.LIMIT_EXCEEDED
    theirs = error_of(tenant.call, "finish_attachment_upload", other, id=late["id"])
    assert theirs.code is ErrorCode.NOT_FOUND
    clock.advance(3601)
    expired = error_of(tenant.call, "finish_attachment_upload", secret, id=late["id"])
    assert expired.code is ErrorCode.NOT_FOUND
    assert {a.state for a in store.attachments.values()} == {"upload"}


class ReadsWatched(MemoryBlobs):
    """The bucket, with every key read (a get, the source of a copy) written down."""

    def __init__(self) -> None:
        super().__init__()
        self.read: list[str] = []

    def get(self, key: str) -> bytes | None:
        self.read.append(key)
        return super().get(key)

    def copy(self, source: str, target: str) -> None:
        self.read.append(source)
        super().copy(source, target)


def test_bytes_posted_again_with_the_form_after_finish_change_nothing_served(
    store: MemoryStore, clock: ManualClock
) -> None:
    blobs = ReadsWatched()
    tenant = Tenant(app_on(store, clock, blobs=blobs), clock, "acme")
    _, secret = tenant.register()
    reader, reader_secret = tenant.register(name="reader")
    begun = begin(tenant, secret)
    form, upload_id = begun["upload"], begun["attachment"]["id"]
    recorded = b"ten bytes!"
    post(blobs, form, recorded)
    draft = tenant.call("finish_attachment_upload", secret, id=upload_id)
    blobs.read.clear()
    served = (len(recorded), hashlib.sha256(recorded).hexdigest(), b64(recorded))

    def seen(got: dict[str, Any]) -> tuple[int, str, str]:
        return got["size"], got["sha256"], got["base64"]

    # The form stays valid for its hour: 3 MiB posted with it now are never served.
    post(blobs, form, b"\xff" * (3 * 1024 * 1024))
    assert seen(tenant.call("download_attachment", secret, id=upload_id)) == served
    assert tenant.call("finish_attachment_upload", secret, id=upload_id) == draft
    target = {"kind": "agent", "id": reader}
    tenant.call("send", secret, target=target, body="the file", attachment_ids=[upload_id])
    post(blobs, form, b"after the claim")
    assert seen(tenant.call("download_attachment", reader_secret, id=upload_id)) == served
    assert form["fields"]["key"] not in blobs.read


class GetInterleaved(MemoryBlobs):
    """The bucket, running its ``interloper`` once right after the next get has read."""

    interloper: Callable[[], None] | None = None

    def get(self, key: str) -> bytes | None:
        found = super().get(key)
        run, self.interloper = self.interloper, None
        if run is not None:
            run()
        return found


def test_two_finishes_racing_a_post_agree_on_the_bytes_served(
    store: MemoryStore, clock: ManualClock
) -> None:
    blobs = GetInterleaved()
    tenant = Tenant(app_on(store, clock, blobs=blobs), clock, "acme")
    _, secret = tenant.register()
    begun = begin(tenant, secret)
    form, upload_id = begun["upload"], begun["attachment"]["id"]
    post(blobs, form, b"first")
    finished: list[dict[str, Any]] = []

    def another_finish_after_another_post() -> None:
        post(blobs, form, b"second")
        finished.append(tenant.call("finish_attachment_upload", secret, id=upload_id))

    # This finish has read b"first" when the other one posts, finishes and wins the record.
    blobs.interloper = another_finish_after_another_post
    draft = tenant.call("finish_attachment_upload", secret, id=upload_id)
    assert finished == [draft]
    assert draft["sha256"] == hashlib.sha256(b"second").hexdigest()
    got = tenant.call("download_attachment", secret, id=upload_id)
    assert base64.b64decode(got["base64"]) == b"second"
