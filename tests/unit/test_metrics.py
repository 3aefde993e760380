"""CloudWatch metrics as embedded metric format (EMF) lines: each line read back and checked
against the EMF specification, and each metric at the one place that emits it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.liveness_support import World
from vigil.clock import ManualClock
from vigil.entrypoints import alarm, api
from vigil.errors import ErrorCode, VigilError
from vigil.kit.http import HttpResponse
from vigil.kit.retry import ATTEMPTS, retry_on_conflict
from vigil.kit.uow import ConditionFailed
from vigil.mailboxes.records import MAX_HANDOUTS
from vigil.observability import Metrics, metrics

SRC = Path(__file__).resolve().parents[2] / "src"
NOW = 1_800_000_000.25  # seconds; EMF's Timestamp is in milliseconds
STACK = "vigil-test"

# The units the EMF specification allows (CloudWatch's StandardUnit).
_SIZES = ("Bytes", "Kilobytes", "Megabytes", "Gigabytes", "Terabytes")
_BITS = ("Bits", "Kilobits", "Megabits", "Gigabits", "Terabits")
UNITS = frozenset(
    {
        *("Seconds", "Microseconds", "Milliseconds", "Percent", "Count", "None"),
        *_SIZES,
        *_BITS,
        *(f"{unit}/Second" for unit in (*_SIZES, *_BITS, "Count")),
    }
)


def emf(line: str) -> dict[str, Any]:
    """The document ``line`` holds, checked against the EMF specification: a JSON object
    whose ``_aws`` metadata has a Timestamp in epoch milliseconds and metric directives, each
    naming a namespace, dimension sets whose keys are string members of the root, and metric
    definitions whose names are numeric members of the root."""
    assert line.endswith("\n")
    assert "\n" not in line[:-1], "one log event per line"
    document = json.loads(line)
    assert isinstance(document, dict)
    metadata = document["_aws"]
    assert set(metadata) == {"Timestamp", "CloudWatchMetrics"}
    assert isinstance(metadata["Timestamp"], int)
    assert not isinstance(metadata["Timestamp"], bool)
    assert metadata["Timestamp"] == round(NOW * 1000)
    directives = metadata["CloudWatchMetrics"]
    assert isinstance(directives, list)
    assert directives
    for directive in directives:
        assert set(directive) == {"Namespace", "Dimensions", "Metrics"}
        assert directive["Namespace"] == "Vigil"
        assert isinstance(directive["Dimensions"], list)
        assert directive["Dimensions"]
        for dimension_set in directive["Dimensions"]:
            assert isinstance(dimension_set, list)
            assert len(dimension_set) <= 30
            for key in dimension_set:
                value = document[key]
                assert isinstance(value, str), key
                assert 1 <= len(value) <= 1024, key
        assert 1 <= len(directive["Metrics"]) <= 100
        for definition in directive["Metrics"]:
            assert set(definition) <= {"Name", "Unit", "StorageResolution"}
            assert 1 <= len(definition["Name"]) <= 255
            assert definition["Unit"] in UNITS
            value = document[definition["Name"]]
            assert isinstance(value, int | float)
            assert not isinstance(value, bool)
    return document


def metric(document: dict[str, Any]) -> dict[str, Any]:
    """What the document says: each metric's value and unit, and its dimension sets with
    their values."""
    (directive,) = document["_aws"]["CloudWatchMetrics"]
    for keys in directive["Dimensions"]:
        assert keys[:1] == ["Stack"], "every metric is the stack's own"
    assert document["Stack"] == STACK
    return {
        "metrics": {m["Name"]: (document[m["Name"]], m["Unit"]) for m in directive["Metrics"]},
        "dimensions": [
            {key: document[key] for key in keys[1:]} for keys in directive["Dimensions"]
        ],
    }


@pytest.fixture
def emitted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The lines the process's metrics write, from a sandbox that has not yet been invoked."""
    lines: list[str] = []
    monkeypatch.setattr(metrics, "write", lines.append)
    monkeypatch.setattr(metrics, "clock", lambda: NOW)
    monkeypatch.setattr(metrics, "stack", STACK)
    monkeypatch.setattr(metrics, "_started", set())
    return lines


