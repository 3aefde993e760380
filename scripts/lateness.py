"""Measures how late dead-man switches fire on the local runtime, beside what the EventBridge
Scheduler alone would give for the same deadlines.

Usage: .venv/bin/python scripts/lateness.py [--count 200] [--max-window 600] [--seed 1]
                                            [--write docs/LATENESS.md]

It starts the local runtime (DynamoDB Local, moto, the event pump, the HTTP API), registers one
agent over REST, arms ``--count`` switches with windows spread log-uniformly from 2 s to
``--max-window`` s, never beats them again, and polls ``resume_packet`` until every one has
died. Lateness is the server's own record: ``death.fired_at - death.deadline``. It prints to
stdout only, unless ``--write`` names a Markdown file to write the table to. A run with the
defaults takes about eleven minutes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import shlex
import statistics
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# One log line per call and per timer would swamp stderr; set before vigil is imported.
os.environ.setdefault("VIGIL_LOG_LEVEL", "WARNING")

MIN_WINDOW_SECONDS = 2
GRACE_SECONDS = 60
POLL_SECONDS = 1.0
# The runtime shares this process and its CPUs: a switch is looked at only this long after its
# deadline, then again at this interval, so that polling barely competes with the pump. The
# lateness is the server's record, so looking late changes nothing in it.
LOOK_EVERY_SECONDS = 5.0
# Windows shorter than this come due in bursts in this benchmark (many in its first seconds,
# while the rest are still being armed): they get a row of their own.
SHORT_WINDOW_SECONDS = 30


class Rest:
    """A principal's calls over the REST mirror. A retryable refusal (429, 503: a busy store
    under ``--contention``) is sent again up to ``retries`` times, with jittered backoff."""

    def __init__(self, base: str, secret: str, retries: int = 0) -> None:
        self.base = base.rstrip("/")
        self.secret = secret
        self.retries = retries

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        request = urllib.request.Request(
            f"{self.base}/{tool}",
            json.dumps(arguments).encode(),
            {"content-type": "application/json", "authorization": f"Bearer {self.secret}"},
            method="POST",
        )
        for attempt in range(self.retries + 1):
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    body: dict[str, Any] = json.loads(response.read())
                    return body
            except urllib.error.HTTPError as error:
                detail = error.read().decode(errors="replace")
                if error.code not in (429, 503) or attempt == self.retries:
                    raise RuntimeError(f"{tool}: HTTP {error.code}: {detail}") from None
            time.sleep(min(2.0, 0.1 * 2**attempt) * random.random())
        raise AssertionError("unreachable")


@dataclass
class Armed:
    scope: str
    window: int
    next_look: float  # monotonic, client side
    deadline: datetime | None = None
    fired_at: datetime | None = None

    @property
    def lateness(self) -> float:
        assert self.deadline is not None
        assert self.fired_at is not None
        return (self.fired_at - self.deadline).total_seconds()


def windows(count: int, max_window: int, seed: int) -> list[int]:
    """Log-uniform whole seconds in [MIN_WINDOW_SECONDS, max_window], both ends included."""
    rng = random.Random(seed)
    low, high = math.log(MIN_WINDOW_SECONDS), math.log(max_window)
    spread = [round(math.exp(rng.uniform(low, high))) for _ in range(count)]
    if count >= 2:
        spread[0], spread[1] = MIN_WINDOW_SECONDS, max_window
    return [min(max_window, max(MIN_WINDOW_SECONDS, w)) for w in spread]


def scheduler_only(deadline: datetime) -> float:
    """Lateness if the Scheduler alone fired at ``deadline``: the local pump's rule
    (``vigil.local.pump.fire_time``), the first whole minute at or after the time."""
    minute = deadline.replace(second=0, microsecond=0)
    fires = minute if minute == deadline else minute + timedelta(minutes=1)
    return (fires - deadline).total_seconds()


def percentile(values: list[float], fraction: float) -> float:
    """Nearest rank: the smallest value with at least ``fraction`` of the values at or below."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50": statistics.median(values),
        "p99": percentile(values, 0.99),
        "max": max(values),
        "min": min(values),
    }


