"""Slack's interactions on the local runtime, over HTTP, with the payloads' recorded shape: a
click signed with Slack's own signer (``slack_sdk``) reaches the interactions route; unlinked,
its user is sent (through the response_url, by the notify function the event pump runs) a
console link, which the person binds signed in; then a click approves, the message is redrawn
in place, a replayed click changes nothing and a badly signed one is refused.

The response_url is a receiver on this machine, which only the local runtime posts to
(deployed, only https://hooks.slack.com/ is)."""

from __future__ import annotations

import html
import json
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from slack_sdk.signature import SignatureVerifier

from tests.e2e.test_console_sign_out import Client
from tests.e2e.test_people_cli import rest

pytestmark = pytest.mark.e2e

SIGNING_SECRET = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
DEADLINE_SECONDS = 20.0


class Receiver:
    """A response_url on this machine: keeps every JSON body posted to it."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        received = self.bodies

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                received.append(json.loads(self.rfile.read(length)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/actions/T0ACME/1/abc"

    def wait_for(self, count: int) -> list[dict[str, Any]]:
        deadline = time.monotonic() + DEADLINE_SECONDS
        while len(self.bodies) < count:
            assert time.monotonic() < deadline, f"only {len(self.bodies)} of {count} arrived"
            time.sleep(0.1)
        return self.bodies


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    thread = threading.Thread(target=running.server.serve_forever, daemon=True)
    thread.start()
    yield running
    running.server.shutdown()


def click_body(user: str, action_id: str, request_id: str, response_url: str, n: int) -> bytes:
    payload = {
        "type": "block_actions",
        "user": {"id": user, "username": "pat", "name": "pat", "team_id": "T0ACME"},
        "api_app_id": "A0VIGIL",
        "token": "legacy-verification-token",
        "container": {"type": "message", "message_ts": "1733227200.000100", "channel_id": "C0"},
        "trigger_id": f"1733227201.42.abc{n}",
        "team": {"id": "T0ACME", "domain": "acme"},
        "channel": {"id": "C0", "name": "approvals"},
        "message": {"type": "message", "ts": "1733227200.000100", "text": "Approval opened"},
        "state": {"values": {}},
        "response_url": response_url,
        "actions": [
            {
                "action_id": action_id,
                "block_id": "vigil",
                "value": request_id,
                "type": "button",
                "action_ts": f"1733227201.{n:06d}",
            }
        ],
    }
    return urlencode({"payload": json.dumps(payload)}).encode()


def post(url: str, body: bytes, secret: str = SIGNING_SECRET) -> int:
    timestamp = str(int(time.time()))
    signature = SignatureVerifier(secret).generate_signature(timestamp=timestamp, body=body)
    assert signature is not None
    return send(url, body, {"x-slack-request-timestamp": timestamp, "x-slack-signature": signature})


def send(url: str, body: bytes, headers: dict[str, str]) -> int:
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"content-type": "application/x-www-form-urlencoded", **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as refused:
        return int(refused.code)


def test_a_signed_click_approves_and_a_replayed_or_badly_signed_one_changes_nothing(
    state: dict[str, Any], receiver: Receiver
) -> None:
    base = state["mcp_url"].removesuffix("/mcp")
    operator = state["operator_secret"]
    pat = rest(base, operator, "register", kind="person", name="Pat Doe", role="worker")
    ann = rest(base, operator, "register", kind="agent", name="ann", role="worker")
    channel = rest(
        base,
        operator,
        "create_channel",
        name="approvals",
        kind="slack",
        url="https://hooks.slack.com/services/T0ACME/B0/secretpath",
        slack_signing_secret=SIGNING_SECRET,
        rules=[{"events": ["request.opened"]}],
    )["channel"]
    asked = rest(
        base,
        ann["secret"],
        "ask",
        target={"kind": "person", "id": pat["principal"]["id"]},
        kind="approval",
        body="May I deploy?",
        action={"op": "deploy"},
    )
    namespace = rest(base, operator, "whoami")["principal"]["namespace"]
    route = f"{base}/integrations/slack/{namespace}/{channel['id']}"

    def current() -> dict[str, Any]:
        return rest(base, ann["secret"], "get_request", id=asked["id"])

    # Unlinked: the click decides nothing; the user is sent a console link.
    first = click_body("U0PAT", "vigil.approve", asked["id"], receiver.url, 1)
    assert post(route, first) == 200
    [note] = receiver.wait_for(1)
    assert note["response_type"] == "ephemeral"
    assert current()["state"] == "open"
    link = re.search(r"<(\S+/console/link\?\S+)\|", note["text"])
    assert link is not None

    # Pat binds it, signed in to the console.
    console = Client(base)
    csrf = console.csrf("/console/sign-in")
    signed_in, _ = console.send("POST", "/console/sign-in", {"csrf": csrf, "secret": pat["secret"]})
    assert signed_in == 303
    parts = urlsplit(link.group(1))
    status, page = console.send("GET", f"{parts.path}?{parts.query}")
    assert status == 200
    token = parse_qs(parts.query)["token"][0]
    form_csrf = html.unescape(re.search(r'name="csrf" value="([^"]*)"', page).group(1))  # type: ignore[union-attr]
    status, _ = console.send("POST", "/console/link", {"csrf": form_csrf, "token": token})
    assert status == 200

    # A badly signed click is refused and changes nothing.
    approve = click_body("U0PAT", "vigil.approve", asked["id"], receiver.url, 2)
    assert post(route, approve, secret="ffffffffffffffffffffffffffffffff") == 401
    assert current()["state"] == "open"

    # The signed click approves, as Pat; the message is redrawn in place.
    timestamp = str(int(time.time()))
    signature = SignatureVerifier(SIGNING_SECRET).generate_signature(
        timestamp=timestamp, body=approve
    )
    headers = {"x-slack-request-timestamp": timestamp, "x-slack-signature": str(signature)}
    assert send(route, approve, headers) == 200
    decided = current()
    assert decided["state"] == "approved"
    assert decided["response"]["by"] == pat["principal"]["id"]
    update = receiver.wait_for(2)[1]
    assert update["replace_original"] is True
    assert "Approved by Pat Doe" in json.dumps(update)

    # The same signed click, replayed: nothing changes, and it is owed nothing. A later,
    # new click is told who decided: the only bodies after the update are its own (the
    # message redrawn again, and its note).
    assert send(route, approve, headers) == 200
    assert current() == decided
    late = click_body("U0PAT", "vigil.deny", asked["id"], receiver.url, 3)
    assert post(route, late) == 200
    bodies = receiver.wait_for(4)
    assert bodies[2]["replace_original"] is True
    assert "already approved by Pat Doe" in bodies[3]["text"]
    assert len(bodies) == 4
    assert current() == decided
