"""A capacity plan for a fleet: ``vigil plan --agents N --beat-every S --window W``.

From the fleet's shape it counts, per second, what the deployment does (beats, API requests,
alarm re-arms, sweep reads), and from those the template parameters to set, the AWS service
quotas to raise (by their names in Service Quotas) and the month's price. Every count per call
is the cost model's (scripts/costs.py, which tests/integration/test_costs.py holds); every
price is vigil.infra.prices'; every quota and limit is below with its source. docs/SCALE.md
explains the formulas and shows the plan for 10k, 100k and 1M agents.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from vigil.infra.prices import GB, MONTH_SECONDS, PRICE

# -- what one call costs (the cost model's counts: scripts/costs.py, section 7) ----------------
# A steady beat is one conditional write of an item under 1 KB; a call (a beat, or a batch of
# them) authenticates with one eventually consistent read of the caller under 4 KB.
WRITE_UNITS_PER_BEAT = 1.0
READ_UNITS_PER_CALL = 0.5
# Vigil's own log line per call at LogLevel INFO and the HTTP API's access log line (the
# template's defaults), measured by scripts/costs.py; a batch's answer makes its line longer.
VIGIL_LOG_BYTES = 295
ACCESS_LOG_BYTES = 239
# The handler's billed time on AWS at 512 MB arm64: a single beat's two DynamoDB round trips and
# its own work on a third of a vCPU (tests/integration/test_costs.py: DURATION_FLOOR_MS), and
# for each further beat of a batch, its own work and its write, ten at a time
# (BATCH_DURATION_FLOOR_MS: 200 ms for 50).
CALL_MS = 12.0
BATCHED_BEAT_MS = 3.8
MEMORY_GB = 0.5

# -- the alarms: one re-arm per window of each switch, never per beat -------------------------
# The next alarm is due a window after the last beat: a switch beaten every third of its window
# re-arms between once and 1.5 times a window (docs/PERFORMANCE.md, "Alarms"); counted at 1.5.
REARMS_PER_WINDOW = 1.5
# Each re-arm reads the switch and writes its alarm's due time (one unit each), and sends the
# next alarm: a delayed SQS message up to 900 s ahead, else a new schedule. All in, USD, from
# docs/PERFORMANCE.md's table (scripts/costs.py, section 4).
QUEUE_DELAY_SECONDS = 900
REARM_USD = {"queue": 1.65e-6, "schedule": 4.11e-6}
# A re-arm is three AWS round trips in the alarm function.
REARM_MS = 15.0

# -- the sweep, the net under the timers (docs/PERFORMANCE.md, "The sweep") --------------------
# Per armed switch each run: half a read unit for the switch and its share of the index's pages.
SWEEP_READ_UNITS_PER_SWITCH = 0.51
SWEEP_MINUTES = 5  # the template's SweepMinutes default

# -- limits, with their sources --------------------------------------------------------------
# DynamoDB: a partition takes 3,000 read and 1,000 write units a second; a new on-demand table
# 4,000 writes and 12,000 reads a second at once (then up to twice its previous peak within 30
# minutes); each table (and each index) 40,000 of each a second unless its quota is raised.
# docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html,
# .../on-demand-capacity-mode.html
PARTITION_READ_UNITS = 3000
PARTITION_WRITE_UNITS = 1000
NEW_TABLE_WRITE_UNITS = 4000
NEW_TABLE_READ_UNITS = 12000
TABLE_UNITS = 40_000
# A namespace's armed-switch counter is one item; arming writes it in a transaction (two units).
ARMS_PER_SECOND_PER_NAMESPACE = PARTITION_WRITE_UNITS // 2
# API Gateway: 10,000 requests a second per account and Region across its APIs, burst 5,000.
# docs.aws.amazon.com/apigateway/latest/developerguide/limits.html
ACCOUNT_API_RATE = 10_000
ACCOUNT_API_BURST = 5000
# Lambda: 1,000 concurrent executions per account and Region; 100 always stay unreserved; and
# a function takes at most 10 requests a second for each unit of its concurrency.
# docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html, .../scaling-behavior.html
ACCOUNT_CONCURRENCY = 1000
UNRESERVED = 100
REQUESTS_PER_CONCURRENCY = 10
# EventBridge Scheduler: schedules created and invoked, 1,000 a second each in the quota this
# plan assumes (docs.aws.amazon.com/scheduler/latest/UserGuide/scheduler-quotas.html; some
# Regions allow 5,000 CreateSchedule calls a second).
SCHEDULER_RATE = 1000
# The template's defaults this plan compares against.
DEFAULT_API_RATE = 1000
DEFAULT_API_BURST = 2000
DEFAULT_ARMED_SWITCHES = 25_000
DEFAULT_ALARM_CONCURRENCY = 250
# Headroom over the steady rate: bursts, a fleet's restarts, retries after throttling.
HEADROOM = 2.0

MAX_BATCH = 100


@dataclass(frozen=True)
class Fleet:
    agents: int
    beat_every: float  # seconds between an agent's beats
    window: int  # expect_within_seconds
    namespaces: int = 1
    batch: int = 1  # beats per call (heartbeat_batch up to 100)
    door: str = "HttpApi"

    def problems(self) -> list[str]:
        found = []
        if self.agents < 1:
            found.append("--agents must be at least 1")
        if not 2 <= self.window <= 2_592_000:
            found.append("--window must be 2 to 2,592,000 seconds")
        if not 0 < self.beat_every <= self.window:
            found.append("--beat-every must be more than 0 and at most --window")
        if self.namespaces < 1:
            found.append("--namespaces must be at least 1")
        if not 1 <= self.batch <= MAX_BATCH:
            found.append(f"--batch must be 1 to {MAX_BATCH}")
        if self.door not in ("HttpApi", "FunctionUrl"):
            found.append("--door must be HttpApi or FunctionUrl")
        return found


@dataclass(frozen=True)
class Quota:
    service: str
    name: str  # as Service Quotas names it
    code: str
    default: int
    needed: int

    def line(self) -> str:
        return (
            f"  {self.service}: {self.name} ({self.code}): {_n(self.needed)} "
            f"(default {_n(self.default)})"
        )


@dataclass(frozen=True)
class Plan:
    fleet: Fleet
    beats: float  # a second
    calls: float
    rearms: float
    write_units: float
    read_units: float
    sweep_read_units: float
    api_concurrency: float
    alarm_concurrency: float
    parameters: dict[str, int | str]
    quotas: list[Quota]
    notes: list[str]
    monthly_usd: dict[str, float] = field(default_factory=dict)

    @property
    def monthly_total(self) -> float:
        return sum(self.monthly_usd.values())


def _call_ms(batch: int) -> float:
    """The API function's billed time for a call of ``batch`` beats."""
    return CALL_MS + (batch - 1) * BATCHED_BEAT_MS


