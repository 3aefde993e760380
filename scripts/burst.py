"""Measures a burst of deaths on the local runtime: many dead-man switches of one namespace
whose deadlines fall in the same second, and what the HTTP API answers meanwhile.

Usage: .venv/bin/python scripts/burst.py [--count 300] [--parameter Name=Value ...]
                                         [--contention] [--write FILE]

It starts the local runtime in this process (DynamoDB Local, moto, the event pump, the HTTP API)
and drives it over REST. Agents arm ``--count`` switches at once, each with the window that puts
its deadline in one chosen second after arming is over (a beat takes whole seconds, so each
window is that second minus the second the beat is sent in, and a beat whose deadline fell
outside is sent again), and never beat them again. Other agents beat a switch of their own
steadily from before that second until the burst is over; their latency, client side, is the
API's answer while the timers fire. Then it reads the deaths back (``list_deaths``, every
page) and prints how many died, how many died more than once, how many never died within
``--bound`` seconds, the lateness (the server's own record, ``fired_at - deadline``), and the
dead-letter queues' depths at the end. It exits 1 if any switch died twice or never, or a
dead-letter queue holds a message.

The namespace's switch quota (QuotaArmedSwitches, 1000 by default) counts the trickle's
switches too: ``--count 1000`` needs ``--parameter QuotaArmedSwitches=2000``.
"""

from __future__ import annotations

import argparse
import inspect
import math
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lateness import Rest, command_line, percentile

ROOT = Path(__file__).resolve().parents[1]
# One log line per call and per timer would swamp stderr; set before vigil is imported.
os.environ.setdefault("VIGIL_LOG_LEVEL", "WARNING")

ARMING_AGENTS = 10
ARMING_THREADS = 8
TRICKLE_AGENTS = 4
# Each trickle agent beats every this many seconds: 8 beats a second in all.
TRICKLE_EVERY_SECONDS = 0.5
TRICKLE_WINDOW_SECONDS = 600
# The trickle starts this long before the burst's second, for a quiet figure to compare.
QUIET_SECONDS = 5.0
# How often the queue is looked at while the burst fires; its depth is moto's, read in-process.
LOOK_EVERY_SECONDS = 1.0
# A beat whose deadline fell outside the chosen second is sent again, at most this often.
ARMING_ATTEMPTS = 10
# A retryable refusal is sent again this many times, with backoff (not the trickle's beats).
RETRIES = 8


@dataclass
class Beat:
    started: float  # wall clock, client side
    seconds: float
    error: str | None = None


@dataclass
class Trickle:
    """Agents beating switches of their own, steadily, on threads of their own."""

    agents: list[Rest]
    beats: list[Beat] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> None:
        for index, agent in enumerate(self.agents):
            thread = threading.Thread(target=self._beat, args=(index, agent), daemon=True)
            thread.start()
            self.threads.append(thread)

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join()

    def _beat(self, index: int, agent: Rest) -> None:
        # Spread over the interval, so that the agents do not beat in step.
        next_beat = time.monotonic() + TRICKLE_EVERY_SECONDS * index / len(self.agents)
        while not self.stopping.wait(max(0.0, next_beat - time.monotonic())):
            next_beat += TRICKLE_EVERY_SECONDS
            started, clock = time.time(), time.perf_counter()
            error = None
            try:
                agent.call(
                    "heartbeat",
                    scope=f"trickle-{index}",
                    expect_within_seconds=TRICKLE_WINDOW_SECONDS,
                    on_expiry=["mark_failed"],
                )
            except Exception as failure:
                error = str(failure)[:200]
            self.beats.append(Beat(started, time.perf_counter() - clock, error))


@dataclass
class Result:
    count: int
    second: datetime
    armed_in: float
    deadlines: list[datetime]
    deaths: dict[str, list[dict[str, Any]]]
    never: list[str]
    dead_letters: dict[str, int]
    quiet: list[Beat]
    during: list[Beat]
    burst_seconds: float

    @property
    def lateness(self) -> list[float]:
        return [
            (
                datetime.fromisoformat(found[0]["fired_at"])
                - datetime.fromisoformat(found[0]["deadline"])
            ).total_seconds()
            for found in self.deaths.values()
        ]

    @property
    def twice(self) -> int:
        return sum(1 for found in self.deaths.values() if len(found) > 1)

    @property
    def failed(self) -> bool:
        return bool(self.twice or self.never or any(self.dead_letters.values()))


