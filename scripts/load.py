"""Load on the local runtime over HTTP: many simulated agents at once, for a fixed time.

Usage: .venv/bin/python scripts/load.py [--agents 50] [--seconds 60] [--window 30]

Starts the local runtime in this process (moto, the event pump, the HTTP API on 127.0.0.1, a
free port), registers ``--agents`` agents through REST, and runs one thread per agent until
``--seconds`` have passed. Each agent:

- beats its own dead-man switch (``heartbeat``, window ``--window`` s, ``mark_failed``) every
  third of the window, from a thread of its own, as a live agent's timer would;
- in a loop, queues one envelope into the next agent's mailbox. There is no send tool yet, so
  this goes through ``vigil.mailboxes.service.deliver``, the one delivery path, called in-process
  on the runtime's own store and queues (the App the HTTP handler serves with), and is timed
  as ``deliver (in-process)``; then polls its mailbox (``inbox_poll``) and acknowledges every
  delivery it gets; every fifth round, takes a lease on its own resource, renews it and
  releases it (each with an idempotency key).

Agents arrive over ``RAMP_UP_SECONDS``. When the time is up each agent disarms its switch; then
every mailbox is drained until each envelope has come back (bounded). It passes (exit 0) only
with zero errors, every sent envelope received and acknowledged exactly once, and no switch
fired while its agent was alive. It prints the latency distribution per tool (client side,
HTTP round trip). A call answered 429/503 (retryable) or dropped is retried up to RETRIES times
with backoff, as the API asks of clients; the retries are counted and printed. Traffic goes to
127.0.0.1 only; every loop is bounded in rounds and time.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
# One log line per call would swamp stderr; set before vigil is imported.
os.environ.setdefault("VIGIL_LOG_LEVEL", "WARNING")

MAX_ROUNDS = 100_000  # per agent: a bound in count beside the bound in time
LEASE_EVERY = 5
DELIVERY_LEASE_SECONDS = 60
HTTP_TIMEOUT_SECONDS = 30
RETRIES = 3
BACKOFF_SECONDS = 0.2
RAMP_UP_SECONDS = 5.0


class CallFailed(Exception):
    pass


class Retryable(Exception):
    pass


class Rest:
    """One agent's keep-alive connection to the REST API, timing every call by tool."""

    def __init__(self, base_url: str, secret: str, latencies: Latencies) -> None:
        parts = urlsplit(base_url)
        if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"loopback only, not {parts.hostname}")
        self.host, self.port, self.prefix = parts.hostname, parts.port, parts.path.rstrip("/")
        self.secret = secret
        self.latencies = latencies
        self.connection: http.client.HTTPConnection | None = None

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """One call, retried (bounded, with backoff) after a retryable error or a dropped
        connection, as the API asks of its clients: every call made here is safe to repeat
        (the lease calls carry an idempotency key)."""
        for attempt in range(RETRIES + 1):
            try:
                return self._once(tool, arguments)
            except Retryable as error:
                if attempt == RETRIES:
                    raise CallFailed(str(error)) from None
                self.latencies.retried(tool)
                time.sleep(BACKOFF_SECONDS * 2**attempt)
        raise AssertionError("unreachable")

    def _once(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps(arguments).encode()
        headers = {"content-type": "application/json", "authorization": f"Bearer {self.secret}"}
        started = time.perf_counter()
        try:
            if self.connection is None:
                self.connection = http.client.HTTPConnection(
                    self.host, self.port, timeout=HTTP_TIMEOUT_SECONDS
                )
            self.connection.request("POST", f"{self.prefix}/{tool}", body, headers)
            response = self.connection.getresponse()
            payload = response.read()
        except (OSError, http.client.HTTPException) as error:
            self.close()
            raise Retryable(f"{tool}: {type(error).__name__}: {error}") from None
        finally:
            self.latencies.add(tool, time.perf_counter() - started)
        if response.status in (429, 503):
            raise Retryable(f"{tool}: HTTP {response.status}: {payload[:200]!r}")
        if response.status != 200:
            raise CallFailed(f"{tool}: HTTP {response.status}: {payload[:200]!r}")
        result: dict[str, Any] = json.loads(payload)
        return result

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


class Latencies:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.seconds: dict[str, list[float]] = defaultdict(list)
        self.retries: Counter[str] = Counter()

    def retried(self, name: str) -> None:
        with self._lock:
            self.retries[name] += 1

    def add(self, name: str, seconds: float) -> None:
        with self._lock:
            self.seconds[name].append(seconds)

    def timed(self, name: str, action: Callable[[], Any]) -> Any:
        started = time.perf_counter()
        try:
            return action()
        finally:
            self.add(name, time.perf_counter() - started)


def percentile(values: list[float], fraction: float) -> float:
    """Nearest rank: the smallest value with at least ``fraction`` of the values at or below."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def latency_rows(
    latencies: dict[str, list[float]],
) -> list[tuple[str, int, float, float, float, float]]:
    """(name, count, p50, p95, p99, max) in milliseconds, busiest first."""
    rows = []
    for name, values in sorted(latencies.items(), key=lambda kv: -len(kv[1])):
        ms = [v * 1000 for v in values]
        rows.append(
            (
                name,
                len(ms),
                percentile(ms, 0.5),
                percentile(ms, 0.95),
                percentile(ms, 0.99),
                max(ms),
            )
        )
    return rows


@dataclass
class Ledger:
    """Every envelope sent, received and acknowledged, by id, across all agents."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    sent: dict[str, str] = field(default_factory=dict)  # envelope id -> recipient agent id
    received: Counter[str] = field(default_factory=Counter)
    acked: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)

    def error(self, text: str) -> None:
        with self.lock:
            self.errors.append(text)


