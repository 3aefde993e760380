"""Attachments end to end on the local runtime: a draft at exactly 64 KiB over MCP with the
official SDK client, one byte more refused, and a 5 MiB file through the REST mirror and a
presigned S3 form, as the README shows."""

from __future__ import annotations

import base64
import hashlib
import json
import urllib.error
import urllib.request
from contextlib import AsyncExitStack
from typing import Any

import anyio

from tests.e2e.clients import open_session


def rest(state: dict[str, Any], tool: str, secret: str, **arguments: Any) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{state['rest_url']}/{tool}",
        data=json.dumps(arguments).encode(),
        headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return dict(json.loads(response.read()))


def rest_error(state: dict[str, Any], tool: str, secret: str, **arguments: Any) -> dict[str, Any]:
    """The typed error of a REST call that must be refused."""
    try:
        rest(state, tool, secret, **arguments)
    except urllib.error.HTTPError as error:
        return dict(json.loads(error.read())["error"])
    raise AssertionError(f"{tool} was not refused")


def post_form(url: str, fields: dict[str, str], data: bytes) -> int:
    """A browser-style multipart POST: the form's fields, then the file, last."""
    boundary = "vigil-e2e-boundary"
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
        for name, value in fields.items()
    ]
    body = "".join(parts).encode()
    body += (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    body += data + f"\r\n--{boundary}--\r\n".encode()
    request = urllib.request.Request(
        url,
        data=body,
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return int(response.status)


def test_a_draft_of_exactly_64_kib_over_mcp_and_one_byte_more_refused(
    state: dict[str, Any],
) -> None:
    agent = rest(state, "register", state["operator_secret"], kind="agent", name="stager")
    data = bytes(range(256)) * 256

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        async with AsyncExitStack() as stack:
            session = await open_session(stack, state["mcp_url"], agent["secret"])
            staged = await session.call(
                "stage_attachment",
                base64=base64.b64encode(data).decode(),
                file_name="exact.bin",
                media_type="application/octet-stream",
            )
            refused = await session.attempt(
                "stage_attachment",
                base64=base64.b64encode(data + b"!").decode(),
                file_name="over.bin",
                media_type="application/octet-stream",
            )
            return staged, refused

    staged, refused = anyio.run(scenario)
    assert (staged["size"], staged["sha256"]) == (len(data), hashlib.sha256(data).hexdigest())
    assert refused["error"]["code"] == "limit_exceeded"

    # Attached to a message, the file reaches its reader whole; a second claim is refused.
    reader = rest(state, "register", state["operator_secret"], kind="agent", name="reader")
    target = {"kind": "agent", "id": reader["principal"]["id"]}
    sent = rest(
        state,
        "send",
        agent["secret"],
        target=target,
        body="the file",
        attachment_ids=[staged["id"]],
    )

    async def read() -> tuple[dict[str, Any], dict[str, Any]]:
        async with AsyncExitStack() as stack:
            session = await open_session(stack, state["mcp_url"], reader["secret"])
            got = await session.call("download_attachment", id=staged["id"])
            history = await session.call("get_conversation", id=sent["conversation_id"])
            return got, history

    got, history = anyio.run(read)
    assert base64.b64decode(got["base64"]) == data
    assert history["messages"][0]["attachments"][0]["sha256"] == staged["sha256"]
    again = rest_error(
        state, "send", agent["secret"], target=target, body="again", attachment_ids=[staged["id"]]
    )
    assert again["code"] == "invalid_argument"


def test_five_mib_through_the_rest_mirror_and_a_presigned_form(state: dict[str, Any]) -> None:
    agent = rest(state, "register", state["operator_secret"], kind="agent", name="uploader")
    secret = agent["secret"]
    begun = rest(
        state, "begin_attachment_upload", secret, file_name="big.bin", media_type="image/png"
    )
    data = bytes(range(256)) * (5 * 1024 * 4)  # 5 MiB
    form = begun["upload"]
    assert post_form(form["url"], form["fields"], data) in (200, 201, 204)
    draft = rest(state, "finish_attachment_upload", secret, id=begun["attachment"]["id"])
    assert (draft["state"], draft["size"]) == ("draft", 5 * 1024 * 1024)
    assert draft["sha256"] == hashlib.sha256(data).hexdigest()
    # Sent, it is read back through a presigned URL.
    reader = rest(state, "register", state["operator_secret"], kind="agent", name="big-reader")
    target = {"kind": "agent", "id": reader["principal"]["id"]}
    rest(state, "send", secret, target=target, body="big", attachment_ids=[draft["id"]])
    got = rest(state, "download_attachment", reader["secret"], id=draft["id"])
    assert got["base64"] is None
    with urllib.request.urlopen(got["download_url"], timeout=60) as response:
        assert hashlib.sha256(response.read()).hexdigest() == draft["sha256"]
        # A browser that follows the URL saves the bytes; it never shows them as a page.
        assert response.headers["content-disposition"] == "attachment"
        assert response.headers["content-type"] == "application/octet-stream"


def test_the_form_posted_again_after_finish_changes_nothing_served(state: dict[str, Any]) -> None:
    owner = rest(state, "register", state["operator_secret"], kind="agent", name="reposter")
    reader = rest(state, "register", state["operator_secret"], kind="agent", name="repost-reader")
    begun = rest(
        state,
        "begin_attachment_upload",
        owner["secret"],
        file_name="a.txt",
        media_type="text/plain",
    )
    form, attachment_id = begun["upload"], begun["attachment"]["id"]
    recorded = b"ten bytes!"
    assert post_form(form["url"], form["fields"], recorded) in (200, 201, 204)
    draft = rest(state, "finish_attachment_upload", owner["secret"], id=attachment_id)
    served = {
        "size": len(recorded),
        "sha256": hashlib.sha256(recorded).hexdigest(),
        "base64": base64.b64encode(recorded).decode(),
    }

    def seen(got: dict[str, Any]) -> dict[str, Any]:
        return {name: got[name] for name in served}

    # The form works for its hour, after the finish too: what it posts now is never served.
    assert post_form(form["url"], form["fields"], b"\xff" * (3 * 1024 * 1024)) in (200, 201, 204)
    assert seen(rest(state, "download_attachment", owner["secret"], id=attachment_id)) == served
    assert rest(state, "finish_attachment_upload", owner["secret"], id=attachment_id) == draft
    target = {"kind": "agent", "id": reader["principal"]["id"]}
    rest(state, "send", owner["secret"], target=target, body="a", attachment_ids=[attachment_id])
    assert post_form(form["url"], form["fields"], b"after the claim") in (200, 201, 204)
    assert seen(rest(state, "download_attachment", reader["secret"], id=attachment_id)) == served