@dataclass(frozen=True)
class _Load:
    """What ``agents`` agents of a fleet's shape make the deployment do, a second."""

    beats: float
    calls: float
    rearms: float
    sweep_reads: float
    writes: float
    reads: float
    api_concurrency: float
    alarm_concurrency: float


def _load(fleet: Fleet, agents: float) -> _Load:
    beats = agents / fleet.beat_every
    calls = beats / fleet.batch
    rearms = REARMS_PER_WINDOW * agents / fleet.window
    sweep = agents * SWEEP_READ_UNITS_PER_SWITCH / (SWEEP_MINUTES * 60)
    return _Load(
        beats=beats,
        calls=calls,
        rearms=rearms,
        sweep_reads=sweep,
        writes=beats * WRITE_UNITS_PER_BEAT + rearms,
        reads=calls * READ_UNITS_PER_CALL + rearms + sweep,
        # What the API function holds at once, and never less than its request rate allows.
        api_concurrency=max(calls * _call_ms(fleet.batch) / 1000, calls / REQUESTS_PER_CONCURRENCY),
        alarm_concurrency=rearms * (REARM_MS / 1000),
    )


def per_beat_usd(batch: int, door: str = "HttpApi") -> dict[str, float]:
    """A steady beat's price, USD, part by part, where it is sent ``batch`` to a call: each
    call's fees, authentication, time and log lines shared by its beats."""
    log_bytes = VIGIL_LOG_BYTES + (ACCESS_LOG_BYTES if door == "HttpApi" else 0)
    per_call = {
        "http_api": PRICE["http_api_request"] if door == "HttpApi" else 0.0,
        "lambda_request": PRICE["lambda_request"],
        "duration": math.ceil(_call_ms(batch)) * MEMORY_GB * PRICE["lambda_arm64_gb_second"] / 1000,
        "logs": log_bytes / GB * PRICE["logs_ingested_gb"],
        "dynamodb": READ_UNITS_PER_CALL * PRICE["dynamodb_read_unit"],
    }
    parts = {name: value / batch for name, value in per_call.items()}
    parts["dynamodb"] += WRITE_UNITS_PER_BEAT * PRICE["dynamodb_write_unit"]
    return parts


