"""heartbeat_batch: up to 100 beats in one call, each exactly a heartbeat of the caller's,
each answered apart (a refused beat never fails the others), and the rule for an orchestrator
acting for its agents: it beats only its own switches, as heartbeat would let it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.liveness_support import World
from tests.support import Tenant, error_of
from vigil.clock import ManualClock
from vigil.errors import ErrorCode
from vigil.quotas.records import Quotas
from vigil.store import Store
from vigil.switches.tools import MAX_BATCH


def batch(world: World, secret: str, beats: list[Any], **more: Any) -> dict[str, Any]:
    return world.call("heartbeat_batch", secret, beats=beats, **more)


def beats_of(*scopes: str, window: int = 30, **more: Any) -> list[dict[str, Any]]:
    return [{"scope": scope, "expect_within_seconds": window, **more} for scope in scopes]


def codes(result: dict[str, Any]) -> list[str | None]:
    return [None if r["error"] is None else r["error"]["code"] for r in result["results"]]


@pytest.fixture
def world(store: Store, clock: ManualClock) -> World:
    """A world on each store: the batch's beats run side by side, on moto's DynamoDB too."""
    return World(clock, store)


def test_a_batch_arms_each_scope_once_and_steady_batches_arm_nothing(
    world: World, agent: tuple[str, str]
) -> None:
    scopes = [f"worker-{n}" for n in range(25)]
    first = batch(world, agent[1], beats_of(*scopes, agent_id="pool-1"))
    assert first["failed"] == 0
    assert [r["scope"] for r in first["results"]] == scopes  # in the beats' order
    assert {(r["result"]["state"], r["result"]["generation"]) for r in first["results"]} == {
        ("armed", 1)
    }
    assert len(world.alarms.armed) == 25
    for _ in range(3):
        world.advance(10)
        steady = batch(world, agent[1], beats_of(*scopes))
    assert [r["result"]["beats"] for r in steady["results"]] == [4] * 25
    assert len(world.alarms.armed) == 25  # steady beats never touch an alarm
    # Each beat is exactly a heartbeat: the same switch as a single beat would leave.
    single = world.call("heartbeat", agent[1], scope="worker-0", expect_within_seconds=30)
    assert single["beats"] == 5
    assert world.store.quota_usage("acme", "armed_switches") == 25


def test_one_bad_beat_is_refused_alone_with_its_own_typed_error(
    world: World,
    agent: tuple[str, str],
    watcher: tuple[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    world.call("heartbeat", watcher[1], scope="theirs", expect_within_seconds=30)
    beats: list[Any] = [
        *beats_of("ok-1"),
        {"scope": "bad-window", "expect_within_seconds": 1},
        "not an object",
        {"scope": "no-address", "expect_within_seconds": 30, "on_expiry": ["queue_alert"]},
        *beats_of("ok-1"),  # the same scope twice in one batch
        *beats_of("theirs"),  # armed by another principal
        *beats_of(
            "unknown-box",
            on_expiry=["queue_alert"],
            notify_address="agent:agt_aaaaaaaaaaaaaaaa",
        ),
        {"scope": "extra", "expect_within_seconds": 30, "agent_key": agent[1]},
        *beats_of("ok-2"),
    ]
    result = batch(world, agent[1], beats)
    assert codes(result) == [
        None,
        "invalid_argument",
        "invalid_argument",
        "invalid_argument",
        "invalid_argument",
        "forbidden",
        "not_found",
        "invalid_argument",
        None,
    ]
    assert result["failed"] == 7
    # The operator's logs say which beats were refused, by code, in one line for the call.
    (line,) = [r for r in caplog.records if r.getMessage() == "beats refused"]
    assert line.fields == {  # type: ignore[attr-defined]
        "beats": 9,
        "refused": {"invalid_argument": 5, "forbidden": 1, "not_found": 1},
    }
    refused = result["results"]
    # A malformed beat's error names it and where its problem is, as a heartbeat's would.
    assert refused[1]["error"]["details"]["index"] == 1
    assert refused[1]["error"]["details"]["problems"][0]["field"] == "expect_within_seconds"
    assert refused[1]["error"]["retryable"] is False
    assert refused[2]["error"]["details"] == {"index": 2}
    assert "repeats the scope" in refused[4]["error"]["message"]
    assert refused[7]["error"]["details"]["problems"][0]["field"] == "agent_key"
    assert refused[5]["scope"] == "theirs"
    # What was refused changed nothing; what held is armed.
    for scope in ("bad-window", "no-address", "unknown-box", "extra"):
        assert world.store.get_switch("acme", scope) is None
    theirs = world.store.get_switch("acme", "theirs")
    assert theirs is not None
    assert theirs.holder == watcher[0]
    assert {s: world.store.get_switch("acme", s) is not None for s in ("ok-1", "ok-2")} == {
        "ok-1": True,
        "ok-2": True,
    }


@pytest.mark.parametrize(
    ("beats", "problem"),
    [
        ([], "at least 1"),
        (beats_of(*(f"s-{n}" for n in range(MAX_BATCH + 1))), "at most 100"),
        ({"scope": "s"}, "valid list"),
    ],
)
def test_a_batch_out_of_bounds_is_refused_whole_and_arms_nothing(
    world: World, agent: tuple[str, str], beats: Any, problem: str
) -> None:
    error = error_of(batch, world, agent[1], beats)
    assert error.code is ErrorCode.INVALID_ARGUMENT
    assert error.details["problems"][0]["field"] == "beats"
    assert problem in error.details["problems"][0]["problem"]
    assert world.alarms.armed == []
    assert world.store.get_switch("acme", "s-0") is None


def test_a_full_batch_of_100_is_taken(world: World, agent: tuple[str, str]) -> None:
    result = batch(world, agent[1], beats_of(*(f"s-{n}" for n in range(MAX_BATCH))))
    assert (len(result["results"]), result["failed"]) == (100, 0)


def test_a_late_beat_in_a_batch_learns_of_its_death_as_heartbeat_does(
    world: World, agent: tuple[str, str]
) -> None:
    batch(world, agent[1], beats_of("a", "b", window=5))
    world.advance(3)
    batch(world, agent[1], beats_of("b", window=5))
    world.advance(4)  # a's deadline passed and its alarm fired; b was beaten in time
    result = batch(world, agent[1], beats_of("a", "b", window=5))
    died, lived = result["results"]
    assert died["result"]["death"]["generation"] == 1
    assert (died["result"]["state"], died["result"]["generation"]) == ("armed", 2)
    assert (lived["result"]["death"], lived["result"]["generation"]) == (None, 1)


def test_the_armed_switches_quota_refuses_only_the_beats_past_it(
    world: World, agent: tuple[str, str]
) -> None:
    small = Quotas(armed_switches=3)
    world.app.quotas = world.switch_engine.quotas = small
    result = batch(world, agent[1], beats_of("a", "b", "c", "d", "e"))
    assert sorted(codes(result), key=str) == [None, None, None] + ["limit_exceeded"] * 2
    assert world.store.quota_usage("acme", "armed_switches") == 3
    # Steady beats of the armed three still hold: they count nothing.
    held = [r["scope"] for r in result["results"] if r["error"] is None]
    assert codes(batch(world, agent[1], beats_of(*held))) == [None] * 3


# -- acting for others: the tenancy rule ---------------------------------------------------
def test_an_orchestrator_beats_its_own_switches_labelled_per_agent(
    world: World, agent: tuple[str, str]
) -> None:
    """The rule: a batch beats as its caller. An orchestrator arms its agents' scopes itself,
    each labelled with the agent's name; the switches are the orchestrator's."""
    beats = [
        {"scope": f"job-{n}", "expect_within_seconds": 30, "agent_id": f"worker-{n}"}
        for n in range(3)
    ]
    result = batch(world, agent[1], beats)
    assert [r["result"]["agent_id"] for r in result["results"]] == [
        "worker-0",
        "worker-1",
        "worker-2",
    ]
    for n in range(3):
        switch = world.store.get_switch("acme", f"job-{n}")
        assert switch is not None
        assert switch.holder == agent[0]


def test_a_switch_another_agent_armed_is_not_the_orchestrators_to_beat_or_disarm(
    world: World, agent: tuple[str, str], watcher: tuple[str, str]
) -> None:
    world.call("heartbeat", watcher[1], scope="theirs", expect_within_seconds=30)
    before = world.store.get_switch("acme", "theirs")
    for extra in ({}, {"disarm": True}):
        result = batch(world, agent[1], beats_of("theirs", window=3000, **extra))
        assert codes(result) == ["forbidden"]
    # Not beaten: its deadline and window are the holder's.
    assert world.store.get_switch("acme", "theirs") == before


def test_an_operator_may_disarm_anothers_switch_in_a_batch_but_not_beat_it(
    world: World, agent: tuple[str, str]
) -> None:
    batch(world, agent[1], beats_of("a", "b"))
    operator = world.tenant.operator_secret
    beaten = batch(world, operator, beats_of("a"))
    assert codes(beaten) == ["forbidden"]
    disarmed = batch(world, operator, beats_of("a", "b", disarm=True))
    assert [r["result"]["state"] for r in disarmed["results"]] == ["disarmed", "disarmed"]
    assert world.store.quota_usage("acme", "armed_switches") == 0
    # An operator's power over another's switch is audited, one event per disarm.
    events = world.call("list_audit_events", operator)["events"]
    assert sorted(e["target"] for e in events if e["action"] == "disarm") == ["a", "b"]


def test_the_same_scope_in_another_namespace_is_another_switch(
    world: World, agent: tuple[str, str]
) -> None:
    other = Tenant(world.app, world.clock, "globex")
    outsider = other.register(name="outsider")
    batch(world, agent[1], beats_of("shared"))
    result = batch(world, outsider[1], beats_of("shared"))
    assert codes(result) == [None]
    assert result["results"][0]["result"]["generation"] == 1  # its own, not ours
    mine = world.store.get_switch("acme", "shared")
    theirs = world.store.get_switch("globex", "shared")
    assert mine is not None
    assert theirs is not None
    assert (mine.holder, theirs.holder) == (agent[0], outsider[0])


def test_a_batch_authenticates_once_for_all_its_beats(world: World, agent: tuple[str, str]) -> None:
    agent_id, secret = agent
    result = world.app.call(
        "heartbeat_batch", {"beats": beats_of("k"), "agent_key": secret}, None, via="rest"
    )
    assert codes(result) == [None]
    world.call("revoke_principal", principal_id=agent_id, version=1)
    error = error_of(batch, world, secret, beats_of("k", "l"))
    assert error.code is ErrorCode.UNAUTHENTICATED
    assert world.store.get_switch("acme", "l") is None
    for wrong in ("nope", secret + "x"):
        assert error_of(batch, world, wrong, beats_of("m")).code is ErrorCode.UNAUTHENTICATED


def test_an_unexpected_failure_of_one_beat_is_that_beats_retryable_error(
    world: World, agent: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    batch(world, agent[1], beats_of("a", "b", "c"))
    beat_switch = type(world.store).beat_switch

    def failing(store: Any, namespace: str, scope: str, *args: Any) -> Any:
        if scope == "b":
            raise RuntimeError("the disk caught fire")
        return beat_switch(store, namespace, scope, *args)

    monkeypatch.setattr(type(world.store), "beat_switch", failing)
    result = batch(world, agent[1], beats_of("a", "b", "c"))
    assert codes(result) == [None, "unavailable", None]
    assert result["results"][1]["error"]["retryable"] is True
    assert "disk" not in str(result)