def measure(count: int, max_window: int, seed: int) -> tuple[list[Armed], float]:
    from vigil.local.runtime import start

    with tempfile.TemporaryDirectory(prefix="vigil-lateness-") as state_dir:
        runtime = start(port=0, state_dir=Path(state_dir), template=ROOT / "template.yaml")
        with runtime:
            operator = Rest(runtime.rest_url, runtime.operator_secret)
            agent = operator.call("register", kind="agent", name="lateness-bench")
            worker = Rest(runtime.rest_url, agent["secret"])
            poll_interval = runtime.pump.poll_interval

            armed: list[Armed] = []
            started = time.monotonic()
            for index, window in enumerate(windows(count, max_window, seed)):
                scope = f"lateness-{index:04d}"
                worker.call(
                    "heartbeat",
                    scope=scope,
                    expect_within_seconds=window,
                    on_expiry=["mark_failed"],
                )
                armed.append(Armed(scope, window, time.monotonic() + window + LOOK_EVERY_SECONDS))
            print(
                f"armed {count} switches in {time.monotonic() - started:.1f} s; "
                f"waiting up to {max_window + GRACE_SECONDS} s for them to fire",
                file=sys.stderr,
                flush=True,
            )

            give_up = time.monotonic() + max_window + GRACE_SECONDS
            waiting = list(armed)
            while waiting and time.monotonic() < give_up:
                now = time.monotonic()
                still: list[Armed] = []
                for one in waiting:
                    if one.next_look > now:
                        still.append(one)
                        continue
                    packet = worker.call("resume_packet", scope=one.scope)
                    death = packet["death"]
                    if packet["state"] == "failed" and death is not None:
                        one.deadline = datetime.fromisoformat(death["deadline"])
                        one.fired_at = datetime.fromisoformat(death["fired_at"])
                    else:
                        one.next_look = time.monotonic() + LOOK_EVERY_SECONDS
                        still.append(one)
                if len(still) != len(waiting):
                    print(f"{count - len(still)}/{count} fired", file=sys.stderr, flush=True)
                waiting = still
                time.sleep(POLL_SECONDS)
            if waiting:
                names = ", ".join(a.scope for a in waiting[:5])
                raise SystemExit(f"{len(waiting)} switches never fired (e.g. {names})")
    return armed, poll_interval


# A request stays open at least this long (``expires_in_seconds``' minimum).
MIN_REQUEST_SECONDS = 10


def measure_requests(count: int, max_window: int, seed: int) -> list[float]:
    """How late requests expire: ``count`` approvals asked of a person who never answers,
    their lifetimes spread like the switches' windows (from 10 s), each looked at after its
    deadline until it reads expired. Lateness is the server's record: ``response.at -
    expires_at``."""
    from vigil.local.runtime import start

    lifetimes = [max(MIN_REQUEST_SECONDS, w) for w in windows(count, max_window, seed)]
    with tempfile.TemporaryDirectory(prefix="vigil-lateness-") as state_dir:
        runtime = start(port=0, state_dir=Path(state_dir), template=ROOT / "template.yaml")
        with runtime:
            operator = Rest(runtime.rest_url, runtime.operator_secret)
            agent = Rest(
                runtime.rest_url,
                operator.call("register", kind="agent", name="lateness-asker")["secret"],
            )
            person = operator.call("register", kind="person", name="lateness-away")
            target = {"kind": "person", "id": person["principal"]["id"]}
            waiting = {
                agent.call(
                    "ask", target=target, body="?", kind="approval", expires_in_seconds=lifetime
                )["id"]: time.monotonic() + lifetime + LOOK_EVERY_SECONDS
                for lifetime in lifetimes
            }
            found: list[float] = []
            give_up = time.monotonic() + max(lifetimes) + GRACE_SECONDS
            while waiting and time.monotonic() < give_up:
                for request_id, look in list(waiting.items()):
                    if look > time.monotonic():
                        continue
                    request = agent.call("get_request", id=request_id)
                    response = request["response"]
                    if request["state"] == "expired" and response is not None:
                        due = datetime.fromisoformat(request["expires_at"])
                        found.append((datetime.fromisoformat(response["at"]) - due).total_seconds())
                        del waiting[request_id]
                    else:
                        waiting[request_id] = time.monotonic() + LOOK_EVERY_SECONDS
                time.sleep(POLL_SECONDS)
            if waiting:
                raise SystemExit(f"{len(waiting)} requests never expired")
    return found


