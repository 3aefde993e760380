"""A finished upload serves the bytes it recorded, whatever its form posts later, and a crash at
any AWS call of finish_attachment_upload converges on the retry: the bytes recorded are the
bytes sealed and served, and nothing reads what the form put once the record says finished."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import pytest

from tests.faults.injector import Fault
from tests.faults.world import BUCKET, NAMESPACE, World
from vigil.errors import VigilError

FIRST = b"first bytes"
SECOND = b"second bytes, posted after the crash"
LATER = b"\xff" * (3 * 1024 * 1024)


def begun(world: World) -> tuple[str, dict[str, Any]]:
    started = world.call(
        "begin_attachment_upload", "worker", file_name="big.bin", media_type="text/plain"
    )
    return started["attachment"]["id"], started["upload"]


def post(world: World, form: dict[str, Any], data: bytes) -> None:
    """What the presigned form's POST does: the bytes at its key, replacing any there."""
    world.s3.put_object(Bucket=BUCKET, Key=form["fields"]["key"], Body=data)


def served(world: World, attachment_id: str) -> bytes:
    """The bytes a recipient of the file downloads, once it is sent."""
    target = {"kind": "agent", "id": world.ids["watcher"]}
    world.call("send", "worker", target=target, body="file", attachment_ids=[attachment_id])
    got = world.call("download_attachment", "watcher", id=attachment_id)
    return base64.b64decode(got["base64"])


def finish_calls() -> list[str]:
    """The AWS calls of one clean finish_attachment_upload."""
    world = World()
    attachment_id, form = begun(world)
    post(world, form, FIRST)
    world.injector.reset()
    world.call("finish_attachment_upload", "worker", id=attachment_id)
    return list(world.injector.calls)


def test_a_crash_at_any_call_of_finish_converges_on_the_retry(aws: None) -> None:
    calls = finish_calls()
    # The steps, each a call a crash can follow: read the posted bytes, seal them, record the
    # draft, delete what the form put.
    steps = ["s3.GetObject", "s3.PutObject", "dynamodb.PutItem", "s3.DeleteObject"]
    assert [c for c in calls if c in steps] == steps
    for index in range(len(calls)):
        crash_at(index)


def crash_at(index: int) -> None:
    world = World()
    attachment_id, form = begun(world)
    post(world, form, FIRST)
    world.injector.plan(index, Fault("crash"))
    with pytest.raises(VigilError):
        world.call("finish_attachment_upload", "worker", id=attachment_id)
    world.restart()
    stored = world.store.get_attachment(NAMESPACE, attachment_id)
    assert stored is not None
    finished_before = stored.state == "draft"
    # The form still works: what it posts before the retry counts only if not yet finished.
    post(world, form, SECOND)
    draft = world.call("finish_attachment_upload", "worker", id=attachment_id)
    expected = FIRST if finished_before else SECOND
    assert (draft["size"], draft["sha256"]) == (len(expected), hashlib.sha256(expected).hexdigest())
    listed = world.s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])
    assert form["fields"]["key"] not in {o["Key"] for o in listed}, f"crash at {index}"
    post(world, form, LATER)
    assert world.call("finish_attachment_upload", "worker", id=attachment_id) == draft
    assert served(world, attachment_id) == expected, f"crash at {index}"
