"""The benchmark figures, measured in one run, printed and written to docs/BENCHMARKS.md.

Usage: .venv/bin/python scripts/bench.py [--write docs/BENCHMARKS.md] [--samples 30]
           [--runs 15] [--clients 4] [--seconds 5] [--switches 50] [--max-window 20]

1. Cold start: the import time of each function's handler module, in fresh interpreters,
   beside ``import boto3`` (``scripts/measure.py``'s ``import_ms``).
2. Every tool of the catalog: the AWS calls one call makes, by service and operation, counted
   at the botocore layer, priced at public on-demand prices (``scripts/costs.py``'s ``Meter``
   and ``PRICE``), and its warm in-process latency (median, p99) on moto. The calls come from
   the fault tests' scenarios (``tests/faults/scenarios.py``), so a new tool is measured as soon
   as it exists. Measured first: a case that answers an error stops the run, and no page is
   written. ``count`` is the measure of one case without the timings, which
   tests/unit/test_benchmark_page.py runs for every case against the page.
3. Local throughput: steady heartbeats per second over HTTP against the local runtime, from a
   few concurrent clients, beside its DynamoDB's own conditional-write throughput (raw
   ``PutItem`` with a condition, to DynamoDB Local through the runtime's signature-checking
   front, as the handlers' calls go), from as many clients for as long.
4. Expiry lateness: a short run of ``scripts/lateness.py`` (its ``measure``), switches with
   2-20 s windows on the local runtime; ``make lateness``-style long runs are that script's.

The per-tool figures run on moto in this process, cold start in fresh interpreters; throughput
and lateness run on the local runtime (DynamoDB Local behind its signature-checking front, and
moto). Absolute times are the machine's; the ratios measured in the same run, and the call
counts, are the point. Traffic goes to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SERVICE_NAMES = {"dynamodb": "DynamoDB", "sqs": "SQS", "scheduler": "Scheduler", "s3": "S3"}
TOOLS_HEADING = "## Every tool: AWS calls, cost, warm latency"


@dataclass(frozen=True)
class Counted:
    """What one call of a tool makes on AWS: the page's row for it, but for the timings."""

    name: str
    calls: dict[str, int]
    usd_per_million: float
    outcome: str

    def cells(self) -> list[str]:
        """The row's first columns: the tool and case, its AWS calls, their price."""
        return [self.name, by_service(self.calls), f"{self.usd_per_million:.2f}"]


@dataclass(frozen=True)
class ToolRow:
    counted: Counted
    median_ms: float
    p99_ms: float


def _percentile(values: list[float], fraction: float) -> float:
    from load import percentile

    return percentile(values, fraction)


# -- 1. cold start ------------------------------------------------------------------------------
def cold_start(runs: int) -> list[tuple[str, float]]:
    os.environ["MEASURE_RUNS"] = str(runs)
    from measure import ALARM_HANDLER, API_HANDLER, FIRST_CALL, import_ms

    src = [str(ROOT / "src")]
    rows = [
        ("`import boto3`", "import boto3", []),
        ("API function: handler module", API_HANDLER, src),
        (
            "API function: handler + what its first call imports",
            f"{API_HANDLER}, {FIRST_CALL}",
            src,
        ),
        ("alarm function: handler module", ALARM_HANDLER, src),
        (
            "alarm function: handler + what its first call imports",
            f"{ALARM_HANDLER}, {FIRST_CALL}",
            src,
        ),
    ]
    return [(label, import_ms(statement, path)) for label, statement, path in rows]


# -- 2. every tool ------------------------------------------------------------------------------
def by_service(calls: dict[str, int]) -> str:
    grouped: dict[str, list[str]] = defaultdict(list)
    for key, count in sorted(calls.items()):
        service, operation = key.split(".", 1)
        grouped[service].append(f"{operation} {count}")
    return (
        "; ".join(
            f"{SERVICE_NAMES.get(service, service)} {', '.join(ops)}"
            for service, ops in sorted(grouped.items())
        )
        or "-"
    )


def row_name(scenario: Any) -> str:
    return f"`{scenario.tool}`" + (f", {scenario.variant}" if scenario.variant else "")