def emitted_metrics(lines: list[str]) -> list[dict[str, Any]]:
    return [metric(emf(line)) for line in lines]


# ---------------------------------------------------------------- the emitter


def test_each_metric_is_one_emf_line_in_the_vigil_namespace() -> None:
    lines: list[str] = []
    emitter = Metrics(lines.append, clock=lambda: NOW, stack=STACK)
    emitter.switch_fired(1.25)
    emitter.delivered()
    emitter.last_handout()
    emitter.version_conflict()
    emitter.error("heartbeat", "not_found")
    emitter.cold_start("api")
    assert emitted_metrics(lines) == [
        {
            "metrics": {"SwitchFired": (1, "Count"), "ExpiryLateness": (1.25, "Seconds")},
            "dimensions": [{}],
        },
        {"metrics": {"Deliveries": (1, "Count")}, "dimensions": [{}]},
        {"metrics": {"LastHandouts": (1, "Count")}, "dimensions": [{}]},
        {"metrics": {"VersionConflicts": (1, "Count")}, "dimensions": [{}]},
        {
            "metrics": {"Errors": (1, "Count")},
            # In total, by code and by tool: never one metric per (code, tool) pair.
            "dimensions": [{}, {"Code": "not_found"}, {"Tool": "heartbeat"}],
        },
        {"metrics": {"ColdStart": (1, "Count")}, "dimensions": [{"Function": "api"}]},
    ]


def test_a_cold_start_is_counted_once_per_function_and_sandbox() -> None:
    lines: list[str] = []
    emitter = Metrics(lines.append, clock=lambda: NOW, stack=STACK)
    for function in ("api", "api", "alarm", "api", "alarm"):
        emitter.cold_start(function)
    started = [m["dimensions"] for m in emitted_metrics(lines)]
    assert started == [[{"Function": "api"}], [{"Function": "alarm"}]]


def test_without_a_writer_nothing_is_written_or_built() -> None:
    emitter = Metrics(None, clock=lambda: pytest.fail("the clock was read"))
    emitter.switch_fired(3.0)
    emitter.error("heartbeat", "unavailable")