class Arming:
    """Arms switches so that their deadlines fall in one epoch second. A beat's deadline is the
    server's clock when it takes the beat plus the window, in whole seconds: the window is that
    second minus the second the beat is expected to be taken in, which is when it is sent plus
    how long beats have lately taken to reach the server."""

    def __init__(self, second: int) -> None:
        self.second = second
        self.delay = 0.0
        self.again = 0
        self._lock = threading.Lock()

    def arm(self, agent: Rest, scope: str) -> datetime:
        for _ in range(ARMING_ATTEMPTS):
            sent = time.time()
            window = self.second - int(sent + self.delay)
            if window < 2:
                raise SystemExit(
                    "arming took too long: the burst's second came first (give a larger --lead)"
                )
            beat = agent.call(
                "heartbeat", scope=scope, expect_within_seconds=window, on_expiry=["mark_failed"]
            )
            deadline = datetime.fromisoformat(beat["deadline"])
            taken = deadline.timestamp() - window
            with self._lock:
                self.delay = 0.8 * self.delay + 0.2 * max(0.0, taken - sent)
                if int(deadline.timestamp()) == self.second:
                    return deadline
                self.again += 1
        raise SystemExit(f"{scope}: its deadline kept falling outside the burst's second")


def all_deaths(operator: Rest) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = operator.call("list_deaths", limit=50, **({"cursor": cursor} if cursor else {}))
        found.extend(page["deaths"])
        cursor = page["next_cursor"]
        if not cursor:
            return found


def queue_depth(sqs: Any, url: str, *names: str) -> int:
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(names))["Attributes"]
    return sum(int(attributes[name]) for name in names)


def start_runtime(
    state_dir: Path, parameters: dict[str, str], contention: bool
) -> Any:  # a LocalRuntime
    from vigil.local.runtime import start

    extra: dict[str, Any] = {}
    if contention:
        if "contention" not in inspect.signature(start).parameters:
            raise SystemExit(
                "--contention: this local runtime has no contention option (vigil.local.runtime."
                "start takes no 'contention' argument); run a tree that has it"
            )
        extra["contention"] = True
    return start(
        port=0,
        state_dir=state_dir,
        template=ROOT / "template.yaml",
        parameters=parameters,
        **extra,
    )


def measure(
    count: int, parameters: dict[str, str], contention: bool, lead: float, bound: float
) -> Result:
    with tempfile.TemporaryDirectory(prefix="vigil-burst-") as state_dir:
        runtime = start_runtime(Path(state_dir), parameters, contention)
        with runtime:
            operator = Rest(runtime.rest_url, runtime.operator_secret, RETRIES)

            def registered(name: str, retries: int) -> Rest:
                agent = operator.call("register", kind="agent", name=name)
                return Rest(runtime.rest_url, agent["secret"], retries)

            agents = [registered(f"burst-{i}", RETRIES) for i in range(ARMING_AGENTS)]
            # The trickle's beats are timed as sent once: a refusal is counted, not retried.
            trickle = Trickle([registered(f"trickle-{i}", 0) for i in range(TRICKLE_AGENTS)])
            second = math.ceil(time.time() + lead)
            scopes = [f"burst-{index:05d}" for index in range(count)]
            started = time.monotonic()
            arming = Arming(second)
            with ThreadPoolExecutor(ARMING_THREADS) as pool:
                deadlines = list(
                    pool.map(
                        lambda item: arming.arm(agents[item[0] % ARMING_AGENTS], item[1]),
                        enumerate(scopes),
                    )
                )
            armed_in = time.monotonic() - started
            print(
                f"armed {count} switches in {armed_in:.1f} s ({arming.again} beats sent again); "
                f"their deadlines fall in "
                f"{datetime.fromtimestamp(second, UTC):%H:%M:%S} UTC, "
                f"{second - time.time():.1f} s from now",
                file=sys.stderr,
                flush=True,
            )

            time.sleep(max(0.0, second - QUIET_SECONDS - time.time()))
            trickle.start()
            sqs = runtime.pump.clients.sqs
            timers = runtime.deployment.queues["TimerQueue"].url
            give_up = second + bound
            time.sleep(max(0.0, second + 2 - time.time()))
            # The burst is over when nothing is left to receive or in flight on the timer queue
            # (the trickle's timers wait there delayed, long after this run).
            while time.time() < give_up and queue_depth(
                sqs,
                timers,
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
            ):
                time.sleep(LOOK_EVERY_SECONDS)
            burst_over = time.time()
            trickle.stop()

            deaths: dict[str, list[dict[str, Any]]] = {}
            wanted = set(scopes)
            while True:
                deaths = {}
                for death in all_deaths(operator):
                    if death["scope"] in wanted:
                        deaths.setdefault(death["scope"], []).append(death)
                if len(deaths) == count or time.time() >= give_up:
                    break
                time.sleep(5 * LOOK_EVERY_SECONDS)
            dead_letters = {
                queue.logical_id: queue_depth(
                    sqs,
                    queue.url,
                    "ApproximateNumberOfMessages",
                    "ApproximateNumberOfMessagesNotVisible",
                    "ApproximateNumberOfMessagesDelayed",
                )
                for queue in runtime.deployment.queues.values()
                if queue.logical_id.endswith("DLQ")
            }
    return Result(
        count=count,
        second=datetime.fromtimestamp(second, UTC),
        armed_in=armed_in,
        deadlines=deadlines,
        deaths=deaths,
        never=sorted(wanted - set(deaths)),
        dead_letters=dead_letters,
        quiet=[b for b in trickle.beats if b.started < second],
        during=[b for b in trickle.beats if second <= b.started <= burst_over],
        burst_seconds=burst_over - second,
    )


