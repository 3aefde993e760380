"""A DynamoDB write that meets another transaction on one of its items, at every write of the
paths a burst of deaths crowds: a switch armed, beaten late and disarmed, a death fired and its
actions run, a request asked, decided and expired.

DynamoDB cancels such a write (``TransactionConflict``) and writes nothing; DynamoDB Local
never does, so the conflict is injected. The store sends the same request again after a short
pause: the call answers as the clean run did, and the stored state is the clean run's. A
conflict that outlasts every resend is ``throttled``, retryable, and the retried call
converges to the same state.
"""

from __future__ import annotations

import functools

import pytest

from tests.faults.injector import Fault
from tests.faults.runner import Run, compare, run
from tests.faults.scenarios import ALARM_SCENARIOS, Scenario, every_scenario
from vigil.kit.dynamo import DynamoBase

WRITES = frozenset(
    f"dynamodb.{operation}"
    for operation in ("TransactWriteItems", "PutItem", "UpdateItem", "DeleteItem")
)
CROWDED_TOOLS = {"heartbeat", "ask", "reply", "replace_request"}
SCENARIOS = [
    *(s for s in every_scenario(mutating_only=True) if s.tool in CROWDED_TOOLS),
    *ALARM_SCENARIOS,
]


@functools.cache
def clean_run(scenario: Scenario) -> Run:
    return run(scenario)


def _writes(clean: Run) -> list[int]:
    return [index for index, call in enumerate(clean.calls) if call in WRITES]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: f"{s.tool}: {s.name}")
def test_a_conflict_at_any_write_is_sent_again_in_place(aws: None, scenario: Scenario) -> None:
    clean = clean_run(scenario)
    assert clean.outcomes == ["ok"]
    assert not clean.problems, clean.problems
    writes = _writes(clean)
    assert writes, f"{scenario.name}: writes nothing"
    report = []
    for index in writes:
        faulted = run(scenario, (index, Fault("conflict", 2)))
        problems = compare(scenario, clean, faulted)
        if faulted.outcomes != ["ok"]:
            problems.append(f"answered {faulted.outcomes}, not the clean run's answer at once")
        if problems:
            report.append(f"- {faulted.fired}: " + "; ".join(problems))
    assert not report, f"{scenario.name}: {len(writes)} writes ({clean.calls}):\n" + "\n".join(
        report
    )


@pytest.mark.parametrize("scenario", SCENARIOS[:1] + ALARM_SCENARIOS[1:2], ids=lambda s: s.name)
def test_a_conflict_that_outlasts_every_resend_is_throttled_and_converges(
    aws: None, scenario: Scenario
) -> None:
    clean = clean_run(scenario)
    index = _writes(clean)[0]
    faulted = run(scenario, (index, Fault("conflict", DynamoBase.backoff.attempts)))
    assert not compare(scenario, clean, faulted), compare(scenario, clean, faulted)
    if scenario.typed_errors:
        assert faulted.outcomes[0] == "throttled", faulted.outcomes
        assert faulted.outcomes[-1] == "ok"
