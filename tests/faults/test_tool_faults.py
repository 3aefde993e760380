"""Every mutating tool of the catalog, with one AWS fault at each of its AWS calls in turn:
throttling, a 5xx, a read timeout and a crash right after a call took effect.

For each fault the caller gets a typed retryable error or a success, never an untyped error;
retrying the same call (with the same idempotency key where the tool takes one) converges; and
once the caller has dealt with the answer it saw and every mailbox is drained, the stored state
(table, queues, schedules) is the one a clean run leaves, and no invariant is broken: no half-
made record, no envelope handed out twice, no alert lost.

The default run tries, at each call index, a crash and one of the three other kinds (taking
turns by index; see ``faults_at``); VIGIL_FAULTS_FULL=1 tries every variant of every kind at
every index (about four times as long).
"""

from __future__ import annotations

import functools
import os

import pytest

from tests.faults.injector import KINDS, FaultKind, faults_at
from tests.faults.runner import Run, compare, run
from tests.faults.scenarios import ALARM_SCENARIOS, Scenario, every_scenario

FULL = os.environ.get("VIGIL_FAULTS_FULL", "") not in ("", "0")
TOOL_SCENARIOS = every_scenario(mutating_only=True)


# Faults whose outcome is a known defect of src/ (reported, not fixed here): scenario name ->
# what goes wrong. A faulted run that differs from the clean one in exactly that way makes the
# test xfail instead of fail; any other difference still fails it.
KNOWN_DEFECTS: dict[str, str] = {}


def _hides_the_death(clean: Run, faulted: Run) -> bool:
    found, expected = faulted.masked_result, clean.masked_result
    return (
        isinstance(found, dict)
        and isinstance(expected, dict)
        and found.get("death") is None
        and expected.get("death") is not None
        and {**found, "death": None} == {**expected, "death": None}
        and faulted.state == clean.state
        and not faulted.problems
    )


@functools.cache
def clean_run(scenario: Scenario) -> Run:
    return run(scenario)


def _every_call_converges(scenario: Scenario, kind: FaultKind) -> None:
    clean = clean_run(scenario)
    assert clean.outcomes == ["ok"], (
        f"{scenario.name}: the clean call answered {clean.outcomes}; "
        + (
            "its arguments come from the schema: add a scenario in tests/faults/scenarios.py"
            if scenario.generic
            else "fix its scenario"
        )
    )
    assert not clean.problems, f"{scenario.name}: clean run: {clean.problems}"
    assert clean.calls, f"{scenario.name}: makes no AWS call"
    report, known = [], []
    for index in range(len(clean.calls)):
        for fault in faults_at(kind, index, FULL):
            faulted = run(scenario, (index, fault))
            problems = compare(scenario, clean, faulted)
            if not problems:
                continue
            line = f"- {faulted.fired or fault} -> {faulted.outcomes}"
            if scenario.name in KNOWN_DEFECTS and _hides_the_death(clean, faulted):
                known.append(line)
            else:
                report.append(line + "\n    " + "\n    ".join(problems))
    assert not report, (
        f"{scenario.name}: {len(report)} fault(s) of {len(clean.calls)} calls "
        f"({', '.join(clean.calls)}) did not converge:\n" + "\n".join(report)
    )
    if known:
        pytest.xfail(f"{KNOWN_DEFECTS[scenario.name]}:\n" + "\n".join(known))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("scenario", TOOL_SCENARIOS, ids=lambda s: s.name)
def test_a_fault_at_any_call_of_a_tool_converges(
    aws: None, scenario: Scenario, kind: FaultKind
) -> None:
    _every_call_converges(scenario, kind)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("scenario", ALARM_SCENARIOS, ids=lambda s: s.name)
def test_a_fault_at_any_call_of_the_alarm_function_converges_on_redelivery(
    aws: None, scenario: Scenario, kind: FaultKind
) -> None:
    _every_call_converges(scenario, kind)


def test_every_mutating_tool_is_covered() -> None:
    from vigil import catalog

    mutating = {tool.name for tool in catalog.tools() if not tool.read_only}
    assert mutating == {scenario.tool for scenario in TOOL_SCENARIOS}
