"""Leases at the service layer: grants, fencing by generation, release, races."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import Tenant, app_on, error_of, interleaving_store
from vigil.clock import ManualClock, iso, parse_iso
from vigil.errors import ErrorCode, VigilError
from vigil.kit.uow import UnitOfWork
from vigil.leases.records import Lease
from vigil.leases.service import ReleaseLease, release
from vigil.store import Store
from vigil.stores.memory import MemoryStore


def release_by_switch(store: Store, clock: ManualClock, holder: str) -> Lease:
    """What a fired switch of scope "build" does to the lease of "repo" at generation 1."""
    uow = UnitOfWork(store)
    command = ReleaseLease("acme", "repo", 1, holder, "expiry:build")
    return release(command, clock.now(), store=store, uow=uow)


class Agents:
    """Two workers of one namespace, calling the lease tools."""

    def __init__(self, tenant: Tenant) -> None:
        self.tenant = tenant
        self.a_id, self.a = tenant.register(name="a")
        self.b_id, self.b = tenant.register(name="b")

    def call(self, tool: str, secret: str, **arguments: Any) -> dict[str, Any]:
        result: dict[str, Any] = self.tenant.call(tool, secret, **arguments)["lease"]
        return result

    def stored(self, resource: str = "repo") -> Lease | None:
        return self.tenant.app.store.get_lease(self.tenant.namespace, resource)


@pytest.fixture
def agents(tenant: Tenant) -> Agents:
    return Agents(tenant)


def test_a_free_resource_is_granted_at_generation_one(agents: Agents, clock: ManualClock) -> None:
    lease = agents.call("acquire_lease", agents.a, resource="repo", agent_id="worker-1")
    assert lease["holder"] == agents.a_id
    assert lease["holder_label"] == "worker-1"
    assert (lease["generation"], lease["state"], lease["scope"]) == (1, "held", None)
    assert parse_iso(lease["expires_at"]) == clock.now() + timedelta(seconds=60)
    assert lease["released_at"] is None
    assert lease["released_by"] is None


def test_every_grant_raises_the_generation(agents: Agents, clock: ManualClock) -> None:
    first = agents.call("acquire_lease", agents.a, resource="repo")
    agents.call("release_lease", agents.a, resource="repo", generation=first["generation"])
    second = agents.call("acquire_lease", agents.b, resource="repo", ttl_seconds=10)
    clock.advance(10)
    third = agents.call("acquire_lease", agents.a, resource="repo")
    # The holder taking its own lapsed lease again gets a new token too: it may have lost it.
    clock.advance(60)
    fourth = agents.call("acquire_lease", agents.a, resource="repo")
    assert [first["generation"], second["generation"], third["generation"]] == [1, 2, 3]
    assert fourth["generation"] == 4


def test_the_holder_acquiring_again_extends_and_keeps_the_generation(
    agents: Agents, clock: ManualClock
) -> None:
    first = agents.call("acquire_lease", agents.a, resource="repo", scope="build")
    clock.advance(30)
    again = agents.call(
        "acquire_lease", agents.a, resource="repo", ttl_seconds=300, agent_id="worker-2"
    )
    assert again["generation"] == first["generation"]
    assert again["acquired_at"] == first["acquired_at"]
    assert again["expires_at"] > first["expires_at"]
    # It takes this call's scope and label.
    assert (again["scope"], again["holder_label"]) == (None, "worker-2")
    stored = agents.stored()
    assert stored is not None
    assert stored.version == 2
    assert agents.tenant.app.store.scope_leases("acme", "build") == []


def test_a_held_resource_is_a_conflict_that_says_until_when(
    agents: Agents, clock: ManualClock
) -> None:
    held = agents.call("acquire_lease", agents.a, resource="repo", ttl_seconds=120)
    before = agents.stored()
    error = error_of(agents.call, "acquire_lease", agents.b, resource="repo")
    assert error.code is ErrorCode.VERSION_CONFLICT
    until = iso(clock.now() + timedelta(seconds=120))
    assert error.details == {"held_until": until, "generation": held["generation"]}
    assert until in error.message
    assert agents.b not in str(error.to_dict())
    assert agents.stored() == before


def test_after_expiry_another_takes_it_and_the_old_holder_is_fenced_off(
    agents: Agents, clock: ManualClock
) -> None:
    old = agents.call("acquire_lease", agents.a, resource="repo", ttl_seconds=30)
    clock.advance(30)  # expires_at <= now: lapsed
    new = agents.call("acquire_lease", agents.b, resource="repo")
    assert (new["holder"], new["generation"]) == (agents.b_id, old["generation"] + 1)

    for tool in ("renew_lease", "release_lease"):
        error = error_of(agents.call, tool, agents.a, resource="repo", generation=old["generation"])
        assert error.code is ErrorCode.STALE_GENERATION
        assert error.details == {"current_generation": new["generation"]}
        # Not even the current generation is theirs.
        error = error_of(agents.call, tool, agents.a, resource="repo", generation=new["generation"])
        assert error.code is ErrorCode.STALE_GENERATION
    stored = agents.stored()
    assert stored is not None
    assert (stored.holder, stored.state) == (agents.b_id, "held")


def test_renew_extends_a_live_lease_of_the_current_generation(
    agents: Agents, clock: ManualClock
) -> None:
    lease = agents.call("acquire_lease", agents.a, resource="repo", ttl_seconds=30)
    clock.advance(20)
    renewed = agents.call(
        "renew_lease", agents.a, resource="repo", generation=lease["generation"], ttl_seconds=600
    )
    assert renewed["generation"] == lease["generation"]
    assert parse_iso(renewed["expires_at"]) == clock.now() + timedelta(seconds=600)
    clock.advance(600)
    lapsed = error_of(
        agents.call, "renew_lease", agents.a, resource="repo", generation=lease["generation"]
    )
    assert lapsed.code is ErrorCode.STALE_GENERATION
    assert lapsed.details == {"current_generation": None}


def test_a_lapsed_lease_nobody_took_can_still_be_released_by_its_holder(
    agents: Agents, clock: ManualClock
) -> None:
    lease = agents.call("acquire_lease", agents.a, resource="repo", ttl_seconds=5)
    clock.advance(3600)
    released = agents.call("release_lease", agents.a, resource="repo", generation=1)
    assert (released["state"], released["released_by"]) == ("released", "holder")
    assert parse_iso(released["released_at"]) == clock.now()
    assert released["generation"] == lease["generation"]


def test_release_is_idempotent_and_only_for_the_holder_of_that_generation(
    agents: Agents,
) -> None:
    agents.call("acquire_lease", agents.a, resource="repo")
    for wrong in [(agents.b, 1), (agents.a, 2)]:
        secret, generation = wrong
        error = error_of(
            agents.call, "release_lease", secret, resource="repo", generation=generation
        )
        assert error.code is ErrorCode.STALE_GENERATION
        assert error.details == {"current_generation": 1}

    first = agents.call("release_lease", agents.a, resource="repo", generation=1)
    stored = agents.stored()
    again = agents.call("release_lease", agents.a, resource="repo", generation=1)
    assert again == first
    assert agents.stored() == stored  # nothing written the second time
    error = error_of(agents.call, "renew_lease", agents.a, resource="repo", generation=1)
    assert error.details == {"current_generation": None}
    # Freed at once: another may take it without waiting for the expiry.
    assert agents.call("acquire_lease", agents.b, resource="repo")["generation"] == 2


def test_an_unknown_resource_is_a_stale_generation_for_renew_and_release(agents: Agents) -> None:
    for tool in ("renew_lease", "release_lease"):
        error = error_of(agents.call, tool, agents.a, resource="nothing", generation=1)
        assert error.code is ErrorCode.STALE_GENERATION
        assert error.details == {"current_generation": None}


def test_the_expiry_release_path_is_the_same_and_the_holder_sees_it(
    agents: Agents, clock: ManualClock
) -> None:
    agents.call("acquire_lease", agents.a, resource="repo", scope="build")
    store = agents.tenant.app.store
    done = release_by_switch(store, clock, agents.a_id)
    assert (done.state, done.released_by) == ("released", "expiry:build")
    assert store.scope_leases("acme", "build") == []
    # The alarm delivered twice, then the holder releasing too: no write, same outcome.
    assert release_by_switch(store, clock, agents.a_id) == done
    by_holder = agents.call("release_lease", agents.a, resource="repo", generation=1)
    assert by_holder["released_by"] == "expiry:build"
    assert agents.stored() == done
    with pytest.raises(VigilError) as other:
        release_by_switch(store, clock, agents.b_id)
    assert other.value.code is ErrorCode.STALE_GENERATION


def test_namespaces_never_see_each_others_leases(
    agents: Agents, other_tenant: Tenant, clock: ManualClock
) -> None:
    mine = agents.call("acquire_lease", agents.a, resource="repo", scope="build")
    _, theirs = other_tenant.register()
    for tool in ("renew_lease", "release_lease"):
        error = error_of(other_tenant.call, tool, theirs, resource="repo", generation=1)
        assert error.code is ErrorCode.STALE_GENERATION
        assert error.details == {"current_generation": None}
    granted = other_tenant.call("acquire_lease", theirs, resource="repo")["lease"]
    assert granted["generation"] == 1
    store = agents.tenant.app.store
    assert [lease.holder for lease in store.scope_leases("acme", "build")] == [mine["holder"]]
    assert store.scope_leases("globex", "build") == []
    stored = agents.stored()
    assert stored is not None
    assert stored.holder == agents.a_id


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("acquire_lease", {}),
        ("acquire_lease", {"resource": ""}),
        ("acquire_lease", {"resource": "x" * 201}),
        ("acquire_lease", {"resource": "line\nbreak"}),
        ("acquire_lease", {"resource": 5}),
        ("acquire_lease", {"resource": "repo", "ttl_seconds": 0}),
        ("acquire_lease", {"resource": "repo", "ttl_seconds": 86401}),
        ("acquire_lease", {"resource": "repo", "ttl_seconds": "60"}),
        ("acquire_lease", {"resource": "repo", "ttl_seconds": 1.5}),
        ("acquire_lease", {"resource": "repo", "scope": ""}),
        ("acquire_lease", {"resource": "repo", "scope": "s" * 201}),
        ("acquire_lease", {"resource": "repo", "agent_id": "w" * 65}),
        ("acquire_lease", {"resource": "repo", "holder": "agt_bbbbbbbbbbbbbbbb"}),
        ("acquire_lease", {"resource": "repo", "idempotency_key": "tab\tkey"}),
        ("acquire_lease", {"resource": "re\u200dpo"}),
        ("acquire_lease", {"resource": "repo\ufeff"}),
        ("renew_lease", {"resource": "repo"}),
        ("renew_lease", {"resource": "repo", "generation": 0}),
        ("renew_lease", {"resource": "repo", "generation": True}),
        ("renew_lease", {"resource": "repo", "generation": 1, "scope": "build"}),
        ("release_lease", {"resource": "repo", "generation": -1}),
        ("release_lease", {"resource": "repo", "generation": 1, "ttl_seconds": 5}),
    ],
)
def test_bad_arguments_are_invalid_and_change_nothing(
    agents: Agents, tool: str, arguments: dict[str, Any]
) -> None:
    agents.call("acquire_lease", agents.a, resource="repo", ttl_seconds=30)
    before = agents.stored()
    error = error_of(agents.tenant.app.call, tool, arguments, agents.a, via="rest")
    assert error.code is ErrorCode.INVALID_ARGUMENT
    assert agents.stored() == before


def test_an_idempotency_key_replays_the_first_outcome(agents: Agents, clock: ManualClock) -> None:
    args = {"resource": "repo", "ttl_seconds": 30, "idempotency_key": "take-1"}
    first = agents.call("acquire_lease", agents.a, **args)
    clock.advance(5)
    assert agents.call("acquire_lease", agents.a, **args) == first
    stored = agents.stored()
    assert stored is not None
    assert stored.version == 1
    mismatch = error_of(agents.call, "acquire_lease", agents.a, **{**args, "ttl_seconds": 31})
    assert mismatch.code is ErrorCode.IDEMPOTENCY_MISMATCH

    renew = {"resource": "repo", "generation": 1, "idempotency_key": "renew-1"}
    renewed = agents.call("renew_lease", agents.a, **renew)
    clock.advance(5)
    assert agents.call("renew_lease", agents.a, **renew) == renewed

    done = {"resource": "repo", "generation": 1, "idempotency_key": "release-1"}
    released = agents.call("release_lease", agents.a, **done)
    assert agents.call("release_lease", agents.a, **done) == released


def test_a_release_with_nothing_left_to_do_still_completes_its_key(agents: Agents) -> None:
    agents.call("acquire_lease", agents.a, resource="repo")
    agents.call("release_lease", agents.a, resource="repo", generation=1)
    args = {"resource": "repo", "generation": 1, "idempotency_key": "late"}
    result = agents.call("release_lease", agents.a, **args)
    store = agents.tenant.app.store
    assert isinstance(store, MemoryStore)
    (record,) = [r for r in store.idempotency.values() if r.key == "late"]
    assert (record.status, record.result) == ("completed", {"lease": result})


def test_a_conflict_releases_the_key_for_a_later_attempt(
    agents: Agents, clock: ManualClock
) -> None:
    agents.call("acquire_lease", agents.a, resource="repo", ttl_seconds=30)
    args = {"resource": "repo", "idempotency_key": "mine-next"}
    assert error_of(agents.call, "acquire_lease", agents.b, **args).code is (
        ErrorCode.VERSION_CONFLICT
    )
    clock.advance(30)
    assert agents.call("acquire_lease", agents.b, **args)["holder"] == agents.b_id


def test_scoped_leases_are_listed_for_their_switch_and_unscoped_ones_counted(
    agents: Agents,
) -> None:
    agents.call("acquire_lease", agents.a, resource="r1", scope="build")
    agents.call("acquire_lease", agents.a, resource="r2")
    agents.call("acquire_lease", agents.a, resource="r3")
    agents.call("release_lease", agents.a, resource="r3", generation=1)
    store = agents.tenant.app.store
    assert [lease.resource for lease in store.scope_leases("acme", "build")] == ["r1"]
    assert store.unscoped_leases_held_by("acme", agents.a_id) == 1


# -- races --------------------------------------------------------------------------------
@pytest.fixture(params=["memory", "dynamo"])
def interleaved(request: pytest.FixtureRequest, clock: ManualClock) -> Agents:
    store = interleaving_store(request, "get_lease")
    return Agents(Tenant(app_on(store, clock), clock, "acme"))


def outcome_of(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """The call's result, or the typed error it raised."""
    try:
        return call(*args, **kwargs)
    except VigilError as error:
        return error


