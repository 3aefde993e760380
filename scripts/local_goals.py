"""The local runtime as its table fills: throughput, expiry lateness and memory, in one run.

Usage: .venv/bin/python scripts/local_goals.py [--sizes 0,10000,100000] [--seconds 5]
                                               [--switches 40] [--calls 20000]
       .venv/bin/python scripts/local_goals.py --pending 10000 [--pairs 3000] [--items 100000]
                                               [--idle-seconds 20] [--seconds 5] [--switches 40]

One runtime (DynamoDB Local on disk, moto, the pump, the HTTP API) in this process. For each
size, the table is first filled to that many extra items (records the size of an idempotency
completion, through BatchWriteItem), then it measures over HTTP:

- steady ``heartbeat`` calls per second from 1 client and from 8 (each its own switch);
- ``session_heartbeat`` calls per second from 8 clients (each a transaction: the beat and its
  idempotency completion);
- raw conditional ``UpdateItem`` calls per second from 8 threads to the engine (through the
  runtime's signature-checking front, as the handlers' calls go), the ceiling the runtime is
  compared with;
- expiry lateness (``death.fired_at - death.deadline``, the server's own record) of
  ``--switches`` switches with windows from 2 s to 20 s, never beaten;
- resident memory of this process and of the engine.

Then ``--calls`` transactional calls (``session_heartbeat`` with a fresh idempotency key each)
from 8 clients, with resident memory before and after. Traffic goes to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
# One log line per call would swamp stderr; set before vigil is imported.
os.environ.setdefault("VIGIL_LOG_LEVEL", "WARNING")

from bench import _for  # noqa: E402
from load import Latencies, Rest  # noqa: E402

CLIENTS = 8
FILL_THREADS = 4
FILL_PAD = "x" * 300
# Long enough for the last writes to be saved and the pump to settle before idle is measured.
SETTLE_SECONDS = 5.0
PENDING_HOURS = 24


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as stat:
                parent = int(stat.read().rpartition(")")[2].split()[1])
        except (OSError, ValueError):
            continue
        if parent == pid:
            found.append(int(entry))
    return found


def idle_cpu(pids: dict[str, int], seconds: float) -> dict[str, float]:
    """Percent of one CPU each process uses over ``seconds`` of nothing asked of it."""
    time.sleep(SETTLE_SECONDS)
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    started = time.monotonic()
    time.sleep(seconds)
    took = time.monotonic() - started
    return {name: 100 * (cpu_seconds(pid) - before[name]) / took for name, pid in pids.items()}


def for_seconds(seconds: float, workers: int, work: Callable[[int, float], int]) -> float:
    """Runs ``work(worker, stop_at)`` on ``workers`` threads; returns their calls per second."""
    return _for(seconds, workers, work) / seconds


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


class Goals:
    def __init__(self, runtime: Any) -> None:
        import boto3
        from botocore.config import Config

        self.runtime = runtime
        self.table = os.environ["TABLE_NAME"]
        # The runtime's environment points DynamoDB at its engine's front, with its key.
        self.ddb = boto3.client("dynamodb", config=Config(max_pool_connections=16))
        self.engine_pid = runtime.engine_pid
        self.latencies = latencies = Latencies()
        self.operator = Rest(runtime.rest_url, runtime.operator_secret, latencies)
        self.agents = []
        for worker in range(CLIENTS):
            issued = self.operator.call("register", kind="agent", name=f"goals-{worker}")
            self.agents.append(Rest(runtime.rest_url, issued["secret"], latencies))
        self.filled = 0

    def fill(self, size: int) -> float:
        started = time.monotonic()
        lock = threading.Lock()

        def writer(worker: int) -> None:
            while True:
                with lock:
                    if self.filled >= size:
                        return
                    first, self.filled = self.filled, min(size, self.filled + 25)
                    last = self.filled
                self.ddb.batch_write_item(
                    RequestItems={
                        self.table: [
                            {
                                "PutRequest": {
                                    "Item": {
                                        "pk": {"S": f"FILL#{index}"},
                                        "sk": {"S": "IDEMPOTENCY"},
                                        "result": {"S": FILL_PAD},
                                        # Far ahead: the engine's TTL must not take them away.
                                        "ttl": {"N": str(int(time.time()) + 86_400 * 30)},
                                    }
                                }
                            }
                            for index in range(first, last)
                        ]
                    }
                )

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(FILL_THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return time.monotonic() - started

    def beats(self, clients: int, seconds: float) -> float:
        for worker in range(clients):
            agent = self.agents[worker]
            agent.call("heartbeat", scope=f"goals-{worker}", expect_within_seconds=600)

        def beat(worker: int, stop_at: float) -> int:
            done = 0
            while time.monotonic() < stop_at:
                self.agents[worker].call(
                    "heartbeat", scope=f"goals-{worker}", expect_within_seconds=600
                )
                done += 1
            return done

        return for_seconds(seconds, clients, beat)

    def session_beats(self, seconds: float) -> float:
        def beat(worker: int, stop_at: float) -> int:
            done = 0
            while time.monotonic() < stop_at:
                self.agents[worker].call(
                    "session_heartbeat",
                    sessionId=f"goals-{worker}",
                    status="active",
                    idempotencyKey=uuid.uuid4().hex,
                )
                done += 1
            return done

        return for_seconds(seconds, CLIENTS, beat)

    def raw_updates(self, seconds: float) -> float:
        def update(worker: int, stop_at: float) -> int:
            done = 0
            while time.monotonic() < stop_at:
                self.ddb.update_item(
                    TableName=self.table,
                    Key={"pk": {"S": f"RAW#{worker}"}, "sk": {"S": "RAW"}},
                    UpdateExpression="SET version = if_not_exists(version, :zero) + :one",
                    ConditionExpression="attribute_not_exists(version) OR version >= :zero",
                    ExpressionAttributeValues={":zero": {"N": "0"}, ":one": {"N": "1"}},
                )
                done += 1
            return done

        return for_seconds(seconds, CLIENTS, update)

    def lateness(self, switches: int, tag: str) -> list[float]:
        agent = self.agents[0]
        scopes = []
        for index in range(switches):
            scope = f"late-{tag}-{index:03d}"
            window = 2 + (index * 18) // max(1, switches - 1)
            agent.call(
                "heartbeat", scope=scope, expect_within_seconds=window, on_expiry=["mark_failed"]
            )
            scopes.append(scope)
        late: dict[str, float] = {}
        give_up = time.monotonic() + 120
        while len(late) < len(scopes) and time.monotonic() < give_up:
            time.sleep(1.0)
            for scope in scopes:
                if scope in late:
                    continue
                death = agent.call("resume_packet", scope=scope)["death"]
                if death is not None:
                    fired = datetime.fromisoformat(death["fired_at"])
                    deadline = datetime.fromisoformat(death["deadline"])
                    late[scope] = (fired - deadline).total_seconds()
        if len(late) < len(scopes):
            raise SystemExit(f"{len(scopes) - len(late)} switches never fired")
        return list(late.values())

    def memory(self) -> tuple[float, float]:
        return rss_mb(os.getpid()), rss_mb(self.engine_pid)

    def processes(self) -> dict[str, int]:
        pids = {"runtime": os.getpid(), "engine": self.engine_pid}
        for index, pid in enumerate(p for p in children(os.getpid()) if p != self.engine_pid):
            pids[f"front{index or ''}"] = pid
        return pids

    def one_client(self, seconds: float) -> tuple[float, float]:
        """One client's beats per second and their p99 latency in milliseconds."""
        self.latencies.seconds.pop("heartbeat", None)
        rate = self.beats(1, seconds)
        return rate, 1000 * percentile(self.latencies.seconds["heartbeat"], 0.99)

    def pend(self, count: int) -> float:
        """Creates ``count`` one-shot schedules a day ahead, as an alarm arms one."""
        import boto3

        deployment = self.runtime.deployment
        group = deployment.schedule_groups["AlarmScheduleGroup"]
        target = {
            "Arn": deployment.functions["AlarmFunction"].arn,
            "RoleArn": deployment.roles["SchedulerRole"],
            "Input": "{}",
        }
        scheduler = boto3.client("scheduler")
        at = datetime.now(UTC) + timedelta(hours=PENDING_HOURS)
        started = time.monotonic()

        def create(worker: int) -> None:
            for index in range(worker, count, FILL_THREADS):
                moment = (at + timedelta(seconds=index)).strftime("%Y-%m-%dT%H:%M:%S")
                scheduler.create_schedule(
                    Name=f"pending-{index}",
                    GroupName=group,
                    ScheduleExpression=f"at({moment})",
                    ScheduleExpressionTimezone="UTC",
                    FlexibleTimeWindow={"Mode": "OFF"},
                    ActionAfterCompletion="DELETE",
                    Target=target,
                )

        threads = [threading.Thread(target=create, args=(w,)) for w in range(FILL_THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return time.monotonic() - started

    def pairs(self, count: int) -> float:
        """``count`` ask+reply pairs from one agent to one person; returns the seconds taken."""
        if not hasattr(self, "person"):
            issued = self.operator.call("register", kind="person", name="goals-person")
            self.person = Rest(self.runtime.rest_url, issued["secret"], self.latencies)
            self.person_id = issued["principal"]["id"]
        target = {"kind": "person", "id": self.person_id}
        started = time.monotonic()
        for _ in range(count):
            asked = self.agents[0].call("ask", target=target, body="?", kind="approval")
            self.person.call("reply", id=asked["id"], version=asked["version"], outcome="approved")
        return time.monotonic() - started


def idle_goals(args: argparse.Namespace) -> int:
    from vigil.local.runtime import start

    load_before = os.getloadavg()[0]
    with (
        tempfile.TemporaryDirectory(prefix="vigil-goals-") as state_dir,
        start(port=0, state_dir=Path(state_dir)) as runtime,
    ):
        goals = Goals(runtime)
        pids = goals.processes()
        for _ in range(2):
            goals.one_client(args.seconds)
        quiet = {"cpu": idle_cpu(pids, args.idle_seconds)}
        quiet["beats"], quiet["p99"] = goals.one_client(args.seconds)
        quiet["late"] = percentile(goals.lateness(args.switches, "quiet"), 0.99)
        print(quiet, file=sys.stderr, flush=True)

        took = goals.pend(args.pending)
        print(f"{args.pending:,} schedules pending in {took:.0f} s", file=sys.stderr, flush=True)
        pending = {"cpu": idle_cpu(pids, args.idle_seconds)}
        pending["beats"], pending["p99"] = goals.one_client(args.seconds)
        pending["late"] = percentile(goals.lateness(args.switches, "pending"), 0.99)
        print(pending, file=sys.stderr, flush=True)

        pairs = {}
        if args.pairs:
            goals.pairs(max(1, args.pairs // 10))
            pairs["rss_before"] = rss_mb(os.getpid())
            pairs["took"] = goals.pairs(args.pairs)
            pairs["rss_after"] = rss_mb(os.getpid())
            pairs["cpu"] = idle_cpu(pids, args.idle_seconds)
            print(pairs, file=sys.stderr, flush=True)

        items = {}
        if args.items:
            items["took"] = goals.fill(args.items)
            items["cpu"] = idle_cpu(pids, args.idle_seconds)
            print(items, file=sys.stderr, flush=True)

    def total(cpu: dict[str, float]) -> str:
        parts = " + ".join(f"{value:.1f}" for value in cpu.values())
        return f"{sum(cpu.values()):.1f} % ({parts})"

    print(f"| runtime at rest | quiet | {args.pending:,} schedules pending | pending ÷ quiet |")
    print("| --- | ---: | ---: | ---: |")
    print(
        f"| idle CPU, {' + '.join(pids)} | {total(quiet['cpu'])} | {total(pending['cpu'])} "
        f"| {sum(pending['cpu'].values()) / max(0.1, sum(quiet['cpu'].values())):.2f} |"
    )
    for key, label, unit in (
        ("beats", "beats/s, 1 client", "/s"),
        ("p99", "beat p99, 1 client", " ms"),
        ("late", f"expiry lateness p99, {args.switches} switches", " s"),
    ):
        print(
            f"| {label} | {quiet[key]:.2f}{unit} | {pending[key]:.2f}{unit} "
            f"| {pending[key] / quiet[key]:.2f} |"
        )
    if pairs:
        print(
            f"{args.pairs:,} ask+reply pairs after {max(1, args.pairs // 10):,} of warm-up: "
            f"{args.pairs / pairs['took']:.1f} pairs/s; runtime resident memory "
            f"{pairs['rss_before']:.0f} → {pairs['rss_after']:.0f} MB "
            f"(+{pairs['rss_after'] - pairs['rss_before']:.0f} MB); idle CPU after them "
            f"{total(pairs['cpu'])}"
        )
    if items:
        print(
            f"+{args.items:,} items (filled in {items['took']:.0f} s): idle CPU "
            f"{total(items['cpu'])}"
        )
    print(
        f"{os.cpu_count()} CPUs; 1-minute load average {load_before:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end; idle CPU is percent of one CPU"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", default="0,10000,100000")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--switches", type=int, default=40)
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--pending", type=int, default=None, help="measure at rest instead")
    parser.add_argument("--pairs", type=int, default=3000)
    parser.add_argument("--items", type=int, default=0)
    parser.add_argument("--idle-seconds", type=float, default=20.0)
    args = parser.parse_args(argv)
    if args.pending is not None:
        return idle_goals(args)
    sizes = [int(size) for size in args.sizes.split(",")]

    from vigil.local.runtime import start

    load_before = os.getloadavg()[0]
    rows = []
    with (
        tempfile.TemporaryDirectory(prefix="vigil-goals-") as state_dir,
        start(port=0, state_dir=Path(state_dir)) as runtime,
    ):
        goals = Goals(runtime)
        # Warm both ends (the engine's JIT above all) on every measured call before the first
        # figure: a cold engine makes the first row look slower than the table's size does.
        for _ in range(2):
            goals.beats(CLIENTS, args.seconds)
            goals.session_beats(args.seconds)
            goals.raw_updates(args.seconds)
        for size in sizes:
            took = goals.fill(size)
            print(f"+{size} items: filled in {took:.0f} s", file=sys.stderr, flush=True)
            row = {
                "size": size,
                "beats_1": goals.beats(1, args.seconds),
                "beats_8": goals.beats(CLIENTS, args.seconds),
                "sessions_8": goals.session_beats(args.seconds),
                "raw_8": goals.raw_updates(args.seconds),
            }
            late = goals.lateness(args.switches, str(size))
            row["late_p50"] = statistics.median(late)
            row["late_p99"] = percentile(late, 0.99)
            row["late_max"] = max(late)
            row["rss"], row["engine_rss"] = goals.memory()
            rows.append(row)
            print(row, file=sys.stderr, flush=True)

        before = goals.memory()
        per_client = args.calls // CLIENTS

        def calls(worker: int, stop_at: float) -> int:
            for _ in range(per_client):
                goals.agents[worker].call(
                    "session_heartbeat",
                    sessionId=f"memory-{worker}",
                    idempotencyKey=uuid.uuid4().hex,
                )
            return per_client

        started = time.monotonic()
        threads = [threading.Thread(target=calls, args=(w, 0.0)) for w in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        took = time.monotonic() - started
        after = goals.memory()

    print(
        "| extra items | beats/s, 1 client | beats/s, 8 clients | session_heartbeat/s, 8 "
        "| raw engine updates/s, 8 | 8-client beats ÷ raw | lateness p50 / p99 / max (s) "
        "| RSS runtime / engine (MB) |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        print(
            f"| {row['size']:,} | {row['beats_1']:.0f} | {row['beats_8']:.0f} "
            f"| {row['sessions_8']:.0f} | {row['raw_8']:.0f} "
            f"| {row['beats_8'] / row['raw_8']:.2f} "
            f"| {row['late_p50']:.2f} / {row['late_p99']:.2f} / {row['late_max']:.2f} "
            f"| {row['rss']:.0f} / {row['engine_rss']:.0f} |"
        )
    print(
        f"{os.cpu_count()} CPUs; 1-minute load average {load_before:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end"
    )
    first, last = rows[0], rows[-1]
    for key, name in (("beats_8", "beats/s"), ("sessions_8", "session_heartbeat/s")):
        print(
            f"{name} at +{last['size']:,} vs +{first['size']:,}: {last[key] / first[key]:.2f} times"
        )
    print(
        f"{args.calls:,} transactional calls in {took:.0f} s: resident memory "
        f"{before[0]:.0f} → {after[0]:.0f} MB (runtime), {before[1]:.0f} → {after[1]:.0f} MB "
        f"(engine): +{after[0] + after[1] - before[0] - before[1]:.0f} MB together"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