@dataclass
class Agent:
    index: int
    id: str
    rest: Rest  # the agent's work
    beats: Rest  # its heartbeat, on a connection of its own
    scope: str
    address: str
    rounds: int = 0


class Sender:
    """Queues envelopes through vigil.mailboxes.service.deliver on the runtime's own App."""

    def __init__(self, namespace: str) -> None:
        from vigil.entrypoints.api import router

        self.app = router().app
        self.namespace = namespace

    def send(self, sender: Agent, to: Agent, sequence: int) -> str:
        from vigil.mailboxes.records import Envelope, envelope_id_for
        from vigil.mailboxes.service import deliver

        assert self.app.queues is not None
        envelope = Envelope(
            id=envelope_id_for(uuid.uuid4().hex),
            namespace=self.namespace,
            address=to.address,
            sender=sender.id,
            kind="message",
            payload={"from": sender.index, "sequence": sequence},
            sent_at=self.app.clock.now(),
        )
        deliver(
            self.app.store, self.app.queues, self.app.clock, self.namespace, to.address, envelope
        )
        return envelope.id


def poll(agent: Agent, ledger: Ledger) -> int:
    got = agent.rest.call(
        "inbox_poll", max_messages=10, lease_seconds=DELIVERY_LEASE_SECONDS, wait_seconds=0
    )
    for delivery in got["deliveries"]:
        with ledger.lock:
            ledger.received[delivery["id"]] += 1
        agent.rest.call("acknowledge", id=delivery["id"], generation=delivery["generation"])
        with ledger.lock:
            ledger.acked[delivery["id"]] += 1
    return len(got["deliveries"])


def lease_cycle(agent: Agent) -> None:
    resource = f"resource-{agent.index}"
    key = f"{agent.scope}-{agent.rounds}"
    lease = agent.rest.call(
        "acquire_lease",
        resource=resource,
        scope=agent.scope,
        ttl_seconds=60,
        idempotency_key=f"{key}-acquire",
    )
    generation = lease["lease"]["generation"]
    agent.rest.call(
        "renew_lease",
        resource=resource,
        generation=generation,
        ttl_seconds=60,
        idempotency_key=f"{key}-renew",
    )
    agent.rest.call(
        "release_lease", resource=resource, generation=generation, idempotency_key=f"{key}-release"
    )


def beat_until(agent: Agent, ledger: Ledger, window: int, stop: threading.Event) -> None:
    """The agent's heartbeat, on its own timer as a live agent's would be: every third of the
    window, whatever its work is doing."""
    beat = {"scope": agent.scope, "expect_within_seconds": window, "on_expiry": ["mark_failed"]}
    for _ in range(MAX_ROUNDS):
        try:
            answer = agent.beats.call("heartbeat", agent_id=f"load-{agent.index}", **beat)
            if answer["death"] is not None:
                ledger.error(f"agent {agent.index}: its switch fired while it was alive")
        except Exception as error:
            ledger.error(f"agent {agent.index}: {error}")
        if stop.wait(window / 3):
            return


def run_agent(
    agent: Agent,
    peer: Agent,
    sender: Sender,
    ledger: Ledger,
    latencies: Latencies,
    window: int,
    stop_at: float,
) -> None:
    stop = threading.Event()
    beater = threading.Thread(
        target=beat_until, args=(agent, ledger, window, stop), name=f"beat-{agent.index}"
    )
    beater.start()
    while time.monotonic() < stop_at and agent.rounds < MAX_ROUNDS:
        agent.rounds += 1
        try:
            envelope = latencies.timed(
                "deliver (in-process)", lambda: sender.send(agent, peer, agent.rounds)
            )
            with ledger.lock:
                ledger.sent[envelope] = peer.id
            poll(agent, ledger)
            if agent.rounds % LEASE_EVERY == 0:
                lease_cycle(agent)
        except Exception as error:
            ledger.error(f"agent {agent.index}: {error}")
    stop.set()
    beater.join(timeout=2 * HTTP_TIMEOUT_SECONDS * (RETRIES + 1))
    try:
        done = agent.beats.call(
            "heartbeat", scope=agent.scope, expect_within_seconds=window, disarm=True
        )
        if done["state"] != "disarmed" or done["death"] is not None:
            ledger.error(f"agent {agent.index}: its switch fired while it was alive")
    except Exception as error:
        ledger.error(f"agent {agent.index}, disarming: {error}")