def count(scenario: Any) -> tuple[Counted, Any]:
    """One call of ``scenario``'s tool after its setup, in a fresh world on moto (which the
    caller has started): its AWS calls, counted at the botocore layer, and their price. The
    world is returned for timing more calls in it."""
    from costs import Meter

    from tests.faults.runner import attempt
    from tests.faults.world import World
    from vigil.kit import fanout

    world = World()
    arguments = scenario.prepare(world)
    meter = Meter()
    clients = (world.dynamodb, world.sqs, world.scheduler, world.s3)
    for client in clients:
        meter.hook(client)
    try:
        # The meter counts one AWS call at a time: a batch's beats run one after another.
        with fanout.one_at_a_time():
            outcome, _ = attempt(world, scenario, arguments)
    finally:
        for client in clients:
            meter.unhook(client)  # its reads of the items written must not be timed
    price = meter.cost(via_api=True) * 1e6
    return Counted(row_name(scenario), dict(meter.calls), price, outcome), world


def per_tool(samples: int) -> list[ToolRow]:
    from moto import mock_aws

    from tests.faults.runner import attempt
    from tests.faults.scenarios import every_scenario
    from vigil.kit import fanout

    # moto's DynamoDB, in this process, serves one request at a time: so do a batch's beats.
    fanout.serial = True
    os.environ.update(AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x")
    os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
    os.environ.pop("AWS_ENDPOINT_URL", None)
    rows, failed = [], []
    with mock_aws():
        for scenario in every_scenario():
            counted, world = count(scenario)
            timings: list[float] = []
            outcome = counted.outcome
            while outcome == "ok" and len(timings) < samples:
                arguments = scenario.prepare(world)
                started = time.perf_counter()
                outcome, _ = attempt(world, scenario, arguments)
                timings.append((time.perf_counter() - started) * 1000)
            print(f"  {counted.name}: {by_service(counted.calls)}", file=sys.stderr, flush=True)
            if outcome != "ok":
                when = f" on repeat {len(timings)}" if timings else ""
                failed.append(f"{counted.name}: answered {outcome}{when}")
                continue
            median, p99 = statistics.median(timings), _percentile(timings, 0.99)
            rows.append(ToolRow(counted, median, p99))
    if failed:
        # A row for a call that failed would show what an error costs, not what the tool does.
        raise SystemExit(
            "these scenarios (tests/faults/scenarios.py) did not answer:\n" + "\n".join(failed)
        )
    return rows


def tools_on(page: str) -> dict[str, list[str]]:
    """The per-tool table of a page ``markdown`` wrote: each row's first cells (``cells``),
    by its tool and case."""
    section = page[page.index(TOOLS_HEADING) :].split("\n## ", 1)[0]
    rows = [line.strip("|").split(" | ") for line in section.splitlines() if line.startswith("| `")]
    return {cells[0].strip(): [cell.strip() for cell in cells[:3]] for cells in rows}


# -- 3. throughput ------------------------------------------------------------------------------
def _for(seconds: float, workers: int, work: Any) -> int:
    """Runs ``work(worker, stop_at)`` on ``workers`` threads for ``seconds``; sums their counts."""
    counts = [0] * workers
    stop_at = time.monotonic() + seconds

    def loop(worker: int) -> None:
        counts[worker] = work(worker, stop_at)

    threads = [threading.Thread(target=loop, args=(w,), daemon=True) for w in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=seconds + 60)
    return sum(counts)


def throughput(clients: int, seconds: float) -> dict[str, float]:
    import boto3
    from load import Latencies, Rest

    from vigil.local.runtime import start

    with tempfile.TemporaryDirectory(prefix="vigil-bench-") as state_dir:
        runtime = start(port=0, state_dir=Path(state_dir), template=ROOT / "template.yaml")
        with runtime:
            operator = Rest(runtime.rest_url, runtime.operator_secret, Latencies())
            agents = []
            for worker in range(clients):
                issued = operator.call("register", kind="agent", name=f"bench-{worker}")
                agent = Rest(runtime.rest_url, issued["secret"], Latencies())
                agent.call("heartbeat", scope=f"bench-{worker}", expect_within_seconds=600)
                agents.append(agent)

            def beat(worker: int, stop_at: float) -> int:
                done = 0
                while time.monotonic() < stop_at:
                    agents[worker].call(
                        "heartbeat", scope=f"bench-{worker}", expect_within_seconds=600
                    )
                    done += 1
                return done

            beats = _for(seconds, clients, beat)
            table = os.environ["TABLE_NAME"]
            # The runtime's environment points DynamoDB at its DynamoDB Local's front, with its key.
            ddb = [boto3.client("dynamodb") for _ in range(clients)]

            def put(worker: int, stop_at: float) -> int:
                done = 0
                while time.monotonic() < stop_at:
                    done += 1
                    ddb[worker].put_item(
                        TableName=table,
                        Item={
                            "pk": {"S": f"BENCH#{worker}"},
                            "sk": {"S": "COUNTER"},
                            "version": {"N": str(done)},
                        },
                        ConditionExpression="attribute_not_exists(pk) OR version < :v",
                        ExpressionAttributeValues={":v": {"N": str(done)}},
                    )
                return done

            puts = _for(seconds, clients, put)
            for agent in agents:
                agent.close()
    return {"beats_per_second": beats / seconds, "puts_per_second": puts / seconds}


# -- 4. lateness --------------------------------------------------------------------------------
def lateness(count: int, max_window: int, seed: int) -> dict[str, float]:
    import lateness as long_run

    armed, _ = long_run.measure(count, max_window, seed)
    figures = long_run.summary([a.lateness for a in armed])
    return {"count": len(armed), **figures}


def request_lateness(count: int, max_window: int, seed: int) -> dict[str, float]:
    import lateness as long_run

    found = long_run.measure_requests(count, max_window, seed)
    return {"count": len(found), **long_run.summary(found)}


# -- output ---------------------------------------------------------------------------------------
def _busy(when: When) -> str:
    """What the load says of the figures: only a load above the CPUs' count means other work
    took turns with the benchmark."""
    if max(when.load_at_start, when.load_at_end) <= (os.cpu_count() or 1):
        return ""
    return (
        ": above the CPUs' count, other work shared them, and times and rates are worse than "
        "an idle machine's"
    )


@dataclass(frozen=True)
class When:
    """When the run was, how long it took, and how busy the machine was (1-minute load)."""

    started: datetime
    minutes: float
    load_at_start: float
    load_at_end: float


def markdown(
    argv: list[str],
    args: argparse.Namespace,
    when: When,
    cold: list[tuple[str, float]],
    tools: list[ToolRow],
    rate: dict[str, float],
    late: dict[str, float],
    asked: dict[str, float],
) -> str:
    from costs import PRICE
    from lateness import command_line

    boto = cold[0][1]
    lines = [
        "# Benchmarks",
        "",
        "Every figure on this page comes from one run of",
        "",
        "```sh",
        f"make bench   # = {command_line(argv, 'scripts/bench.py')}",
        "```",
        "",
        f"on {when.started:%Y-%m-%d %H:%M} UTC, {when.minutes:.1f} min, {os.cpu_count()} CPUs "
        f"(1-minute load average {when.load_at_start:.1f} at the start, "
        f"{when.load_at_end:.1f} at the end{_busy(when)}), Python "
        f"{platform.python_version()}, {platform.system()} {platform.machine()}. The per-tool "
        "figures run on moto in this process; throughput and lateness on the local runtime: "
        "DynamoDB Local behind its signature-checking front (each a process of its own), "
        "moto for SQS, Scheduler and S3. Absolute times are the machine's at that hour; the "
        "call counts, which are the same in every run, and the ratios within the run are the "
        "point. Lambda runs Python 3.13 on arm64.",
        "",
        "## Cold start",
        "",
        f"Median over {args.runs} fresh interpreters of the import alone (interpreter start "
        "excluded), beside `import boto3` in the same run (`scripts/measure.py`'s `import_ms`).",
        "",
        "| what | ms | x `import boto3` |",
        "| --- | ---: | ---: |",
        *[f"| {label} | {ms:.1f} | {ms / boto:.2f} |" for label, ms in cold],
        "",
        TOOLS_HEADING,
        "",
        "One call of each tool after its scenario's setup (`tests/faults/scenarios.py`), "
        "calls counted at the botocore layer on moto, by service; USD per million calls at "
        "public on-demand prices, us-east-1 (`scripts/costs.py`: DynamoDB "
        f"${PRICE['dynamodb_write_unit'] * 1e6:.3f} per million write units and "
        f"${PRICE['dynamodb_read_unit'] * 1e6:.3f} per million read units, counted from "
        "the items' sizes, SQS "
        f"${PRICE['sqs_request'] * 1e6:.2f} per million requests, Scheduler "
        f"${PRICE['scheduler_invocation'] * 1e6:.2f} per million, S3 "
        f"${PRICE['s3_write_request'] * 1e6:.2f} per million PUT or COPY and "
        f"${PRICE['s3_read_request'] * 1e6:.2f} per million GET, plus one HTTP API request "
        f"(${PRICE['http_api_request'] * 1e6:.2f} per million) and one Lambda request "
        f"(${PRICE['lambda_request'] * 1e6:.2f} per million); Lambda duration excluded). "
        f"Latency: `App.call` in-process on moto, {args.samples} calls each after a fresh "
        "setup (setup not timed); mutations carry a new idempotency key each time where the "
        "tool takes one. `tests/unit/test_benchmark_page.py` counts the calls of one call of "
        "every case again (`count` in `scripts/bench.py`) and fails when a row's calls or "
        "price differ from them; every case answered without error, or the page would not "
        "have been written.",
        "",
        "| tool, case | AWS calls per call | USD per million | median ms | p99 ms |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {' | '.join(row.counted.cells())} | {row.median_ms:.2f} | {row.p99_ms:.2f} |"
        for row in tools
    ]
    ratio = rate["beats_per_second"] / rate["puts_per_second"]
    lines += [
        "",
        "## Local throughput",
        "",
        f"{args.clients} concurrent clients for {args.seconds:g} s each way, against one local "
        "runtime (`vigil.local.runtime.start`): steady heartbeats over HTTP (REST, keep-alive; "
        "each is the authentication read and one conditional update on DynamoDB Local, plus "
        "the HTTP server and the handler), then raw conditional `PutItem`s to the same "
        "DynamoDB Local, through the runtime's signature-checking front as the handlers' calls "
        'go (`PERFORMANCE.md`, "The local DynamoDB\'s signature check", has what that hop '
        "costs). The clients are threads of this process, as the runtime's HTTP server, "
        "functions and pump are; DynamoDB Local and its front share the same cores.",
        "",
        "| what | per second |",
        "| --- | ---: |",
        f"| steady heartbeats over HTTP | {rate['beats_per_second']:.1f} |",
        f"| DynamoDB Local, raw conditional PutItem | {rate['puts_per_second']:.1f} |",
        f"| ratio (beats / puts) | {ratio:.2f} |",
        "",
        "## Expiry lateness (short run)",
        "",
        f"{int(late['count'])} switches, windows log-uniform from 2 to {args.max_window} s, "
        "never beaten again, on the local runtime (`scripts/lateness.py`'s `measure`): "
        "`death.fired_at - death.deadline`, seconds. `docs/LATENESS.md` has the long run.",
        "",
        "| p50 s | p99 s | max s |",
        "| ---: | ---: | ---: |",
        f"| {late['p50']:.3f} | {late['p99']:.3f} | {late['max']:.3f} |",
        "",
        "Requests expire on the same alarm path: "
        f"{int(asked['count'])} approvals asked of a person who never answers, lifetimes "
        f"spread the same way from 10 to {max(10, args.max_window)} s "
        "(`scripts/lateness.py`'s `measure_requests`): `response.at - expires_at`, seconds.",
        "",
        "| p50 s | p99 s | max s |",
        "| ---: | ---: | ---: |",
        f"| {asked['p50']:.3f} | {asked['p99']:.3f} | {asked['max']:.3f} |",
        "",
    ]
    return "\n".join(lines)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--write", type=Path, help="also write the Markdown report here")
    parser.add_argument("--samples", type=int, default=30, help="timed calls per tool")
    parser.add_argument("--runs", type=int, default=15, help="fresh interpreters per import")
    parser.add_argument("--clients", type=int, default=4, help="concurrent throughput clients")
    parser.add_argument("--seconds", type=float, default=5.0, help="throughput time each way")
    parser.add_argument("--switches", type=int, default=50, help="switches for lateness")
    parser.add_argument("--max-window", type=int, default=20, help="longest lateness window")
    args = parser.parse_args(argv)
    if min(args.samples, args.runs, args.clients, args.switches) < 1 or args.seconds <= 0:
        parser.error("counts must be at least 1 and --seconds positive")
    if not 2 <= args.max_window <= 600:
        parser.error("--max-window must be 2-600")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    os.environ.setdefault("VIGIL_LOG_LEVEL", "WARNING")
    started, clock, load_at_start = datetime.now(UTC), time.monotonic(), os.getloadavg()[0]
    # First: a case that fails stops the run before the slow parts.
    print("every tool...", file=sys.stderr, flush=True)
    tools = per_tool(args.samples)
    print("cold start...", file=sys.stderr, flush=True)
    cold = cold_start(args.runs)
    print("throughput...", file=sys.stderr, flush=True)
    rate = throughput(args.clients, args.seconds)
    print("lateness...", file=sys.stderr, flush=True)
    late = lateness(args.switches, args.max_window, seed=1)
    asked = request_lateness(args.switches, args.max_window, seed=1)
    when = When(started, (time.monotonic() - clock) / 60, load_at_start, os.getloadavg()[0])
    text = markdown(argv, args, when, cold, tools, rate, late, asked)
    print(text)
    if args.write is not None:
        args.write.write_text(text)
        print(f"written to {args.write}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.path[:0] = [str(ROOT / "src"), str(ROOT / "scripts"), str(ROOT)]
    raise SystemExit(main())