def plan(fleet: Fleet) -> Plan:
    # A batch holds at most the fleet: fifty agents make batches of fifty, whatever --batch.
    fleet = replace(fleet, batch=min(fleet.batch, fleet.agents))
    load = _load(fleet, fleet.agents)
    beats, calls, rearms, sweep = load.beats, load.calls, load.rearms, load.sweep_reads
    writes, reads = load.writes, load.reads
    api_concurrency, alarm_concurrency = load.api_concurrency, load.alarm_concurrency
    scheduled = fleet.window > QUEUE_DELAY_SECONDS

    parameters: dict[str, int | str] = {}
    notes: list[str] = []
    rate = _rounded_up(calls * HEADROOM)
    if fleet.door == "HttpApi":
        parameters["ApiRateLimit"] = max(rate, DEFAULT_API_RATE)
        parameters["ApiBurstLimit"] = min(
            ACCOUNT_API_BURST, max(DEFAULT_API_BURST, _rounded_up(2 * calls * HEADROOM))
        )
    else:
        parameters["FrontDoor"] = "FunctionUrl"
        parameters["ApiReservedConcurrency"] = max(10, _rounded_up(api_concurrency * HEADROOM))
    per_namespace = math.ceil(fleet.agents / fleet.namespaces)
    parameters["QuotaArmedSwitches"] = max(
        DEFAULT_ARMED_SWITCHES, _rounded_up(per_namespace * 1.25)
    )
    parameters["AlarmConcurrency"] = min(
        1000, max(DEFAULT_ALARM_CONCURRENCY, _rounded_up(alarm_concurrency * HEADROOM))
    )
    warm_writes = _rounded_up(writes * 1.25)
    warm_reads = _rounded_up(reads * 1.25)
    parameters["TableWarmWriteUnits"] = warm_writes if warm_writes > NEW_TABLE_WRITE_UNITS else 0
    parameters["TableWarmReadUnits"] = warm_reads if warm_reads > NEW_TABLE_READ_UNITS else 0

    quotas = []
    if fleet.door == "HttpApi" and calls * HEADROOM > ACCOUNT_API_RATE:
        quotas.append(Quota("API Gateway", "Throttle rate", "L-8A5B8E43", ACCOUNT_API_RATE, rate))
    concurrency = (
        _rounded_up(api_concurrency * HEADROOM) + int(parameters["AlarmConcurrency"]) + UNRESERVED
    )
    if concurrency > ACCOUNT_CONCURRENCY:
        quotas.append(
            Quota(
                "AWS Lambda",
                "Concurrent executions",
                "L-B99A9384",
                ACCOUNT_CONCURRENCY,
                concurrency,
            )
        )
    if writes * 1.25 > TABLE_UNITS:
        quotas.append(
            Quota(
                "Amazon DynamoDB",
                "Table-level write throughput limit",
                "L-AB614373",
                TABLE_UNITS,
                warm_writes,
            )
        )
        notes.append(
            f"Raise the table's write quota before deploying TableWarmWriteUnits above "
            f"{_n(TABLE_UNITS)}: warm throughput cannot pass the table's quota."
        )
    if reads * 1.25 > TABLE_UNITS:
        notes.append(
            f"Raise the table's read quota before deploying TableWarmReadUnits above "
            f"{_n(TABLE_UNITS)}."
        )
        quotas.append(
            Quota(
                "Amazon DynamoDB",
                "Table-level read throughput limit",
                "L-CF0CBE56",
                TABLE_UNITS,
                warm_reads,
            )
        )
    if scheduled and rearms * HEADROOM > SCHEDULER_RATE:
        needed = _rounded_up(rearms * HEADROOM)
        for name in ("CreateSchedule requests rate", "Invocations throttle limit"):
            quotas.append(
                Quota("EventBridge Scheduler", name, "see the console", SCHEDULER_RATE, needed)
            )

    auth_units = calls / fleet.namespaces * READ_UNITS_PER_CALL
    if fleet.batch == 1 and auth_units > PARTITION_READ_UNITS:
        notes.append(
            f"Each call authenticates with a read of its caller's own item (spread: one "
            f"partition per principal); {_n(calls)} calls a second are no hot partition."
        )
    cold_start = per_namespace / ARMS_PER_SECOND_PER_NAMESPACE
    if cold_start > 60:
        notes.append(
            f"Arming a namespace's {_n(per_namespace)} switches from nothing takes at least "
            f"{_n(cold_start)} s: its armed-switch counter takes {ARMS_PER_SECOND_PER_NAMESPACE} "
            "arms a second (one item); a steady beat never writes it. Start a fleet over "
            "minutes, or spread it over more namespaces."
        )
    if writes > NEW_TABLE_WRITE_UNITS and parameters["TableWarmWriteUnits"]:
        notes.append(
            "Warm throughput is charged once when raised and can never be lowered: set it "
            "before the fleet's first hour, not after."
        )

    per_beat = per_beat_usd(fleet.batch, fleet.door)
    month = MONTH_SECONDS
    monthly = {
        "beats": sum(per_beat.values()) * beats * month,
        "alarm re-arms": REARM_USD["schedule" if scheduled else "queue"] * rearms * month,
        "sweep": sweep * PRICE["dynamodb_read_unit"] * month,
    }
    return Plan(
        fleet=fleet,
        beats=beats,
        calls=calls,
        rearms=rearms,
        write_units=writes,
        read_units=reads,
        sweep_read_units=sweep,
        api_concurrency=api_concurrency,
        alarm_concurrency=alarm_concurrency,
        parameters=parameters,
        quotas=quotas,
        notes=notes,
        monthly_usd=monthly,
    )


