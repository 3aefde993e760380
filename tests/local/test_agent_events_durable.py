"""An agent's events on the local runtime, across a restart: a webhook receiver that verifies
each request with the Standard Webhooks reference library gets one event per new delivery, the
ones told just before the runtime stopped once it is back, and a poll from a cursor taken
before reads the same events, none twice."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.e2e.webhook_receiver import WebhookReceiver
from tests.local.test_durable import ROOT, call
from tests.support import MODERN_META, modern_headers
from vigil.local.runtime import start

SECRET = "whsec_" + "ZHVyYWJsZS1ldmVudHMtb2YtYW4tYWdlbnQtb24tdGhlLWxhcHRvcA=="
MESSAGES = 3
WAIT_SECONDS = 30.0


def rpc(mcp_url: str, secret: str, method: str, **params: Any) -> dict[str, Any]:
    params["_meta"] = MODERN_META
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    body = json.dumps(message).encode()
    headers = {
        "content-type": "application/json",
        **modern_headers(message),
        "authorization": f"Bearer {secret}",
    }
    with urllib.request.urlopen(urllib.request.Request(mcp_url, body, headers), timeout=30) as r:
        reply: dict[str, Any] = json.loads(r.read())
    assert "result" in reply, reply
    result: dict[str, Any] = reply["result"]
    return result


def wait_for(receiver: WebhookReceiver, count: int) -> None:
    give_up = time.monotonic() + WAIT_SECONDS
    while len(receiver.events("/events")) < count:
        assert time.monotonic() < give_up, f"{len(receiver.events('/events'))} of {count}"
        time.sleep(0.1)


def test_events_reach_the_webhook_and_the_poller_across_a_restart(tmp_path: Path) -> None:
    template = ROOT / "template.yaml"
    with WebhookReceiver() as receiver:
        receiver.expect("/events", SECRET)
        with start(port=0, state_dir=tmp_path, template=template) as runtime:
            operator = runtime.operator_secret
            reader = call(runtime.rest_url, operator, "register", kind="agent", name="reader")
            sender = call(runtime.rest_url, operator, "register", kind="agent", name="sender")
            delivery = {"mode": "webhook", "url": receiver.url("/events"), "secret": SECRET}
            mcp = runtime.mcp_url
            rpc(
                mcp,
                reader["secret"],
                "events/subscribe",
                name="delivery.waiting",
                arguments={},
                delivery=delivery,
            )
            cursor = rpc(mcp, reader["secret"], "events/poll", name="delivery.waiting")["cursor"]
            target = {"kind": "agent", "id": reader["principal"]["id"]}
            for number in range(2 * MESSAGES):
                if number == MESSAGES:
                    wait_for(receiver, MESSAGES)
                call(
                    runtime.rest_url,
                    sender["secret"],
                    "send",
                    target=target,
                    body=f"message {number}",
                    reuse_direct=True,
                )
        with start(port=0, state_dir=tmp_path, template=template) as runtime:
            wait_for(receiver, 2 * MESSAGES)
            page = rpc(
                runtime.mcp_url,
                reader["secret"],
                "events/poll",
                name="delivery.waiting",
                cursor=cursor,
            )
    assert receiver.unverified() == []
    assert receiver.duplicates == 0
    received = [r.webhook_id for r in receiver.events("/events")]
    polled = [event["eventId"] for event in page["events"]]
    assert len(polled) == len(set(polled)) == 2 * MESSAGES
    assert sorted(polled) == sorted(received)
    assert {r.body["data"]["sender"] for r in receiver.events("/events")} == {
        sender["principal"]["id"]
    }