def drain(agents: list[Agent], ledger: Ledger, limit_seconds: float) -> None:
    """Polls until every envelope sent has been acknowledged, or the limit passes (a
    delivery whose acknowledgment failed comes back once its lease lapses)."""
    give_up = time.monotonic() + limit_seconds
    while time.monotonic() < give_up:
        with ledger.lock:
            missing = {to for envelope, to in ledger.sent.items() if envelope not in ledger.acked}
        if not missing:
            return
        quiet = True
        for agent in agents:
            if agent.id in missing:
                try:
                    quiet = poll(agent, ledger) == 0 and quiet
                except Exception as error:
                    ledger.error(f"drain, agent {agent.index}: {error}")
        if quiet:
            time.sleep(1.0)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=50, help="simulated agents (default 50)")
    parser.add_argument("--seconds", type=float, default=60.0, help="run time (default 60)")
    parser.add_argument("--window", type=int, default=30, help="switch window, s (default 30)")
    args = parser.parse_args(argv)
    if not 2 <= args.agents <= 500 or not 1 <= args.seconds <= 3600 or args.window < 2:
        parser.error("--agents 2-500, --seconds 1-3600, --window at least 2")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    from vigil.local.runtime import start

    latencies = Latencies()
    ledger = Ledger()
    with tempfile.TemporaryDirectory(prefix="vigil-load-") as state_dir:
        runtime = start(port=0, state_dir=Path(state_dir), template=ROOT / "template.yaml")
        with runtime:
            operator = Rest(runtime.rest_url, runtime.operator_secret, Latencies())
            agents = []
            for index in range(args.agents):
                issued = operator.call("register", kind="agent", name=f"load-{index}")
                principal = issued["principal"]
                agents.append(
                    Agent(
                        index=index,
                        id=principal["id"],
                        rest=Rest(runtime.rest_url, issued["secret"], latencies),
                        beats=Rest(runtime.rest_url, issued["secret"], latencies),
                        scope=f"load-{index}",
                        address=principal["address"],
                    )
                )
            sender = Sender(runtime.namespace)
            print(
                f"{args.agents} agents registered; running {args.seconds:g} s "
                f"against {runtime.rest_url}",
                file=sys.stderr,
                flush=True,
            )
            started = time.monotonic()
            stop_at = started + args.seconds
            threads = [
                threading.Thread(
                    target=run_agent,
                    args=(
                        agent,
                        agents[(agent.index + 1) % len(agents)],
                        sender,
                        ledger,
                        latencies,
                        args.window,
                        stop_at,
                    ),
                    name=f"agent-{agent.index}",
                    daemon=True,
                )
                for agent in agents
            ]
            for thread in threads:
                # Agents arrive over a few seconds, not in one burst of connections.
                thread.start()
                time.sleep(RAMP_UP_SECONDS / len(threads))
            for thread in threads:
                thread.join(timeout=max(0.0, stop_at - time.monotonic()) + 2 * HTTP_TIMEOUT_SECONDS)
            elapsed = time.monotonic() - started
            hung = [t.name for t in threads if t.is_alive()]
            if hung:
                ledger.error(f"{len(hung)} agents still running after the deadline")
            drain(agents, ledger, limit_seconds=2 * DELIVERY_LEASE_SECONDS + 30)
            for agent in agents:
                agent.rest.close()
                agent.beats.close()
    return report(args, ledger, latencies, elapsed, sum(a.rounds for a in agents))


def report(
    args: argparse.Namespace,
    ledger: Ledger,
    latencies: Latencies,
    elapsed: float,
    rounds: int,
) -> int:
    sent = set(ledger.sent)
    lost = sorted(sent - set(ledger.acked))
    duplicated = sorted(e for e, n in ledger.received.items() if n > 1)
    twice_acked = sorted(e for e, n in ledger.acked.items() if n > 1)
    unknown = sorted(set(ledger.received) - sent)
    calls = sum(len(v) for k, v in latencies.seconds.items() if not k.startswith("deliver"))
    print(
        f"\nLoad: {args.agents} agents, {elapsed:.1f} s, {rounds} rounds, {calls} HTTP calls "
        f"({calls / elapsed:.0f}/s), switch window {args.window} s"
    )
    print(f"{'call':24} {'count':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for name, count, p50, p95, p99, worst in latency_rows(latencies.seconds):
        print(f"{name:24} {count:7d} {p50:8.1f} {p95:8.1f} {p99:8.1f} {worst:8.1f}")
    print(
        f"\nenvelopes: {len(sent)} sent, {len(ledger.received)} received, "
        f"{len(ledger.acked)} acknowledged; lost {len(lost)}, received twice {len(duplicated)}, "
        f"acknowledged twice {len(twice_acked)}, unknown {len(unknown)}"
    )
    retried = ", ".join(f"{k} {v}" for k, v in latencies.retries.most_common()) or "none"
    print(f"calls retried after a retryable error or a dropped connection: {retried}")
    print(f"errors (a call that still failed after {RETRIES} retries): {len(ledger.errors)}")
    for text in ledger.errors[:20]:
        print(f"  {text}")
    failed = ledger.errors or lost or duplicated or twice_acked or unknown
    print("FAILED" if failed else "OK: zero errors, every envelope received and acknowledged once")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    raise SystemExit(main())