@pytest.mark.parametrize(("in_lambda", "lines"), [(True, 1), (False, 0)])
def test_the_process_writes_metrics_to_stderr_only_in_lambda(in_lambda: bool, lines: int) -> None:
    env = {k: v for k, v in os.environ.items() if k != "AWS_LAMBDA_FUNCTION_NAME"}
    if in_lambda:
        env["AWS_LAMBDA_FUNCTION_NAME"] = "vigil-api"
    env["STACK_NAME"] = STACK
    code = "from vigil.observability import metrics; metrics.delivered()"
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == ""  # the stdio bridge's protocol channel stays clean
    written = done.stderr.splitlines(keepends=True)
    assert len(written) == lines
    for line in written:
        document = json.loads(line)
        assert document["Deliveries"] == 1
        assert document["Stack"] == STACK
        assert document["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "Vigil"


# ---------------------------------------------------------------- where each is emitted


def test_a_fired_switch_counts_and_reports_its_lateness_and_its_alert_a_delivery(
    clock: ManualClock, emitted: list[str]
) -> None:
    world = World(clock)
    agent, watcher = world.tenant.register(name="worker"), world.tenant.register(name="boss")
    world.call(
        "heartbeat",
        agent[1],
        scope="job-1",
        expect_within_seconds=3,
        on_expiry=["queue_alert"],
        notify_address=f"agent:{watcher[0]}",
    )
    world.advance(2)
    assert emitted_metrics(emitted) == []
    clock.advance(3.5)  # the alarm function runs 2.5 s after the deadline
    while world.run_alarms():
        pass
    assert emitted_metrics(emitted) == [
        {
            "metrics": {"SwitchFired": (1, "Count"), "ExpiryLateness": (2.5, "Seconds")},
            "dimensions": [{}],
        },
        {"metrics": {"Deliveries": (1, "Count")}, "dimensions": [{}]},
    ]


def test_the_last_hand_out_before_the_dead_letter_queue_is_counted_once(
    clock: ManualClock, emitted: list[str]
) -> None:
    world = World(clock)
    agent, watcher = world.tenant.register(name="worker"), world.tenant.register(name="boss")
    world.call(
        "heartbeat",
        agent[1],
        scope="job-1",
        expect_within_seconds=3,
        on_expiry=["queue_alert"],
        notify_address=f"agent:{watcher[0]}",
    )
    world.advance(5)
    emitted.clear()
    for handout in range(1, MAX_HANDOUTS + 1):
        (delivery,) = world.call("receive", watcher[1], lease_seconds=10)["deliveries"]
        assert delivery["generation"] == handout
        last = [{"metrics": {"LastHandouts": (1, "Count")}, "dimensions": [{}]}]
        assert emitted_metrics(emitted) == (last if handout == MAX_HANDOUTS else [])
        clock.advance(11)
    assert world.call("receive", watcher[1])["deliveries"] == []
    assert len(world.call("list_dead_letters", watcher[1])["dead_letters"]) == 1
    assert len(emitted) == 1


def test_a_lost_race_counts_a_version_conflict_per_retry(emitted: list[str]) -> None:
    losses = iter(range(2))

    def attempt() -> str:
        if next(losses, None) is not None:
            raise ConditionFailed("the record changed")
        return "done"

    assert retry_on_conflict(attempt, "the record") == "done"
    assert [m["metrics"] for m in emitted_metrics(emitted)] == [
        {"VersionConflicts": (1, "Count")}
    ] * 2

    emitted.clear()

    def always() -> str:
        raise ConditionFailed("the record changed")

    with pytest.raises(VigilError) as raised:
        retry_on_conflict(always, "the record")
    assert raised.value.code is ErrorCode.VERSION_CONFLICT
    assert len(emitted_metrics(emitted)) == ATTEMPTS


def test_a_failed_tool_call_counts_its_code_and_tool_and_nothing_secret(
    clock: ManualClock, emitted: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    world = World(clock)
    _, secret = world.tenant.register(name="worker")
    wrong = secret[:-4] + "AAAA"
    with pytest.raises(VigilError):
        world.call("heartbeat", wrong, scope="job-1", expect_within_seconds=30)
    with pytest.raises(VigilError):
        world.call("heartbeat", secret, scope="job-1", expect_within_seconds=-1)

    def broken(*args: Any) -> None:
        raise RuntimeError("the table is gone")

    monkeypatch.setattr(world.store, "get_principal", broken)
    with pytest.raises(VigilError):
        world.call("heartbeat", secret, scope="job-1", expect_within_seconds=30)
    errors = [m["dimensions"] for m in emitted_metrics(emitted)]
    assert errors == [
        [{}, {"Code": code}, {"Tool": "heartbeat"}]
        for code in ("unauthenticated", "invalid_argument", "unavailable")
    ]
    written = "".join(emitted)
    for text in (secret, wrong, world.tenant.operator_secret, "the table is gone"):
        assert text not in written


def test_each_function_counts_its_first_invocation_as_a_cold_start(
    clock: ManualClock, emitted: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    class Answering:
        def handle(self, request: Any) -> HttpResponse:
            return HttpResponse.json(200, {})

    world = World(clock)
    monkeypatch.setattr(api, "router", Answering)
    monkeypatch.setattr(alarm, "switch_engine", lambda: world.switch_engine)
    event = {"requestContext": {"http": {"method": "GET", "path": "/"}}, "rawPath": "/"}
    for _ in range(3):
        assert api.handler(event)["statusCode"] == 200
        assert alarm.handler({"Records": []}) == {"batchItemFailures": []}
    assert emitted_metrics(emitted) == [
        {"metrics": {"ColdStart": (1, "Count")}, "dimensions": [{"Function": function}]}
        for function in ("api", "alarm")
    ]