def table(armed: list[Armed]) -> list[str]:
    short = [a for a in armed if a.window < SHORT_WINDOW_SECONDS]
    long = [a for a in armed if a.window >= SHORT_WINDOW_SECONDS]
    samples = [
        ("Vigil, local runtime (timer queue + pump)", [a.lateness for a in armed]),
        (f"Vigil, windows under {SHORT_WINDOW_SECONDS} s", [a.lateness for a in short]),
        (f"Vigil, windows of {SHORT_WINDOW_SECONDS} s or more", [a.lateness for a in long]),
        (
            "EventBridge Scheduler alone, same deadlines",
            [scheduler_only(a.deadline) for a in armed if a.deadline is not None],
        ),
    ]
    rows = [
        "| path | count | p50 (s) | p99 (s) | max (s) | min (s) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label, values in samples:
        if not values:
            continue
        figures = summary(values)
        cells = " | ".join(f"{figures[k]:.3f}" for k in ("p50", "p99", "max", "min"))
        rows.append(f"| {label} | {len(values)} | {cells} |")
    return rows


def command_line(argv: list[str], script: str = "scripts/lateness.py") -> str:
    """The command that ran ``script`` with ``argv``, as a reader would type it here."""
    python = Path(sys.executable)
    try:
        shown = str(python.relative_to(Path.cwd()))
    except ValueError:
        shown = "python"
    return shlex.join([shown, script, *argv])


def report(
    armed: list[Armed],
    argv: list[str],
    poll_interval: float,
    max_window: int,
    took: float,
    load: tuple[float, float, float],
) -> str:
    from vigil.alarms.timers import MAX_QUEUE_DELAY_SECONDS, SCHEDULER_LEAD

    measured = [a.lateness for a in armed]
    rounding = (
        "Here the rounding adds nothing: each window is a whole number of seconds, and the "
        "delay is computed from the same clock reading as the deadline. "
    )
    if max_window > MAX_QUEUE_DELAY_SECONDS:
        lead = SCHEDULER_LEAD.total_seconds() / 60
        rounding = (
            f"Here the rounding adds nothing to windows up to {MAX_QUEUE_DELAY_SECONDS} s, each "
            "a whole number of seconds with the delay computed from the same clock reading as "
            f"the deadline; a longer window first waits on a Scheduler schedule set {lead:g} "
            "minutes before its deadline, whose timer then goes on the queue for the time left, "
            "rounded up. "
        )
    lines = [
        "# Dead-man switch lateness",
        "",
        "How long after its deadline a dead-man switch fires: `death.fired_at - death.deadline`, "
        "both server-side timestamps, for switches armed once and never beaten again.",
        "",
        *table(armed),
        "",
        f"- Command: `{command_line(argv)}` (took {took / 60:.1f} min)",
        f"- Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"- Machine: {os.cpu_count()} CPUs (nproc), Python {platform.python_version()}, "
        f"{platform.system()} {platform.machine()}; 1-minute load average {load[0]:.1f} at "
        f"the start, {os.getloadavg()[0]:.1f} at the end",
        f"- Windows: {len(armed)} switches, log-uniform whole seconds from "
        f'{MIN_WINDOW_SECONDS} s to {max_window} s, `on_expiry` `["mark_failed"]`; '
        f"{sum(1 for v in measured if v < 2.0)} of {len(armed)} fired less than 2 s late.",
        "",
        "What is measured is the whole local alarm path, not Vigil's code alone. Arming a "
        "switch sends its timer to the timer queue with `DelaySeconds` set to the time left in "
        "whole seconds, rounded up so that it never arrives early; moto hides the message "
        "until that delay has passed on its own clock; the event pump, playing the queue's "
        f"event source mapping, receives up to 10 messages every {poll_interval:g} s (plus the "
        "time its previous pass took) and hands them to the alarm function in-process, up to "
        "five batches at once, each batch one timer after the other; each fire is one "
        "conditional transaction, and `fired_at` is "
        "the alarm function's clock when it took the timer. The pump's poll interval, the time "
        "its passes spend and the SQS delay granularity are therefore part of every figure. "
        + rounding
        + "It adds up to 1 s to a switch whose alarm found the "
        "deadline moved by beats and armed the next one for the time left. The tail is the "
        "pump's and DynamoDB Local's: each fire is several calls to DynamoDB Local (one of "
        "them a TransactWriteItems), so when deadlines bunch (the short windows here, many of "
        "which fall due while the rest are still being armed) batches fill up and a timer "
        "waits for those ahead of it in its batch, and for a free batch when five are under "
        "way (`scripts/burst.py` measures a burst alone). "
        "The runtime, moto and this script share one process, and DynamoDB Local the machine's "
        "CPUs, so the "
        "machine's load (above) weighs on every figure. "
        "On AWS, moto's delay and the pump give way to SQS's own delay and the Lambda SQS "
        "poller, which this run does not measure. The last row is what the same deadlines "
        "would get from a one-shot EventBridge Scheduler schedule alone, which fires to the "
        "minute: it is computed with the local pump's rule (the first whole minute at or after "
        "the deadline, the latest AWS would), which is why Vigil hands the last "
        f"{MAX_QUEUE_DELAY_SECONDS} s of every window to the timer queue.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200, help="switches to arm (default 200)")
    parser.add_argument(
        "--max-window", type=int, default=600, help="longest window in seconds (default 600)"
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the window spread")
    parser.add_argument("--write", type=Path, help="also write the results to this Markdown file")
    args = parser.parse_args(argv)
    if args.count < 1 or args.max_window < MIN_WINDOW_SECONDS:
        parser.error(f"--count must be at least 1 and --max-window at least {MIN_WINDOW_SECONDS}")

    load = os.getloadavg()
    started = time.monotonic()
    armed, poll_interval = measure(args.count, args.max_window, args.seed)
    took = time.monotonic() - started
    print(
        f"\nDead-man switch lateness, seconds ({len(armed)} switches, "
        f"windows {MIN_WINDOW_SECONDS}-{args.max_window} s)"
    )
    print("\n".join(table(armed)))
    if args.write is not None:
        written = report(armed, argv, poll_interval, args.max_window, took, load)
        # The file's later sections are other scripts' (scripts/notify_lateness.py): kept.
        kept = args.write.read_text() if args.write.exists() else ""
        start = kept.find("\n## ")
        args.write.write_text(written + (kept[start:] if start >= 0 else ""))
        print(f"\nwritten to {args.write}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    raise SystemExit(main())
