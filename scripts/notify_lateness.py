"""Measures how late a fired switch's notification reaches a webhook on the local runtime.

Usage: .venv/bin/python scripts/notify_lateness.py [--count 100] [--spread 50]

It starts the local runtime (DynamoDB Local, moto, the event pump, the HTTP API), starts a
webhook receiver on this machine (``tests/e2e/webhook_receiver.py``: every request verified
with the Standard Webhooks reference library), creates a webhook channel to it for the
switch.fired events of its scopes, registers one agent over REST and arms ``--count`` switches
whose windows are staggered over ``--spread`` seconds (from 2 s, about as many falling due each
second), never beating them again. For each event, when it first arrives:

- delivery lateness: the receiver's arrival time minus the event's ``occurred_at`` (the
  switch's ``fired_at``): the outbox, the notify queue, the pump and the signed POST;
- lateness after the deadline: the arrival minus the switch's deadline, which adds how late
  the switch fired (``fired_at - deadline``, printed too).

Both clocks are this machine's (the runtime runs in this process). It prints to stdout only.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# One log line per call and per timer would swamp stderr; set before vigil is imported.
os.environ.setdefault("VIGIL_LOG_LEVEL", "WARNING")

MIN_WINDOW_SECONDS = 2
GRACE_SECONDS = 60
SCOPE_PREFIX = "notify-lateness-"


def windows(count: int, spread: int) -> list[int]:
    """Whole seconds from MIN_WINDOW_SECONDS to MIN_WINDOW_SECONDS + ``spread``, in order,
    as evenly as whole seconds allow."""
    return [MIN_WINDOW_SECONDS + (i * spread) // max(1, count) for i in range(count)]


def measure(count: int, spread: int) -> tuple[list[dict[str, float]], float, float]:
    """Per event: its delivery lateness, its lateness after the deadline and how late its
    switch fired, in seconds; and the pump's poll interval and the time arming took."""
    from lateness import Rest

    from tests.e2e.webhook_receiver import Received, WebhookReceiver
    from vigil.local.runtime import start

    arrived = threading.Event()
    found: list[Received] = []

    def on_receive(received: Received) -> None:
        if received.type == "switch.fired":
            found.append(received)
            if len(found) >= count:
                arrived.set()

    with (
        tempfile.TemporaryDirectory(prefix="vigil-notify-lateness-") as state_dir,
        WebhookReceiver(on_receive=on_receive) as receiver,
        start(port=0, state_dir=Path(state_dir), template=ROOT / "template.yaml") as runtime,
    ):
        operator = Rest(runtime.rest_url, runtime.operator_secret)
        issued = operator.call(
            "create_channel",
            name="lateness receiver",
            kind="webhook",
            url=receiver.url("/hook"),
            rules=[{"events": ["switch.fired"], "scope_prefix": SCOPE_PREFIX}],
        )
        receiver.expect("/hook", issued["signing_secret"])
        worker = Rest(
            runtime.rest_url,
            operator.call("register", kind="agent", name="notify-lateness")["secret"],
        )
        started = time.monotonic()
        for index, window in enumerate(windows(count, spread)):
            worker.call(
                "heartbeat",
                scope=f"{SCOPE_PREFIX}{index:04d}",
                expect_within_seconds=window,
                on_expiry=["mark_failed"],
            )
        arming = time.monotonic() - started
        print(f"armed {count} switches in {arming:.1f} s", file=sys.stderr, flush=True)
        if not arrived.wait(MIN_WINDOW_SECONDS + spread + GRACE_SECONDS):
            raise SystemExit(f"only {len(found)} of {count} notifications arrived")
        if receiver.unverified() or receiver.duplicates:
            raise SystemExit("a request failed verification, or an event came twice")
        poll_interval = runtime.pump.poll_interval

    rows = []
    for received in found:
        data = received.body["data"]
        occurred = datetime.fromisoformat(received.body["occurred_at"])
        deadline = datetime.fromisoformat(data["deadline"])
        rows.append(
            {
                "delivery": (received.arrived_at - occurred).total_seconds(),
                "after_deadline": (received.arrived_at - deadline).total_seconds(),
                "fire": float(data["lateness_seconds"]),
            }
        )
    return rows, poll_interval, arming


def table(rows: list[dict[str, float]]) -> list[str]:
    from lateness import summary

    lines = [
        "| measure | count | p50 (s) | p99 (s) | max (s) | min (s) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for key, label in (
        ("delivery", "arrival - occurred_at (the switch's fired_at)"),
        ("after_deadline", "arrival - the switch's deadline"),
        ("fire", "for reference: fired_at - deadline"),
    ):
        figures = summary([row[key] for row in rows])
        cells = " | ".join(f"{figures[k]:.3f}" for k in ("p50", "p99", "max", "min"))
        lines.append(f"| {label} | {len(rows)} | {cells} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--count", type=int, default=100, help="switches to fire (default 100)")
    parser.add_argument(
        "--spread", type=int, default=50, help="seconds their deadlines spread over (default 50)"
    )
    args = parser.parse_args(argv)
    if args.count < 1 or args.spread < 0:
        parser.error("--count must be at least 1 and --spread at least 0")

    load = os.getloadavg()
    started = time.monotonic()
    rows, poll_interval, arming = measure(args.count, args.spread)
    took = time.monotonic() - started
    command = shlex.join([".venv/bin/python", "scripts/notify_lateness.py", *argv])
    print(
        f"\nNotification delivery lateness, seconds ({len(rows)} switch.fired events to one "
        f"webhook, windows {MIN_WINDOW_SECONDS}-{MIN_WINDOW_SECONDS + args.spread} s)"
    )
    print("\n".join(table(rows)))
    print(
        f"\n- Command: `{command}` (took {took / 60:.1f} min; arming took {arming:.1f} s)\n"
        f"- Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC\n"
        f"- Machine: {os.cpu_count()} CPUs (nproc), Python {platform.python_version()}, "
        f"{platform.system()} {platform.machine()}; 1-minute load average {load[0]:.1f} at "
        f"the start, {os.getloadavg()[0]:.1f} at the end\n"
        f"- The event pump polls each queue every {poll_interval:g} s"
    )
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
