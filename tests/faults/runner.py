"""One scenario, run once in a fresh world, with or without one fault, then retried until it
converges, settled, drained and read back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.faults.injector import Fault
from tests.faults.scenarios import Scenario
from tests.faults.state import Masker, State, canonical, differences, invariants
from tests.faults.world import World
from vigil.errors import VigilError
from vigil.kit.idempotency import LOCK_SECONDS

MAX_RETRIES = 4
RETRYABLE = frozenset({"throttled", "unavailable"})


@dataclass
class Run:
    outcomes: list[str]  # "ok", a typed error code, or "untyped <exception>"
    result: dict[str, Any] | None
    calls: list[str]  # the AWS calls of the first attempt, in order
    fired: str | None
    state: State
    masked_result: Any
    problems: list[str] = field(default_factory=list)


def attempt(world: World, scenario: Scenario, arguments: dict[str, Any]) -> tuple[str, Any]:
    try:
        return "ok", scenario.run(world, scenario, dict(arguments))
    except VigilError as error:
        body = error.to_dict()
        retryable = body["retryable"] is True and error.code.value in RETRYABLE
        return (error.code.value if retryable else f"{error.code.value} (not retryable)"), None
    except Exception as error:
        return f"untyped {type(error).__name__}: {error}", None


def run(scenario: Scenario, fault: tuple[int, Fault] | None = None) -> Run:
    world = World()
    arguments = scenario.prepare(world)
    if fault is None:
        world.injector.reset()
    else:
        world.injector.plan(*fault)
    outcome, result = attempt(world, scenario, arguments)
    calls, fired, crashed = list(world.injector.calls), world.injector.fired, world.injector.dead
    if crashed:
        world.restart()
    world.injector.reset()
    outcomes = [outcome]
    problems = []
    if fault is not None and scenario.typed_errors and outcome not in ("ok", *RETRYABLE):
        problems.append(f"the faulted call answered {outcome!r}, not a typed retryable error")
    for retry in range(MAX_RETRIES):
        if result is not None or (scenario.typed_errors and outcomes[-1] not in RETRYABLE):
            break
        if retry and scenario.keyed:
            world.clock.advance(LOCK_SECONDS + 1)  # a claim whose attempt died stays locked
        outcome, result = attempt(world, scenario, arguments)
        outcomes.append(outcome)
    if result is None:
        problems.append(f"did not converge: {outcomes}")
    else:
        world.learn(result)
        scenario.settle(world, arguments, result)
    world.drain()
    snapshot = world.snapshot()
    problems += invariants(snapshot, world)
    mask = Masker(dict(world.labels), scenario.tolerate)
    return Run(
        outcomes=outcomes,
        result=result,
        calls=calls,
        fired=fired,
        state=canonical(snapshot, world, scenario.tolerate),
        masked_result=mask(result),
        problems=problems,
    )


def compare(scenario: Scenario, clean: Run, faulted: Run) -> list[str]:
    """What the faulted run got wrong, measured against the clean one."""
    if faulted.fired is None:
        return ["the fault never fired: the calls differ from the clean run's"]
    problems = list(faulted.problems)
    answered = scenario.compare_result and faulted.result is not None
    if answered and faulted.masked_result != clean.masked_result:
        problems.append(
            f"converged to another answer:\n  {faulted.masked_result}\n"
            f"  clean: {clean.masked_result}"
        )
    problems += differences(clean.state, faulted.state, counted=not scenario.audits_each_attempt)
    return problems