def interleave(agents: Agents, interloper: Callable[[], Any]) -> list[Any]:
    """Records what the interloper got: its result or its error."""
    outcomes: list[Any] = []

    def run() -> None:
        outcomes.append(outcome_of(interloper))

    store = agents.tenant.app.store
    assert hasattr(store, "interloper")
    store.interloper = run
    return outcomes


@pytest.mark.parametrize("lapsed_first", [False, True])
def test_two_agents_racing_for_one_lease_exactly_one_wins(
    interleaved: Agents, clock: ManualClock, lapsed_first: bool
) -> None:
    agents = interleaved
    if lapsed_first:
        _, c = agents.tenant.register(name="c")
        agents.call("acquire_lease", c, resource="repo", ttl_seconds=5)
        clock.advance(5)
    # b reads and writes between a's read and a's write.
    b_outcome = interleave(agents, lambda: agents.call("acquire_lease", agents.b, resource="repo"))
    a_error = error_of(agents.call, "acquire_lease", agents.a, resource="repo")
    (b_lease,) = b_outcome
    assert b_lease["holder"] == agents.b_id
    assert a_error.code is ErrorCode.VERSION_CONFLICT
    assert a_error.details["generation"] == b_lease["generation"] == (2 if lapsed_first else 1)
    stored = agents.stored()
    assert stored is not None
    assert (stored.holder, stored.generation) == (agents.b_id, b_lease["generation"])