def ceilings(fleet: Fleet) -> list[tuple[int, str]]:
    """Each limit a deployment at the template's defaults has, and how many agents of the
    fleet's shape (its beats, window, batch and namespaces, whatever its size) reach it,
    fewest first: what runs out first as the fleet grows."""
    each = _load(fleet, 1)  # one agent's share, a second
    api_concurrency = ACCOUNT_CONCURRENCY - DEFAULT_ALARM_CONCURRENCY - UNRESERVED
    found = [
        (DEFAULT_ARMED_SWITCHES * fleet.namespaces, "QuotaArmedSwitches (25,000 a namespace)"),
        (NEW_TABLE_WRITE_UNITS / each.writes, "a new table's 4,000 write units a second"),
        (NEW_TABLE_READ_UNITS / each.reads, "a new table's 12,000 read units a second"),
        (TABLE_UNITS / each.writes, "the table's quota of 40,000 write units a second"),
        (TABLE_UNITS / each.reads, "the table's quota of 40,000 read units a second"),
        (
            DEFAULT_ALARM_CONCURRENCY / each.alarm_concurrency,
            "AlarmConcurrency (250 timer batches at once)",
        ),
        (
            api_concurrency / each.api_concurrency,
            "Lambda's 1,000 concurrent executions (650 left for the API)",
        ),
    ]
    if fleet.door == "HttpApi":
        found += [
            (DEFAULT_API_RATE / each.calls, "ApiRateLimit (1,000 requests a second)"),
            (ACCOUNT_API_RATE / each.calls, "API Gateway's 10,000 requests a second"),
        ]
    if fleet.window > QUEUE_DELAY_SECONDS:
        scheduler = "EventBridge Scheduler's 1,000 schedules a second"
        found.append((SCHEDULER_RATE / each.rearms, scheduler))
    return sorted((int(agents), what) for agents, what in found)


def _rounded_up(value: float) -> int:
    """Up to two significant figures: 3,334 → 3,400; 87 → 87."""
    if value <= 100:
        return max(1, math.ceil(value))
    step = 10 ** (int(math.log10(value)) - 1)
    return int(math.ceil(value / step) * step)


def _n(value: float) -> str:
    return f"{value:,.0f}"


def report(found: Plan) -> str:
    fleet = found.fleet
    way = "one call a beat" if fleet.batch == 1 else f"in batches of {fleet.batch}"
    lines = [
        f"Capacity plan: {_n(fleet.agents)} agents, a beat every {fleet.beat_every:g} s "
        f"({way}), window {_n(fleet.window)} s, {_n(fleet.namespaces)} namespace(s), "
        f"front door {fleet.door}",
        "",
        "Load, a second",
        f"  beats                  {_n(found.beats):>10}",
        f"  API requests           {_n(found.calls):>10}",
        f"  alarm re-arms, at most {_n(found.rearms):>10}",
        f"  DynamoDB write units   {_n(found.write_units):>10}  (beats and re-arms)",
        f"  DynamoDB read units    {_n(found.read_units):>10}  (authentication, re-arms, "
        f"the sweep's {_n(found.sweep_read_units)} on average)",
        f"  API concurrency        {_n(math.ceil(found.api_concurrency)):>10}",
        f"  alarm concurrency      {_n(math.ceil(found.alarm_concurrency)):>10}",
        "",
        "Template parameters (sam deploy --parameter-overrides)",
        *(f"  {name}={value}" for name, value in found.parameters.items()),
        "",
        "AWS service quotas to raise (Service Quotas, in the stack's Region)",
        *([quota.line() for quota in found.quotas] or ["  none: AWS's defaults suffice"]),
    ]
    if found.notes:
        lines += ["", "Notes", *(f"  - {note}" for note in found.notes)]
    lines += [
        "",
        "At the template's defaults, a fleet of this shape first reaches (agents)",
        *(f"  {_n(agents):>12}  {what}" for agents, what in ceilings(fleet)[:5]),
    ]
    lines += [
        "",
        "Price a month, USD (on-demand, us-east-1, no free tier)",
        *(f"  {name:22} {value:>12,.2f}" for name, value in found.monthly_usd.items()),
        f"  {'total':22} {found.monthly_total:>12,.2f}",
        f"  per agent              {found.monthly_total / fleet.agents:>12,.4f}",
    ]
    return "\n".join(lines)