def beat_figures(beats: list[Beat]) -> str:
    answered = [b.seconds * 1000 for b in beats if b.error is None]
    errors = sum(1 for b in beats if b.error is not None)
    if not answered:
        return f"{len(beats)} beats, none answered, {errors} errors"
    return (
        f"{len(beats)} beats, p50 {statistics.median(answered):.0f} ms, "
        f"p99 {percentile(answered, 0.99):.0f} ms, max {max(answered):.0f} ms, {errors} errors"
    )


def summary(result: Result) -> list[str]:
    lateness = result.lateness
    spread = max(result.deadlines) - min(result.deadlines)
    lines = [
        f"switches:        {result.count}, armed in {result.armed_in:.1f} s, deadlines "
        f"within {spread.total_seconds():.3f} s of each other",
        f"died:            {len(result.deaths)}",
        f"died twice:      {result.twice}",
        f"never died:      {len(result.never)}"
        + (f" (e.g. {', '.join(result.never[:5])})" if result.never else ""),
    ]
    if lateness:
        lines.append(
            f"lateness:        p50 {statistics.median(lateness):.2f} s, "
            f"p99 {percentile(lateness, 0.99):.2f} s, max {max(lateness):.2f} s"
        )
    lines += [
        f"dead letters:    {', '.join(f'{k} {v}' for k, v in sorted(result.dead_letters.items()))}",
        f"beats, quiet:    {beat_figures(result.quiet)}",
        f"beats, burst:    {beat_figures(result.during)} "
        f"(the {result.burst_seconds:.1f} s until the timer queue was empty)",
    ]
    return lines


def row(result: Result) -> str:
    lateness = result.lateness or [math.nan]
    during = [b.seconds * 1000 for b in result.during if b.error is None] or [math.nan]
    return (
        f"| {result.count} | {len(result.deaths)} | {result.twice} | {len(result.never)} | "
        f"{statistics.median(lateness):.2f} | {percentile(lateness, 0.99):.2f} | "
        f"{max(lateness):.2f} | {sum(result.dead_letters.values())} | "
        f"{statistics.median(during):.0f} | {percentile(during, 0.99):.0f} | "
        f"{sum(1 for b in result.during if b.error is not None)} |"
    )


def written(result: Result, argv: list[str], load: tuple[float, float, float]) -> str:
    return "\n".join(
        [
            "",
            "| switches | died | died twice | never died | lateness p50 (s) | p99 (s) | max (s) "
            "| dead letters | beats during the burst p50 (ms) | p99 (ms) | beat errors |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            row(result),
            "",
            f"- Command: `{command_line(argv, 'scripts/burst.py')}`",
            f"- Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
            f"- Machine: {os.cpu_count()} CPUs (nproc), Python {platform.python_version()}, "
            f"{platform.system()} {platform.machine()}; 1-minute load average {load[0]:.1f} at "
            f"the start, {os.getloadavg()[0]:.1f} at the end",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from vigil.local.runtime import template_parameter

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--count", type=int, default=300, help="switches to arm (default 300)")
    parser.add_argument(
        "--parameter",
        type=template_parameter,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a template parameter for the runtime (repeatable)",
    )
    parser.add_argument(
        "--contention", action="store_true", help="start the runtime with contention=True"
    )
    parser.add_argument(
        "--lead",
        type=float,
        default=None,
        help="seconds from the start of arming to the burst's second "
        "(default 15 + count / 20: arming must be over by then)",
    )
    parser.add_argument(
        "--bound",
        type=float,
        default=180.0,
        help="seconds after the burst's second a switch may take to die (default 180)",
    )
    parser.add_argument("--write", type=Path, help="append the results to this Markdown file")
    args = parser.parse_args(argv)
    if args.count < 1:
        parser.error("--count must be at least 1")
    lead = args.lead if args.lead is not None else 15 + args.count / 20

    load = os.getloadavg()
    result = measure(args.count, dict(args.parameter), args.contention, lead, args.bound)
    print(f"\nDeaths in a burst ({args.count} switches, one namespace, one second)")
    print("\n".join(summary(result)))
    if args.write is not None:
        with args.write.open("a", encoding="utf-8") as stream:
            stream.write(written(result, argv, load))
        print(f"\nappended to {args.write}")
    return 1 if result.failed else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    # The runtime's children (the DynamoDB front) import this tree too.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    raise SystemExit(main())
