"""What one decision on a request costs from each surface a person or an agent decides from:
the HTTP requests it takes, the AWS calls each makes (counted at the botocore layer on moto, as
``make bench`` counts them) and their price at public on-demand prices (``costs.Meter``), each
HTTP request priced with its HTTP API and Lambda request. docs/PERFORMANCE.md, "Deciding a
request: what each surface costs", shows its output.

Usage: .venv/bin/python scripts/decision_costs.py

Each surface decides one approval (bound to an action) asked by an agent of a person, in a
fresh world with the same setup:

- MCP: one ``tools/call`` of ``reply``;
- REST: one ``POST /v1/reply``;
- CLI: ``vigil approve --yes``: ``get_request`` and ``reply``, with the CLI's User-Agent;
- console: the Approve button (its confirmation page), the confirmed form (the decision), and
  the request's page the decision redirects to;
- and one vote that leaves a 2-of-2 approval open (REST), beside the vote that decides it;
- Slack: the signed click, through the API's router as Slack sends it, then, on the notify
  side, the message redrawn through its response_url (answered 200 by an injected transport),
  priced with a Lambda request and no HTTP API one;
- email: the decision page opened (GET) and its form posted, as the person the link was made
  for, who linked a Slack user and an address beforehand.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = {"op": "deploy", "service": "checkout"}
SIGNING_SECRET = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
# A row: the surface, the HTTP request, its AWS calls, their price in USD per million.
Row = tuple[str, str, str, float]


def _measured(world: Any, step: Callable[[], Any], via_api: bool = True) -> tuple[str, float, Any]:
    from costs import Meter

    meter = Meter()
    clients = (world.dynamodb, world.sqs, world.scheduler, world.s3)
    for client in clients:
        meter.hook(client)
    try:
        result = step()
    finally:
        for client in clients:
            meter.unhook(client)
    return meter.summary(), meter.cost(via_api=via_api) * 1e6, result


def _world(policy: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
    """A fresh world where the worker asked pat (a person), and sam too with a policy."""
    from tests.faults.world import World

    world = World()
    world.register("pat", kind="person")
    targets = [{"kind": "person", "id": world.ids["pat"]}]
    if policy is not None:
        world.register("sam", kind="person")
        targets.append({"kind": "person", "id": world.ids["sam"]})
    chat = world.call("start_chat", "worker", targets=targets, body="hi")
    extra = {} if policy is None else {"policy": policy}
    asked = world.call(
        "ask",
        "worker",
        conversation_id=chat["conversation_id"],
        kind="approval",
        body="deploy?",
        action=DEPLOY,
        **extra,
    )
    return world, asked


def _post(router: Any, path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
    from vigil.kit.http import HttpRequest

    sent = {"content-type": "application/json", **headers}
    return router.handle(HttpRequest("POST", path, sent, json.dumps(body).encode()))


def _api(world: Any, who: str, user_agent: str = "python-urllib") -> tuple[Any, dict[str, str]]:
    from vigil.transports.router import Router

    headers = {"authorization": f"Bearer {world.secrets[who]}", "user-agent": user_agent}
    return Router(world.app, frozenset()), headers


def mcp() -> list[Row]:
    world, asked = _world()
    router, headers = _api(world, "pat")
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "reply",
            "arguments": {"id": asked["id"], "version": 1, "outcome": "approved"},
        },
    }
    calls, price, _ = _measured(world, lambda: _post(router, "/mcp", call, headers))
    return [("MCP", "`tools/call` of `reply`", calls, price)]


def rest() -> list[Row]:
    world, asked = _world()
    router, headers = _api(world, "pat")
    reply = {"id": asked["id"], "version": 1, "outcome": "approved"}
    calls, price, _ = _measured(world, lambda: _post(router, "/v1/reply", reply, headers))
    return [("REST", "`POST /v1/reply`", calls, price)]


def cli() -> list[Row]:
    from vigil.kit.principals import CLI_AGENT

    world, asked = _world()
    router, headers = _api(world, "pat", f"{CLI_AGENT}0")
    rows: list[Row] = []
    read = {"id": asked["id"]}
    calls, price, _ = _measured(world, lambda: _post(router, "/v1/get_request", read, headers))
    rows.append(("CLI", "`vigil approve --yes`: `get_request`", calls, price))
    reply = {"id": asked["id"], "version": 1, "outcome": "approved"}
    calls, price, _ = _measured(world, lambda: _post(router, "/v1/reply", reply, headers))
    rows.append(("CLI", "then `reply`", calls, price))
    return rows


def console() -> list[Row]:
    from tests.integration.test_console_http import Browser, field_of
    from vigil.transports.router import Router

    world, asked = _world()
    browser = Browser(Router(world.app, frozenset()))
    assert browser.sign_in(world.secrets["pat"]).status == 303
    shown = browser.get("/console/request", id=asked["id"])
    form = {
        "csrf": field_of(shown, "csrf"),
        "id": asked["id"],
        "version": "1",
        "outcome": "approved",
    }
    rows: list[Row] = []
    steps: list[tuple[str, Callable[[], Any]]] = [
        ("Approve: the confirmation page", lambda: browser.post("/console/requests/reply", form)),
        (
            "Yes, approve: the decision",
            lambda: browser.post("/console/requests/reply", {**form, "confirm": "yes"}),
        ),
        (
            "the request's page it returns to",
            lambda: browser.get("/console/request", id=asked["id"]),
        ),
    ]
    for name, step in steps:
        calls, price, response = _measured(world, step)
        assert response.status in (200, 303), (name, response.status)
        rows.append(("console", name, calls, price))
    return rows


def votes() -> list[Row]:
    world, asked = _world(policy={"quorum": "all"})
    rows: list[Row] = []
    for who, name in (("pat", "a vote that leaves it open"), ("sam", "the vote that decides it")):
        router, headers = _api(world, who)
        reply = {"id": asked["id"], "version": 1, "outcome": "approved"}

        def vote(router: Any = router, reply: Any = reply, headers: Any = headers) -> Any:
            return _post(router, "/v1/reply", reply, headers)

        calls, price, response = _measured(world, vote)
        assert response.status == 200, response.body
        rows.append(("REST, 2 of 2", name, calls, price))
    return rows


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


def slack_and_email() -> list[Row]:
    from tests.faults.world import NAMESPACE, World
    from tests.support import TEST_KEYS
    from vigil.alarms.timers import Timer
    from vigil.kit.http import HttpRequest
    from vigil.notifications.accounts import link_account
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
        link_account(
            world.store,
            AccountLink(
                namespace=NAMESPACE,
                surface=surface,  # type: ignore[arg-type]
                account=account,
                principal_id=pat,
                linked_at=world.clock.now(),
            ),
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

    rows: list[Row] = []

    def counted(name: str, step: Any, via_api: bool = True) -> Any:
        surface, _, what = name.partition(": ")
        calls, price, result = _measured(world, step, via_api)
        rows.append((surface, what, calls, price))
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

    # Email: the page opened by its person, signed in to the console, then its form posted.
    from tests.integration.test_console_http import Browser, field_of

    browser = Browser(router)
    assert browser.sign_in(world.secrets["pat"]).status == 303
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
    page = counted(
        "email: the decision page opened (GET)", lambda: browser.get(parts.path, token=token)
    )
    assert page.status == 200
    form = {
        "token": token,
        "csrf": field_of(page, "csrf"),
        "version": field_of(page, "version"),
        "outcome": "approved",
    }
    done = counted("email: its form posted (POST)", lambda: browser.post(parts.path, form))
    assert done.status == 200, done.body
    assert world.call("get_request", "ann", id=request["id"])["state"] == "approved"
    return rows


def main() -> None:
    from moto import mock_aws

    sys.path[:0] = [str(ROOT / "src"), str(ROOT / "scripts"), str(ROOT)]
    os.environ.update(AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x")
    os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
    os.environ.pop("AWS_ENDPOINT_URL", None)
    print("| surface | HTTP request | AWS calls | USD per million |")
    print("| --- | --- | --- | ---: |")
    with mock_aws():
        for surface in (mcp, rest, cli, console, votes, slack_and_email):
            for row in surface():
                where, step, calls, price = row
                print(f"| {where} | {step} | {calls} | {price:.2f} |")


if __name__ == "__main__":
    main()