def test_the_holder_and_the_switch_releasing_together_both_succeed_once(
    interleaved: Agents, clock: ManualClock
) -> None:
    agents = interleaved
    agents.call("acquire_lease", agents.a, resource="repo", scope="build")
    store = agents.tenant.app.store
    by_switch = interleave(agents, lambda: release_by_switch(store, clock, agents.a_id))
    by_holder = agents.call("release_lease", agents.a, resource="repo", generation=1)
    (switch_lease,) = by_switch
    assert isinstance(switch_lease, Lease)
    assert by_holder["released_by"] == switch_lease.released_by == "expiry:build"
    stored = agents.stored()
    assert stored is not None
    assert stored.version == 2  # one write: acquire, then one release
    assert store.scope_leases("acme", "build") == []


def test_a_renewal_racing_a_takeover_after_expiry_is_fenced_off(
    interleaved: Agents, clock: ManualClock
) -> None:
    agents = interleaved
    agents.call("acquire_lease", agents.a, resource="repo", ttl_seconds=5)
    clock.advance(5)
    # The old holder re-acquires while b takes the lapsed lease in between.
    b_outcome = interleave(agents, lambda: agents.call("acquire_lease", agents.b, resource="repo"))
    error = error_of(agents.call, "acquire_lease", agents.a, resource="repo")
    assert error.code is ErrorCode.VERSION_CONFLICT
    assert b_outcome[0]["generation"] == 2
    stale = error_of(agents.call, "renew_lease", agents.a, resource="repo", generation=1)
    assert stale.details == {"current_generation": 2}


