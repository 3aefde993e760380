"""What one decision costs from Slack and from email, measured on moto. Usage:
    PYTHONPATH=src .venv/bin/python scripts/decision_costs.py

On the DynamoDB adapter (moto, the table made from template.yaml), an approval is asked of a
person who linked a Slack user and an email address; then each surface decides one, through
the API's router as the request would come in: Slack's signed click (and, on the notify side,
what the click is owed through its response_url, answered 200 by an injected transport), and
the email's decision page opened (GET) and its form posted. Each step's AWS calls are counted
at the botocore layer and priced as scripts/costs.py prices them (``Meter``), with one API
request each (the HTTP API and Lambda for a route, Lambda for the notify step).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sys
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

ROOT = Path(__file__).resolve().parents[1]
SIGNING_SECRET = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"


def _signed(body: bytes, now: float) -> dict[str, str]:
    timestamp = str(int(now))
    mac = hmac.new(SIGNING_SECRET.encode(), f"v0:{timestamp}:".encode() + body, hashlib.sha256)
    return {"x-slack-request-timestamp": timestamp, "x-slack-signature": f"v0={mac.hexdigest()}"}


def _click(request_id: str, action_id: str) -> bytes:
    payload = {
        "type": "block_actions",
        "user": {"id": "U0PAT", "team_id": "T0ACME"},
        "team": {"id": "T0ACME"},
        "response_url": "https://hooks.slack.com/actions/T0ACME/1/x",
        "actions": [{"action_id": action_id, "value": request_id, "type": "button"}],
    }
    return urlencode({"payload": json.dumps(payload)}).encode()


def measure() -> list[tuple[str, dict[str, int], float, float, float]]:
    from costs import Meter

    from tests.faults.world import NAMESPACE, World
    from tests.support import TEST_KEYS
    from vigil.alarms.timers import Timer
    from vigil.kit.http import HttpRequest
    from vigil.notifications.email_links import decision_url
    from vigil.notifications.outbound import SendResult
    from vigil.notifications.records import AccountLink
    from vigil.notifications.sending import Sender
    from vigil.notifications.slack_responses import SlackResponder
    from vigil.transports.router import Router

    world = World()
    sent: list[tuple[str, bytes]] = []

    def post(url: str, body: bytes, headers: Any, **_: Any) -> SendResult:
        sent.append((url, body))
        return SendResult("delivered", 200, "HTTP 200")

    world.app.sender = Sender(
        keys=TEST_KEYS, clock=world.clock, console_base="https://vigil.example", post=post
    )
    router = Router(world.app, frozenset())
    pat = world.register("pat", kind="person")
    world.register("ann")
    world.call(
        "create_channel",
        "operator",
        name="approvals",
        kind="slack",
        url="https://hooks.slack.com/services/T0ACME/B0/x",
        slack_signing_secret=SIGNING_SECRET,
        rules=[{"events": ["request.opened"]}],
    )
    channel_id = world.call("list_channels", "operator")["channels"][0]["id"]
    for surface, account in (("slack", "T0ACME/U0PAT"), ("email", "pat@example.com")):
        world.store.link_account(
            AccountLink(
                namespace=NAMESPACE,
                surface=surface,  # type: ignore[arg-type]
                account=account,
                principal_id=pat,
                linked_at=world.clock.now(),
            )
        )

    def ask() -> dict[str, Any]:
        return world.call(
            "ask",
            "ann",
            target={"kind": "person", "id": pat},
            kind="approval",
            body="May I deploy?",
            action={"op": "deploy"},
        )

    # A first decision, uncounted: the requester's mailbox queue is made on its first answer.
    warm_up = ask()
    world.call("reply", "pat", id=warm_up["id"], outcome="approved", version=warm_up["version"])

    rows = []
    clients = (world.dynamodb, world.sqs, world.scheduler)

    def counted(name: str, step: Any, via_api: bool = True) -> Any:
        meter = Meter()
        for client in clients:
            meter.hook(client)
        try:
            result = step()
        finally:
            for client in clients:
                meter.unhook(client)
        calls = dict(meter.calls)
        price = meter.cost(via_api=via_api) * 1e6
        rows.append((name, calls, meter.write_units, meter.read_units, price))
        return result

    # Slack: the click, then what it is owed.
    request = ask()
    body = _click(request["id"], "vigil.approve")
    headers = {"content-type": "application/x-www-form-urlencoded"}
    headers.update(_signed(body, world.clock.now().timestamp()))
    path = f"/integrations/slack/{NAMESPACE}/{channel_id}"
    answer = counted(
        "Slack: the signed click (route)",
        lambda: router.handle(HttpRequest("POST", path, headers, body)),
    )
    assert answer.status == 200, answer
    assert world.call("get_request", "ann", id=request["id"])["state"] == "approved"
    response_id = hashlib.sha256(headers["x-slack-signature"].encode()).hexdigest()[:32]
    responder = SlackResponder(world.store, world.clock, world.alarms, world.app.sender)
    timer = Timer(
        kind="slackresponse",
        namespace=NAMESPACE,
        key=response_id,
        generation=1,
        due_at=world.clock.now(),
    )
    counted("Slack: the message redrawn (notify)", lambda: responder.on_timer(timer), False)
    assert json.loads(sent[-1][1])["replace_original"] is True

    # Email: the page opened, then its form posted.
    request = ask()
    expires = world.call("get_request", "ann", id=request["id"])["expires_at"]
    link = decision_url(
        TEST_KEYS,
        "https://vigil.example",
        NAMESPACE,
        request["id"],
        pat,
        datetime.fromisoformat(expires),
    )
    parts = urlsplit(link)
    token = parse_qs(parts.query)["token"][0]
    host = {"host": "vigil.example", "x-forwarded-proto": "https"}
    page = counted(
        "email: the decision page opened (GET)",
        lambda: router.handle(HttpRequest("GET", parts.path, host, b"", query={"token": token})),
    )
    assert page.status == 200
    version = world.call("get_request", "ann", id=request["id"])["version"]
    form = urlencode({"token": token, "version": version, "outcome": "approved"}).encode()
    posted = {
        **host,
        "content-type": "application/x-www-form-urlencoded",
        "sec-fetch-site": "same-origin",
    }
    done = counted(
        "email: its form posted (POST)",
        lambda: router.handle(HttpRequest("POST", parts.path, posted, form)),
    )
    assert done.status == 200, done.body
    assert world.call("get_request", "ann", id=request["id"])["state"] == "approved"
    return rows


def main() -> int:
    sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]
    os.environ.update(AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x")
    os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
    os.environ.pop("AWS_ENDPOINT_URL", None)
    from moto import mock_aws

    with mock_aws():
        rows = measure()
    print("| step | AWS calls | WRU | RRU | requests, USD per million |")
    print("| --- | --- | ---: | ---: | ---: |")
    for name, calls, wru, rru, price in rows:
        listed = ", ".join(f"{k} {v}" for k, v in sorted(calls.items()))
        print(f"| {name} | {listed} | {wru:g} | {rru:g} | {price:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
