"""What a burst of deaths in one namespace asks of each DynamoDB item and partition on AWS: a
model from the calls the fire path makes, counted on moto, not a guess.

Usage: .venv/bin/python scripts/burst_model.py [--switches 200] [--burst 50000]
                                               [--concurrency 250] [--call-ms 4] [--write FILE]

It builds one namespace on moto (the fault suite's world: the real DynamoStore, SQS queues and
alarms, the App on top), with a webhook channel that wants every switch.fired event, and arms
``--switches`` switches, each holding two leases of its scope, with every action of
``on_expiry`` and its alerts to one supervisor's mailbox: a host of agents going down together.
They all come due in the same second, and their timers go through the alarm function's own
batch loop, ten a batch, as the timer queue hands them out. Every DynamoDB call is metered
(``costs.Meter``), with the item each unit lands on.

The model: on AWS, a burst fires at a rate bounded by the alarm function's concurrency
(``--concurrency`` batches at once: the template's AlarmConcurrency) times ten timers a batch,
over a batch's time, which is at least its calls, counted here, at ``--call-ms`` each (DynamoDB
answers in single-digit milliseconds). A partition written by many fires takes its units per
fire times that rate; one written by a single fire (a switch's own) takes that fire's units
once. The script prints the items each fire writes and reads, the busiest partitions at that
rate beside DynamoDB's limits (1,000 write units and 3,000 read units a second), and the time
the burst takes; it exits 1 if any partition is over its limit.

It also prints the items that arming, a steady beat, a disarm, an ask and a decision write and
read, each counted the same way once (the first three in the same world).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]
os.environ.setdefault("VIGIL_LOG_LEVEL", "WARNING")

WRITE_LIMIT = 1000.0  # write units a second, one partition
READ_LIMIT = 3000.0  # read units a second, one partition (strongly consistent: 4 KB each)
BATCH = 10  # timers a batch: the timer queue's event source mapping (template.yaml)
# The busiest of a family of partitions a hash spreads a burst over takes more than their mean:
# for 50,000 rows over 32 partitions about 1,560 each, give or take 40; a tenth more covers it.
HASH_SLACK = 1.1

# Names a key's parts by what they are, so that one fire's items read as the kinds they are.
_SHAPES = [
    (re.compile(r"^\d{15}#[0-9a-f]{16}#\d{12}$"), "<fired at>#<scope digest>#<generation>"),
    (re.compile(r"[a-z]{2,4}_[a-z2-7]{16,32}"), "<id>"),
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"host-7/agent-\d+/r\d+"), "<resource>"),
    (re.compile(r"host-7/agent-\d+|job-\d+"), "<scope>"),
    (re.compile(r"#(QUOTAS|DEATHS)#\d+$"), r"#\1#<k>"),
    (re.compile(r"#\d{6,}(#|$)"), r"#<n>\1"),
    (re.compile(r"^gsi(\d):SWEEP#\d+"), r"gsi\1:SWEEP#<k>"),
    (re.compile(r"^SWEEP#\d+$"), "SWEEP#<k>"),
    (re.compile(r"acme"), "<ns>"),
]


def shape(key: str) -> str:
    for pattern, name in _SHAPES:
        key = pattern.sub(name, key)
    return key


def _meter(world: Any) -> Any:
    from costs import Meter

    meter = Meter()
    meter.hook(world.dynamodb)
    return meter


def _by_shape(
    items: dict[tuple[str, str], list[float]], times: int
) -> list[tuple[str, float, float]]:
    """Units per ``times`` operations, by the shape of the item they landed on."""
    shaped: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for (pk, sk), (written, read) in items.items():
        landed = shaped[f"{shape(pk)} / {shape(sk)}"]
        landed[0] += written / times
        landed[1] += read / times
    return sorted(((k, w, r) for k, (w, r) in shaped.items()), key=lambda row: row[0])


def fire_burst(switches: int) -> tuple[Any, int, float]:
    """The burst on moto: the meter of its fires, how many fired, and its calls per fire."""
    from tests.faults.world import World
    from vigil.entrypoints import alarm
    from vigil.entrypoints.timer_events import serve
    from vigil.kit.batch import one_batch
    from vigil.switches.timers import timer_for

    world = World()
    world.call(
        "create_channel",
        "operator",
        name="on-call",
        kind="webhook",
        url="https://receiver.example.com/vigil",
        rules=[{"events": ["switch.fired"]}],
    )
    scopes = [f"host-7/agent-{n}" for n in range(switches)]
    for scope in scopes:
        for lease in range(2):
            world.call(
                "acquire_lease",
                "worker",
                resource=f"{scope}/r{lease}",
                scope=scope,
                ttl_seconds=3600,
            )
        world.call(
            "heartbeat",
            "worker",
            scope=scope,
            expect_within_seconds=60,
            on_expiry=["release_leases", "mark_failed", "queue_alert"],
            notify_address=world.address("watcher"),
        )
    world.clock.advance(61)
    due = []
    for scope in scopes:
        switch = world.store.get_switch("acme", scope)
        assert switch is not None
        due.append(timer_for(switch, switch.alarm_due))
    meter = _meter(world)
    log = logging.getLogger("burst_model")
    for start in range(0, len(due), BATCH):
        records = [
            {"messageId": str(n), "body": timer.model_dump_json()}
            for n, timer in enumerate(due[start : start + BATCH], start)
        ]
        with one_batch():
            world.switch_engine.read_ahead(due[start : start + BATCH])
            answer = serve(
                {"Records": records},
                world.clock,
                world.alarms,
                lambda: alarm.handlers(world.switch_engine),
                log,
            )
        assert answer == {"batchItemFailures": []}, answer
    meter.unhook(world.dynamodb)
    fired = sum(
        1 for scope in scopes if (s := world.store.get_switch("acme", scope)) and s.state == "fired"
    )
    dynamo_calls = sum(n for call, n in meter.calls.items() if call.startswith("dynamodb."))
    return meter, fired, dynamo_calls / switches


def operations() -> list[tuple[str, list[tuple[str, float, float]]]]:
    """The items each of a few operations writes and reads, one call each."""
    from tests.faults.runner import attempt
    from tests.faults.scenarios import ALARM_SCENARIOS, every_scenario
    from tests.faults.world import World

    wanted = {
        ("heartbeat", "first beat, timer queue"): "arm (first beat)",
        ("heartbeat", "steady beat"): "steady beat",
        ("heartbeat", "disarm"): "disarm",
        ("ask", "a question to an agent, a new direct conversation"): "ask",
        ("reply", "approve an approval"): "decide (reply)",
        ("alarm", "a blocking request expires"): "a request expires",
    }
    rows = []
    for scenario in [*every_scenario(mutating_only=True), *ALARM_SCENARIOS]:
        label = next(
            (
                v
                for (tool, name), v in wanted.items()
                if scenario.tool == tool and name in scenario.name
            ),
            None,
        )
        if label is None:
            continue
        world = World()
        arguments = scenario.prepare(world)
        meter = _meter(world)
        outcome, _ = attempt(world, scenario, arguments)
        meter.unhook(world.dynamodb)
        assert outcome == "ok", (scenario.name, outcome)
        rows.append((label, _by_shape(meter.items, 1)))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--switches", type=int, default=200, help="switches fired on moto")
    parser.add_argument("--burst", type=int, default=50_000, help="deaths in the modelled burst")
    parser.add_argument(
        "--concurrency", type=int, default=250, help="alarm batches at once (AlarmConcurrency)"
    )
    parser.add_argument("--call-ms", type=float, default=4.0, help="one DynamoDB call, ms")
    parser.add_argument("--write", type=Path, help="also write the tables to this Markdown file")
    args = parser.parse_args(argv)

    from moto import mock_aws

    os.environ.update(AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x")
    os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
    os.environ.pop("AWS_ENDPOINT_URL", None)
    with mock_aws():
        meter, fired, calls_per_fire = fire_burst(args.switches)
    if fired != args.switches:
        print(f"only {fired} of {args.switches} switches fired", file=sys.stderr)
        return 1

    batch_seconds = BATCH * calls_per_fire * args.call_ms / 1000
    rate = args.concurrency * BATCH / batch_seconds
    lines = [
        f"Fire path, counted on moto: {args.switches} switches of one namespace due in one second, "
        f"in batches of {BATCH}; {calls_per_fire:.1f} DynamoDB calls a fire.",
        "",
        "| item (pk / sk) | write units a fire | read units a fire |",
        "| --- | ---: | ---: |",
    ]
    for key, written, read in _by_shape(meter.items, args.switches):
        lines.append(f"| `{key}` | {written:.2f} | {read:.2f} |")

    # A partition's load in the burst: its units per fire at the burst's rate, unless a single
    # fire wrote it (a switch's own partition), which it takes once.
    by_partition: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for (pk, _sk), (written, read) in meter.items.items():
        by_partition[pk][0] += written
        by_partition[pk][1] += read
    shared_ones = _shared_partitions(meter.items)
    shards = _shard_counts()
    merged: dict[tuple[str, bool], list[float]] = {}
    spread: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for pk, (written, read) in by_partition.items():
        name, shared = shape(pk), pk in shared_ones
        if name in shards:
            # Spread by a hash: a family's units a fire, over its partitions, with room for
            # the hash's unevenness (HASH_SLACK); a small run's own spread says little.
            spread[name][0] += written
            spread[name][1] += read
            continue
        per_second = (
            (written / args.switches * rate, read / args.switches * rate)
            if shared
            else (written, read)
        )
        top = merged.setdefault((name, shared), [0.0, 0.0])
        top[0], top[1] = max(top[0], per_second[0]), max(top[1], per_second[1])
    for name, (written, read) in spread.items():
        each = rate / args.switches / shards[name] * HASH_SLACK
        merged[(name, True)] = [written * each, read * each]
    worst = sorted(
        merged.items(), key=lambda kv: -max(kv[1][0] / WRITE_LIMIT, kv[1][1] / READ_LIMIT)
    )
    over = [name for (name, _), (w, r) in worst if w > WRITE_LIMIT or r > READ_LIMIT]
    lines += [
        "",
        f"A burst of {args.burst:,} on AWS: {args.concurrency} batches at once "
        f"(AlarmConcurrency), a batch at least {batch_seconds:.2f} s "
        f"({BATCH} fires x {calls_per_fire:.1f} calls x {args.call_ms:g} ms): at most "
        f"{rate:,.0f} fires a second, the burst in {args.burst / rate:.0f} s or more.",
        "",
        f"Partitions a hash spreads the burst over take their family's units over their count, "
        f"times {HASH_SLACK:g} for the hash's unevenness.",
        "",
        "| partition | shared by the burst | write units/s | of 1,000 | read units/s | of 3,000 |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for (name, shared), (w, r) in worst[:12]:
        lines.append(
            f"| `{name}` | {'yes' if shared else 'no (one fire)'} | {w:,.0f} | "
            f"{w / WRITE_LIMIT:.0%} | {r:,.0f} | {r / READ_LIMIT:.0%} |"
        )
    lines += ["", "Items other operations write and read (one call each):", ""]
    with mock_aws():
        for label, items in operations():
            lines.append(
                f"- {label}: " + "; ".join(f"`{key}` {w:g} W / {r:g} R" for key, w, r in items)
            )
    lines.append("")
    lines.append(
        "Every partition within its limits." if not over else f"Over a limit: {', '.join(over)}."
    )
    text = "\n".join(lines)
    print(text)
    if args.write:
        args.write.write_text(text + "\n")
    return 1 if over else 0


def _shard_counts() -> dict[str, int]:
    """The families of partitions a hash spreads a burst over, by shape, and how many each."""
    from vigil.quotas.store import QUOTA_SHARDS
    from vigil.switches.dynamo import DEATH_INDEX, DEATH_SHARDS, SWEEP_INDEX
    from vigil.switches.store import SWEEP_SHARDS

    return {
        f"{DEATH_INDEX}:NS#<ns>#DEATHS#<k>": DEATH_SHARDS,
        "NS#<ns>#QUOTAS#<k>": QUOTA_SHARDS,
        # Shared by every namespace's switches: a burst in one spreads over all of them.
        f"{SWEEP_INDEX}:SWEEP#<k>": SWEEP_SHARDS,
    }


def _shared_partitions(items: dict[tuple[str, str], list[float]]) -> set[str]:
    """Partitions whose keys are not one scope's or one death's own: the namespace's, a
    shard's, a channel's, a mailbox owner's."""
    own = re.compile(r"#(SW|SCOPE|LEASE)#host-7/agent-\d+(/r\d+)?$|#NOTICE#")
    return {pk for pk, _ in items if not own.search(pk)}


if __name__ == "__main__":
    sys.exit(main())