# -- properties ---------------------------------------------------------------------------
Step = tuple[str, int, int]
steps = st.lists(
    st.one_of(
        st.tuples(st.just("acquire"), st.integers(0, 2), st.integers(1, 30)),
        st.tuples(st.sampled_from(["renew", "release"]), st.integers(0, 2), st.integers(-1, 1)),
        st.tuples(st.just("wait"), st.just(0), st.integers(1, 40)),
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps)
def test_fencing_holds_for_any_sequence_of_calls(script: list[Step]) -> None:
    """Whatever the callers do: a grant always carries a generation above every earlier one;
    a live lease has one holder; renew and release succeed only with the newest generation of
    its holder, while the lease is held."""
    clock = ManualClock()
    tenant = Tenant(app_on(MemoryStore(), clock), clock, "acme")
    callers = [tenant.register(name=f"w{i}") for i in range(3)]
    newest = 0  # highest generation granted so far
    holder: str | None = None
    held_until = clock.now()
    released = True
    for action, who, amount in script:
        principal, secret = callers[who]
        if action == "wait":
            clock.advance(amount)
            continue
        now = clock.now()
        live = not released and held_until > now
        if action == "acquire":
            arguments: dict[str, Any] = {"resource": "r", "ttl_seconds": amount}
        else:
            arguments = {"resource": "r", "generation": max(1, newest + amount)}
        outcome = outcome_of(tenant.call, f"{action}_lease", secret, **arguments)
        if isinstance(outcome, VigilError):
            if action == "acquire":
                assert outcome.code is ErrorCode.VERSION_CONFLICT
                assert live
                assert holder != principal
            else:
                assert outcome.code is ErrorCode.STALE_GENERATION
                current = not released and arguments["generation"] == newest
                assert not (holder == principal and current and (live or action == "release"))
            continue
        lease = outcome["lease"]
        if action == "acquire":
            assert not live or holder == principal
            extended = live and holder == principal
            assert lease["generation"] == (newest if extended else newest + 1)
            newest, holder, released = lease["generation"], principal, False
        else:
            assert (lease["generation"], lease["holder"]) == (newest, principal)
            assert action == "release" or live
            released = released or action == "release"
        held_until = clock.now() if released else parse_iso(lease["expires_at"])
    store = tenant.app.store
    stored = store.get_lease("acme", "r")
    assert (stored.generation if stored else 0) == newest
