"""Runs at the service layer: start, claim, renew, finish; fencing by generation; races."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from tests.support import Tenant, app_on, error_of, interleaving_store
from vigil import catalog
from vigil.clock import ManualClock, iso, parse_iso
from vigil.errors import ErrorCode, VigilError
from vigil.runs.records import Run

RUN_ID = "00000000-0000-4000-8000-0000000000aa"


class Workers:
    """Two workers of one namespace, calling the run tools."""

    def __init__(self, tenant: Tenant) -> None:
        self.tenant = tenant
        self.a_id, self.a = tenant.register(name="a")
        self.b_id, self.b = tenant.register(name="b")

    def call(self, tool: str, secret: str, **arguments: Any) -> dict[str, Any]:
        return self.tenant.call(tool, secret, **arguments)

    def run(self, tool: str, secret: str, **arguments: Any) -> dict[str, Any]:
        result: dict[str, Any] = self.call(tool, secret, **arguments)["run"]
        return result

    def start(self, secret: str | None = None, **arguments: Any) -> dict[str, Any]:
        return self.run("start_run", secret or self.a, **{"run_id": RUN_ID, **arguments})

    def stored(self, run_id: str = RUN_ID) -> Run | None:
        return self.tenant.app.store.get_run(self.tenant.namespace, run_id)


@pytest.fixture
def workers(tenant: Tenant) -> Workers:
    return Workers(tenant)


# -- start --------------------------------------------------------------------------------
def test_a_run_starts_held_by_its_starter_at_generation_one(
    workers: Workers, clock: ManualClock
) -> None:
    run = workers.start()
    assert run["run_id"] == RUN_ID
    assert (run["state"], run["holder"], run["generation"]) == ("running", workers.a_id, 1)
    assert parse_iso(run["expires_at"]) == clock.now() + timedelta(seconds=60)
    assert parse_iso(run["started_at"]) == clock.now()
    assert (run["outcome"], run["result"], run["finished_at"]) == (None, None, None)


def test_without_a_run_id_vigil_chooses_a_new_uuid(workers: Workers, clock: ManualClock) -> None:
    first = workers.run("start_run", workers.a, lease_duration_seconds=300)
    second = workers.run("start_run", workers.a)
    assert first["run_id"] != second["run_id"]
    assert uuid.UUID(first["run_id"]).version == 4
    assert parse_iso(first["expires_at"]) == clock.now() + timedelta(seconds=300)
    assert workers.stored(first["run_id"]) is not None


def test_a_run_id_in_use_is_a_conflict_and_changes_nothing(workers: Workers) -> None:
    workers.start()
    before = workers.stored()
    for secret in (workers.a, workers.b):
        error = error_of(workers.start, secret)
        assert error.code is ErrorCode.VERSION_CONFLICT
    assert workers.stored() == before


def test_a_run_id_is_taken_in_its_canonical_form(workers: Workers) -> None:
    run = workers.start(run_id=RUN_ID.upper())
    assert run["run_id"] == RUN_ID
    assert workers.run("get_run", workers.b, run_id=RUN_ID.upper())["run_id"] == RUN_ID


# -- renew --------------------------------------------------------------------------------
def test_the_heartbeat_returns_exactly_the_run_id_and_the_new_expiry(
    workers: Workers, clock: ManualClock
) -> None:
    workers.start()
    clock.advance(50)
    renewed = workers.call("create_run_heartbeat", workers.a, run_id=RUN_ID)
    assert set(renewed) == {"run_id", "expires_at"}
    assert renewed["run_id"] == RUN_ID
    assert parse_iso(renewed["expires_at"]) == clock.now() + timedelta(seconds=60)
    clock.advance(59)
    longer = workers.call(
        "create_run_heartbeat", workers.a, run_id=RUN_ID, lease_duration_seconds=300
    )
    assert set(longer) == {"run_id", "expires_at"}
    assert parse_iso(longer["expires_at"]) == clock.now() + timedelta(seconds=300)
    stored = workers.stored()
    assert stored is not None
    assert (stored.generation, stored.holder, stored.version) == (1, workers.a_id, 3)


def test_the_heartbeat_schemas_are_the_published_ones() -> None:
    tool = catalog.tool("create_run_heartbeat")
    given = tool.input_schema()
    assert given["required"] == ["run_id"]
    assert given["additionalProperties"] is False
    assert set(given["properties"]) == {"run_id", "lease_duration_seconds"}
    run_id, lease = given["properties"]["run_id"], given["properties"]["lease_duration_seconds"]
    assert (run_id["type"], run_id["format"]) == ("string", "uuid")
    assert (lease["type"], lease["minimum"], lease["maximum"], lease["default"]) == (
        "integer",
        5,
        300,
        60,
    )
    result = tool.output_schema()
    assert result["required"] == ["run_id", "expires_at"]
    assert result["additionalProperties"] is False
    assert {name: p["format"] for name, p in result["properties"].items()} == {
        "run_id": "uuid",
        "expires_at": "date-time",
    }


@pytest.mark.parametrize("seconds", [5, 300])
def test_lease_durations_at_the_bounds_are_accepted(
    workers: Workers, clock: ManualClock, seconds: int
) -> None:
    workers.start(lease_duration_seconds=seconds)
    renewed = workers.call(
        "create_run_heartbeat", workers.a, run_id=RUN_ID, lease_duration_seconds=seconds
    )
    assert parse_iso(renewed["expires_at"]) == clock.now() + timedelta(seconds=seconds)


def test_a_lapsed_lease_is_never_renewed_even_if_nobody_claimed_it(
    workers: Workers, clock: ManualClock
) -> None:
    workers.start(lease_duration_seconds=5)
    clock.advance(5)  # expires_at <= now: lapsed
    before = workers.stored()
    error = error_of(workers.call, "create_run_heartbeat", workers.a, run_id=RUN_ID)
    assert error.code is ErrorCode.STALE_GENERATION
    assert error.details == {"current_generation": 1}
    assert workers.stored() == before
    assert workers.run("get_run", workers.a, run_id=RUN_ID)["state"] == "lapsed"


def test_only_the_holder_may_renew(workers: Workers, clock: ManualClock) -> None:
    workers.start()
    before = workers.stored()
    error = error_of(workers.call, "create_run_heartbeat", workers.b, run_id=RUN_ID)
    assert error.code is ErrorCode.STALE_GENERATION
    assert error.details == {"current_generation": 1}
    operator = error_of(workers.tenant.call, "create_run_heartbeat", None, run_id=RUN_ID)
    assert operator.code is ErrorCode.STALE_GENERATION
    assert workers.stored() == before


def test_an_unknown_run_is_not_found(workers: Workers) -> None:
    for tool, more in [
        ("create_run_heartbeat", {}),
        ("claim_run", {}),
        ("finish_run", {"generation": 1, "outcome": "succeeded"}),
        ("get_run", {}),
    ]:
        error = error_of(workers.call, tool, workers.a, run_id=RUN_ID, **more)
        assert error.code is ErrorCode.NOT_FOUND


# -- claim --------------------------------------------------------------------------------
def test_a_run_claimed_away_fences_off_its_old_holder(workers: Workers, clock: ManualClock) -> None:
    workers.start(lease_duration_seconds=30)
    clock.advance(30)
    claimed = workers.run("claim_run", workers.b, run_id=RUN_ID, lease_duration_seconds=120)
    assert (claimed["holder"], claimed["generation"], claimed["state"]) == (
        workers.b_id,
        2,
        "running",
    )
    assert parse_iso(claimed["expires_at"]) == clock.now() + timedelta(seconds=120)
    after_claim = workers.stored()

    renew = error_of(workers.call, "create_run_heartbeat", workers.a, run_id=RUN_ID)
    assert renew.code is ErrorCode.STALE_GENERATION
    assert renew.details == {"current_generation": 2}
    for generation in (1, 2):  # not even the current generation is A's
        finish = error_of(
            workers.call,
            "finish_run",
            workers.a,
            run_id=RUN_ID,
            generation=generation,
            outcome="succeeded",
        )
        assert finish.code is ErrorCode.STALE_GENERATION
        assert finish.details == {"current_generation": 2}
    assert workers.stored() == after_claim

    # The new holder carries on.
    workers.call("create_run_heartbeat", workers.b, run_id=RUN_ID)
    done = workers.run("finish_run", workers.b, run_id=RUN_ID, generation=2, outcome="succeeded")
    assert (done["state"], done["holder"], done["generation"]) == ("finished", workers.b_id, 2)


def test_a_live_run_held_by_another_is_a_conflict_that_says_until_when(
    workers: Workers, clock: ManualClock
) -> None:
    workers.start(lease_duration_seconds=90)
    before = workers.stored()
    error = error_of(workers.call, "claim_run", workers.b, run_id=RUN_ID)
    assert error.code is ErrorCode.VERSION_CONFLICT
    until = iso(clock.now() + timedelta(seconds=90))
    assert error.details == {"held_until": until, "generation": 1}
    assert until in error.message
    assert workers.stored() == before


def test_the_live_holder_claiming_again_keeps_its_generation(
    workers: Workers, clock: ManualClock
) -> None:
    first = workers.start()
    clock.advance(30)
    again = workers.run("claim_run", workers.a, run_id=RUN_ID, lease_duration_seconds=200)
    assert again["generation"] == first["generation"] == 1
    assert parse_iso(again["expires_at"]) == clock.now() + timedelta(seconds=200)
    assert again["started_at"] == first["started_at"]


def test_every_claim_after_a_lapse_raises_the_generation(
    workers: Workers, clock: ManualClock
) -> None:
    workers.start(lease_duration_seconds=5)
    generations = []
    for secret in (workers.b, workers.a, workers.a):
        clock.advance(5)
        # The holder taking its own lapsed run again gets a new token too: it may have lost it.
        generations.append(workers.run("claim_run", secret, run_id=RUN_ID)["generation"])
        clock.advance(60)
    assert generations == [2, 3, 4]


# -- finish -------------------------------------------------------------------------------
def test_finish_records_the_outcome_and_ends_the_run_for_good(
    workers: Workers, clock: ManualClock
) -> None:
    workers.start()
    clock.advance(10)
    result = {"summary": "3 files changed", "checks": [{"name": "lint", "ok": True}]}
    done = workers.run(
        "finish_run", workers.a, run_id=RUN_ID, generation=1, outcome="failed", result=result
    )
    assert (done["state"], done["outcome"], done["result"]) == ("finished", "failed", result)
    assert parse_iso(done["finished_at"]) == parse_iso(done["expires_at"]) == clock.now()
    finished = workers.stored()

    renew = error_of(workers.call, "create_run_heartbeat", workers.a, run_id=RUN_ID)
    assert renew.code is ErrorCode.STALE_GENERATION
    assert renew.details == {"current_generation": 1}
    again = error_of(
        workers.call, "finish_run", workers.a, run_id=RUN_ID, generation=1, outcome="succeeded"
    )
    assert again.code is ErrorCode.STALE_GENERATION
    for secret in (workers.a, workers.b):
        claim = error_of(workers.call, "claim_run", secret, run_id=RUN_ID)
        assert claim.code is ErrorCode.INVALID_ARGUMENT
        assert "finished" in claim.message
    clock.advance(3600)
    assert workers.run("get_run", workers.b, run_id=RUN_ID) == {**done, "state": "finished"}
    assert workers.stored() == finished


def test_a_lapsed_holder_cannot_finish(workers: Workers, clock: ManualClock) -> None:
    workers.start(lease_duration_seconds=5)
    clock.advance(6)
    error = error_of(
        workers.call, "finish_run", workers.a, run_id=RUN_ID, generation=1, outcome="succeeded"
    )
    assert error.code is ErrorCode.STALE_GENERATION
    assert error.details == {"current_generation": 1}


def test_finishing_with_a_generation_that_is_not_current_is_stale(
    workers: Workers, clock: ManualClock
) -> None:
    workers.start(lease_duration_seconds=5)
    clock.advance(5)
    workers.run("claim_run", workers.a, run_id=RUN_ID)
    error = error_of(
        workers.call, "finish_run", workers.a, run_id=RUN_ID, generation=1, outcome="cancelled"
    )
    assert error.code is ErrorCode.STALE_GENERATION
    assert error.details == {"current_generation": 2}


def test_a_result_over_16_kib_is_a_limit_and_changes_nothing(workers: Workers) -> None:
    workers.start()
    before = workers.stored()
    # Each character is three bytes of UTF-8: within the string bound, over the size bound.
    oversized = {"log": "€" * 5462}
    error = error_of(
        workers.call,
        "finish_run",
        workers.a,
        run_id=RUN_ID,
        generation=1,
        outcome="succeeded",
        result=oversized,
    )
    assert error.code is ErrorCode.LIMIT_EXCEEDED
    assert workers.stored() == before
    fits = {"log": "€" * 5450}
    done = workers.run(
        "finish_run", workers.a, run_id=RUN_ID, generation=1, outcome="succeeded", result=fits
    )
    assert done["result"] == fits


# -- reading ------------------------------------------------------------------------------
def test_anyone_in_the_namespace_reads_a_run_as_it_goes(
    workers: Workers, clock: ManualClock
) -> None:
    workers.start(lease_duration_seconds=10)
    assert workers.run("get_run", workers.b, run_id=RUN_ID)["state"] == "running"
    assert workers.tenant.call("get_run", None, run_id=RUN_ID)["run"]["holder"] == workers.a_id
    clock.advance(10)
    assert workers.run("get_run", workers.b, run_id=RUN_ID)["state"] == "lapsed"


def test_namespaces_never_see_each_others_runs(
    workers: Workers, other_tenant: Tenant, clock: ManualClock
) -> None:
    workers.start(lease_duration_seconds=5)
    clock.advance(5)  # lapsed: claimable, but only from its own namespace
    mine = workers.stored()
    _, theirs = other_tenant.register()
    for tool, more in [
        ("create_run_heartbeat", {}),
        ("claim_run", {}),
        ("finish_run", {"generation": 1, "outcome": "cancelled"}),
        ("get_run", {}),
    ]:
        error = error_of(other_tenant.call, tool, theirs, run_id=RUN_ID, **more)
        assert error.code is ErrorCode.NOT_FOUND
    # The same id is free in another namespace.
    assert other_tenant.call("start_run", theirs, run_id=RUN_ID)["run"]["generation"] == 1
    assert workers.stored() == mine


# -- inputs -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("create_run_heartbeat", {}),
        ("create_run_heartbeat", {"run_id": "not-a-uuid"}),
        ("create_run_heartbeat", {"run_id": RUN_ID.replace("-", "")}),
        ("create_run_heartbeat", {"run_id": "{" + RUN_ID + "}"}),
        ("create_run_heartbeat", {"run_id": "urn:uuid:" + RUN_ID}),
        ("create_run_heartbeat", {"run_id": 5}),
        ("create_run_heartbeat", {"run_id": RUN_ID, "lease_duration_seconds": 4}),
        ("create_run_heartbeat", {"run_id": RUN_ID, "lease_duration_seconds": 301}),
        ("create_run_heartbeat", {"run_id": RUN_ID, "lease_duration_seconds": "60"}),
        ("create_run_heartbeat", {"run_id": RUN_ID, "lease_duration_seconds": 60.0}),
        ("create_run_heartbeat", {"run_id": RUN_ID, "lease_duration_seconds": True}),
        ("create_run_heartbeat", {"run_id": RUN_ID, "generation": 1}),
        ("create_run_heartbeat", {"run_id": RUN_ID, "idempotency_key": "k"}),
        ("start_run", {"run_id": RUN_ID, "lease_duration_seconds": 0}),
        ("start_run", {"run_id": RUN_ID, "lease_duration_seconds": 301}),
        ("start_run", {"run_id": RUN_ID, "holder": "agt_bbbbbbbbbbbbbbbb"}),
        ("claim_run", {"run_id": RUN_ID, "lease_duration_seconds": 4}),
        ("claim_run", {"run_id": RUN_ID, "generation": 2}),
        ("finish_run", {"run_id": RUN_ID, "outcome": "succeeded"}),
        ("finish_run", {"run_id": RUN_ID, "generation": 0, "outcome": "succeeded"}),
        ("finish_run", {"run_id": RUN_ID, "generation": 1, "outcome": "done"}),
        ("finish_run", {"run_id": RUN_ID, "generation": 1, "outcome": "failed", "result": []}),
        ("finish_run", {"run_id": RUN_ID, "generation": 1, "outcome": "failed", "result": "x"}),
        (
            "finish_run",
            {
                "run_id": RUN_ID,
                "generation": 1,
                "outcome": "failed",
                "result": {"a": {"b": {"c": {"d": {}}}}},
            },
        ),
        (
            "finish_run",
            {
                "run_id": RUN_ID,
                "generation": 1,
                "outcome": "failed",
                "result": {str(i): i for i in range(51)},
            },
        ),
        (
            "finish_run",
            {"run_id": RUN_ID, "generation": 1, "outcome": "failed", "result": {"x": float("nan")}},
        ),
        ("get_run", {"run_id": RUN_ID, "generation": 1}),
    ],
)
def test_bad_arguments_are_invalid_and_change_nothing(
    workers: Workers, tool: str, arguments: dict[str, Any]
) -> None:
    workers.start()
    before = workers.stored()
    error = error_of(workers.tenant.app.call, tool, arguments, workers.a, via="rest")
    assert error.code is ErrorCode.INVALID_ARGUMENT
    assert workers.stored() == before


# -- retries ------------------------------------------------------------------------------
def test_an_idempotency_key_replays_the_first_outcome(workers: Workers, clock: ManualClock) -> None:
    start = {"lease_duration_seconds": 30, "idempotency_key": "start-1"}
    first = workers.run("start_run", workers.a, **start)
    clock.advance(5)
    assert workers.run("start_run", workers.a, **start) == first  # the same, chosen id
    mismatch = error_of(
        workers.call, "start_run", workers.a, **{**start, "lease_duration_seconds": 31}
    )
    assert mismatch.code is ErrorCode.IDEMPOTENCY_MISMATCH
    run_id = first["run_id"]
    stored = workers.stored(run_id)
    assert stored is not None
    assert stored.version == 1

    clock.advance(30)
    claim = {"run_id": run_id, "idempotency_key": "claim-1"}
    claimed = workers.run("claim_run", workers.b, **claim)
    clock.advance(5)
    assert workers.run("claim_run", workers.b, **claim) == claimed
    assert claimed["generation"] == 2

    finish = {
        "run_id": run_id,
        "generation": 2,
        "outcome": "succeeded",
        "result": {"n": 1},
        "idempotency_key": "finish-1",
    }
    done = workers.run("finish_run", workers.b, **finish)
    # A retry of a finish whose answer was lost gets that answer, not stale_generation.
    assert workers.run("finish_run", workers.b, **finish) == done
    stored = workers.stored(run_id)
    assert stored is not None
    assert stored.version == 3


def test_a_refused_call_releases_its_key_for_a_later_attempt(
    workers: Workers, clock: ManualClock
) -> None:
    workers.start(lease_duration_seconds=30)
    claim = {"run_id": RUN_ID, "idempotency_key": "mine-next"}
    refused = error_of(workers.call, "claim_run", workers.b, **claim)
    assert refused.code is ErrorCode.VERSION_CONFLICT
    clock.advance(30)
    assert workers.run("claim_run", workers.b, **claim)["holder"] == workers.b_id


def test_renewing_again_just_renews_again(workers: Workers, clock: ManualClock) -> None:
    workers.start()
    first = workers.call("create_run_heartbeat", workers.a, run_id=RUN_ID)
    again = workers.call("create_run_heartbeat", workers.a, run_id=RUN_ID)
    assert first == again
    clock.advance(1)
    later = workers.call("create_run_heartbeat", workers.a, run_id=RUN_ID)
    assert later["expires_at"] > first["expires_at"]


# -- races --------------------------------------------------------------------------------
@pytest.fixture(params=["memory", "dynamo"])
def interleaved(request: pytest.FixtureRequest, clock: ManualClock) -> Workers:
    store = interleaving_store(request, "get_run")
    return Workers(Tenant(app_on(store, clock), clock, "acme"))


def interleave(workers: Workers, interloper: Callable[[], Any]) -> list[Any]:
    """Records what the interloper got: its result or its error."""
    outcomes: list[Any] = []

    def run() -> None:
        try:
            outcomes.append(interloper())
        except VigilError as error:
            outcomes.append(error)

    store = workers.tenant.app.store
    assert hasattr(store, "interloper")
    store.interloper = run
    return outcomes


def test_two_workers_claiming_a_lapsed_run_exactly_one_wins(
    interleaved: Workers, clock: ManualClock
) -> None:
    workers = interleaved
    _, c = workers.tenant.register(name="c")
    workers.start(c, lease_duration_seconds=5)
    clock.advance(5)
    # b reads and writes between a's read and a's write; a then reads again and loses.
    b_outcome = interleave(workers, lambda: workers.run("claim_run", workers.b, run_id=RUN_ID))
    a_error = error_of(workers.run, "claim_run", workers.a, run_id=RUN_ID)
    (b_run,) = b_outcome
    assert (b_run["holder"], b_run["generation"]) == (workers.b_id, 2)
    assert a_error.code is ErrorCode.VERSION_CONFLICT
    assert a_error.details["generation"] == 2
    stored = workers.stored()
    assert stored is not None
    assert (stored.holder, stored.generation) == (workers.b_id, 2)


def test_a_late_heartbeat_racing_a_claim_renews_nothing(
    interleaved: Workers, clock: ManualClock
) -> None:
    workers = interleaved
    workers.start(lease_duration_seconds=5)
    clock.advance(4)
    # A's heartbeat reads a live lease; before it writes, the lease lapses and B claims it.
    # (Time is moved inside the interloper: the heartbeat decided with the time it read.)

    def lapse_and_claim() -> dict[str, Any]:
        clock.advance(1)
        return workers.run("claim_run", workers.b, run_id=RUN_ID)

    b_outcome = interleave(workers, lapse_and_claim)
    error = error_of(workers.call, "create_run_heartbeat", workers.a, run_id=RUN_ID)
    assert b_outcome[0]["generation"] == 2
    assert error.code is ErrorCode.STALE_GENERATION
    assert error.details == {"current_generation": 2}
    stored = workers.stored()
    assert stored is not None
    assert (stored.holder, stored.generation) == (workers.b_id, 2)
