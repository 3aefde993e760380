"""Measures how late an agent's event of a new delivery reaches its webhook on the local runtime,
and checks that none is lost across a restart of the runtime nor repeated past a poll's cursor.

Usage: .venv/bin/python scripts/events_lateness.py [--count 100] [--interval 0.2]

It starts the local runtime (DynamoDB Local, moto, the event pump, the HTTP API) on a state
directory of its own, and a webhook receiver on this machine (``tests/e2e/webhook_receiver.py``:
every request verified with the Standard Webhooks reference library). Over MCP (2026-07-28), an
agent subscribes a webhook to its ``delivery.waiting`` events (``events/subscribe``) and takes a
poll cursor (``events/poll``); another agent sends it ``--count`` messages over REST, one each
``--interval`` seconds. For each event, when it first arrives: its lateness, the receiver's
arrival time minus the event's ``timestamp`` (when the delivery was told, just before its
envelope was queued).

Then the restart: ``--count`` more messages are sent, the runtime is stopped as soon as the
last is answered, started again on the same state directory, and the script waits for their
events. It fails unless every event of both rounds arrived once, verified, and a poll from the
cursor taken before the first round returns exactly the same events, in order, once each.

Both clocks are this machine's (the runtime runs in this process). It prints to stdout only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import tempfile
import threading
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# One log line per call and per timer would swamp stderr; set before vigil is imported.
os.environ.setdefault("VIGIL_LOG_LEVEL", "WARNING")

MODERN = "2026-07-28"
SECRET = "whsec_" + "ZXZlbnRzLWxhdGVuZXNzLXNjcmlwdC1zZWNyZXQtMzI="
GRACE_SECONDS = 60


class Mcp:
    """2026-07-28 requests to the MCP endpoint, with one agent's credential."""

    def __init__(self, url: str, secret: str) -> None:
        self.url = url
        self.secret = secret

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        params["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN}
        message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        headers = {
            "content-type": "application/json",
            "mcp-protocol-version": MODERN,
            "authorization": f"Bearer {self.secret}",
        }
        request = urllib.request.Request(self.url, json.dumps(message).encode(), headers)
        with urllib.request.urlopen(request, timeout=30) as response:
            reply: dict[str, Any] = json.loads(response.read())
        if "result" not in reply:
            raise RuntimeError(f"{method}: {reply.get('error')}")
        result: dict[str, Any] = reply["result"]
        return result

    def poll_all(self, cursor: str) -> list[str]:
        """Every event id after ``cursor``, page by page."""
        ids: list[str] = []
        while True:
            page = self.call("events/poll", name="delivery.waiting", arguments={}, cursor=cursor)
            if page["truncated"]:
                raise SystemExit("the poll was told events were dropped")
            ids += [event["eventId"] for event in page["events"]]
            cursor = page["cursor"]
            if not page["hasMore"]:
                return ids


def measure(count: int, interval: float) -> tuple[list[float], list[float], float]:
    """The lateness of each event of the first round and of the round across the restart, in
    seconds, and the pump's poll interval."""
    from lateness import Rest

    from tests.e2e.webhook_receiver import Received, WebhookReceiver
    from vigil.local.runtime import start

    lock = threading.Lock()
    found: list[Received] = []

    def on_receive(received: Received) -> None:
        with lock:
            found.append(received)

    def wait_for(total: int) -> None:
        deadline = time.monotonic() + count * interval + GRACE_SECONDS
        while time.monotonic() < deadline:
            with lock:
                if len(found) >= total:
                    return
            time.sleep(0.05)
        raise SystemExit(f"only {len(found)} of {total} events arrived")

    template = ROOT / "template.yaml"
    with (
        tempfile.TemporaryDirectory(prefix="vigil-events-lateness-") as directory,
        WebhookReceiver(on_receive=on_receive) as receiver,
    ):
        state_dir = Path(directory)
        with start(port=0, state_dir=state_dir, template=template) as runtime:
            operator = Rest(runtime.rest_url, runtime.operator_secret)
            reader = operator.call("register", kind="agent", name="events-reader")
            sender = Rest(
                runtime.rest_url,
                operator.call("register", kind="agent", name="events-sender")["secret"],
            )
            mcp = Mcp(runtime.mcp_url, reader["secret"])
            receiver.expect("/events", SECRET)
            delivery = {"mode": "webhook", "url": receiver.url("/events"), "secret": SECRET}
            mcp.call("events/subscribe", name="delivery.waiting", arguments={}, delivery=delivery)
            cursor = mcp.call("events/poll", name="delivery.waiting", arguments={})["cursor"]
            target = {"kind": "agent", "id": reader["principal"]["id"]}

            def send_round(label: str) -> None:
                for index in range(count):
                    sender.call("send", target=target, body=f"{label} {index}", reuse_direct=True)
                    time.sleep(interval)

            send_round("before")
            wait_for(count)
            send_round("across the restart")
            poll_interval = runtime.pump.poll_interval
        with start(port=0, state_dir=state_dir, template=template) as runtime:
            wait_for(2 * count)
            mcp = Mcp(runtime.mcp_url, reader["secret"])
            polled = mcp.poll_all(cursor)
        if receiver.unverified() or receiver.duplicates:
            raise SystemExit("a request failed verification, or an event came twice")
        arrived = [r.webhook_id for r in found]
        if sorted(polled) != sorted(arrived) or len(set(polled)) != len(polled):
            raise SystemExit("the poll and the webhook disagree, or the poll repeated an event")

    late = [
        (r.arrived_at - datetime.fromisoformat(r.body["timestamp"])).total_seconds() for r in found
    ]
    return late[:count], late[count:], poll_interval


def table(rounds: list[tuple[str, list[float]]]) -> list[str]:
    from lateness import summary

    lines = [
        "| events | count | p50 (s) | p99 (s) | max (s) | min (s) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label, values in rounds:
        figures = summary(values)
        cells = " | ".join(f"{figures[k]:.3f}" for k in ("p50", "p99", "max", "min"))
        lines.append(f"| {label} | {len(values)} | {cells} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--count", type=int, default=100, help="messages per round (default 100)")
    parser.add_argument(
        "--interval", type=float, default=0.2, help="seconds between messages (default 0.2)"
    )
    args = parser.parse_args(argv)
    if args.count < 1 or args.interval < 0:
        parser.error("--count must be at least 1 and --interval at least 0")

    load = os.getloadavg()
    started = time.monotonic()
    steady, restarted, poll_interval = measure(args.count, args.interval)
    took = time.monotonic() - started
    command = shlex.join([".venv/bin/python", "scripts/events_lateness.py", *argv])
    print(f"\nAgent event lateness, seconds ({args.count} messages a round, one webhook)")
    print(
        "\n".join(
            table(
                [
                    ("delivery.waiting, runtime up", steady),
                    ("delivery.waiting, sent before a restart", restarted),
                ]
            )
        )
    )
    print(
        f"\n- Command: `{command}` (took {took / 60:.1f} min)\n"
        f"- Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC\n"
        f"- Machine: {os.cpu_count()} CPUs (nproc), Python {platform.python_version()}, "
        f"{platform.system()} {platform.machine()}; 1-minute load average {load[0]:.1f} at "
        f"the start, {os.getloadavg()[0]:.1f} at the end\n"
        f"- The event pump polls each queue every {poll_interval:g} s; every event of both "
        "rounds arrived once, verified, and a poll from the first cursor read the same ones"
    )
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
