"""Switches that depend on another (a host's jobs, an orchestrator's workers): named by a beat,
refused when they would close a cycle (also when two beats race to close one) or go too deep;
while the switch they depend on is dead, their deaths are recorded and their actions run, but
they are told in its alert ("and 50 dependants") instead of apart, and their recoveries are told
as any are. Played on a moved clock, on the in-memory store and on DynamoDB (moto)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from tests.liveness_support import World
from vigil.clock import ManualClock
from vigil.errors import ErrorCode, VigilError
from vigil.store import Store
from vigil.switches.records import MAX_DEPENDENCY_DEPTH

HOOK = "https://receiver.example.com/hooks/vigil"


@pytest.fixture
def world(store: Store, clock: ManualClock) -> World:
    return World(clock, store)


@pytest.fixture
def agent(world: World) -> str:
    world.call("create_channel", name="ops", url=HOOK, rules=[{"events": ["switch.fired"]}])
    _, secret = world.tenant.register(name="host-agent")
    return secret


def beat(world: World, secret: str, scope: str, window: int = 10, **terms: Any) -> dict[str, Any]:
    return world.call("heartbeat", secret, scope=scope, expect_within_seconds=window, **terms)


def told(world: World) -> list[dict[str, Any]]:
    """Every event the webhook channel was sent, in order."""
    return [json.loads(body) for url, body in world.posted if url == HOOK]


def refusal(world: World, secret: str, scope: str, depends_on: str) -> str:
    with pytest.raises(VigilError) as caught:
        beat(world, secret, scope, depends_on=depends_on)
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT
    return json.dumps(caught.value.details)


# -- naming a dependency ---------------------------------------------------------------------------
def test_a_cycle_is_refused_at_any_length_and_nothing_changes(world: World, agent: str) -> None:
    beat(world, agent, "a", depends_on="b")
    beat(world, agent, "b", depends_on="c")
    assert "a -> b -> c -> a" not in refusal(world, agent, "c", depends_on="a")
    assert "c -> a -> b -> c" in refusal(world, agent, "c", depends_on="a")
    assert "b -> a -> b" in refusal(world, agent, "b", depends_on="a")
    assert "itself" in refusal(world, agent, "a", depends_on="a")
    switches = {s["scope"]: s["depends_on"] for s in world.call("list_switches")["switches"]}
    assert switches == {"a": "b", "b": "c"}  # c was never armed: each refusal changed nothing


def test_a_chain_deeper_than_the_bound_is_refused(world: World, agent: str) -> None:
    scopes = [f"level-{n}" for n in range(MAX_DEPENDENCY_DEPTH + 2)]
    for child, parent in itertools.pairwise(scopes[1:]):
        beat(world, agent, child, depends_on=parent)
    # level-0 -> level-1 -> ... -> level-5: five switches above it, one too many.
    assert "at most 4" in refusal(world, agent, scopes[0], depends_on=scopes[1])
    beat(world, agent, scopes[0], depends_on=scopes[2])  # four above: allowed


def test_two_beats_racing_to_close_a_cycle_leave_exactly_one_standing(
    world: World, agent: str
) -> None:
    """a -> b and b -> a, each checked against the other's switch as it was before either
    committed: the second commit finds its check broken, reads again, and is refused."""
    beat(world, agent, "a")
    beat(world, agent, "b")
    store = world.store
    real = store.get_switch
    raced = False

    def get_switch(namespace: str, scope: str) -> Any:
        nonlocal raced
        found = real(namespace, scope)
        if scope == "b" and not raced:
            raced = True  # a's beat has read b: b's beat closes the other half first
            beat(world, agent, "b", depends_on="a")
        return found

    store.get_switch = get_switch  # type: ignore[method-assign]
    try:
        with pytest.raises(VigilError) as caught:
            beat(world, agent, "a", depends_on="b")
    finally:
        store.get_switch = real  # type: ignore[method-assign]
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT
    assert "cycle" in json.dumps(caught.value.details)
    switches = {s["scope"]: s["depends_on"] for s in world.call("list_switches")["switches"]}
    assert switches == {"a": None, "b": "a"}


def test_a_beat_that_names_the_same_dependency_stays_on_the_fast_path(
    world: World, agent: str
) -> None:
    beat(world, agent, "host")
    beat(world, agent, "job", depends_on="host")
    assert beat(world, agent, "job", depends_on="host")["depends_on"] == "host"
    moved = beat(world, agent, "job", depends_on="other-host")
    assert moved["depends_on"] == "other-host"
    assert world.store.dependants("acme", "host", 10) == ([], 0)
    assert world.store.dependants("acme", "other-host", 10) == (["job"], 1)


# -- dying together --------------------------------------------------------------------------------
def test_a_host_and_its_fifty_jobs_die_one_alert_names_the_fifty_and_their_recoveries_are_told(
    world: World, agent: str
) -> None:
    jobs = [f"job-{n:02d}" for n in range(50)]
    beat(world, agent, "host", window=10)
    for n, job in enumerate(jobs):
        if n == 25:
            world.advance(4)  # half the jobs beat later: their deadlines come after the host's
        beat(world, agent, job, window=10, depends_on="host", on_expiry=["mark_failed"])
    # Everybody stops. The host fires at 10 s, the first jobs with it, the rest at 14 s.
    world.advance(30)
    events = told(world)
    assert [e["type"] for e in events] == ["switch.fired"]
    [alert] = events
    assert alert["scope"] == "host"
    assert alert["data"]["dependants_count"] == 50
    assert alert["data"]["dependants"] == jobs
    page = world.call("list_deaths")
    deaths = page["deaths"] + world.call("list_deaths", cursor=page["next_cursor"])["deaths"]
    assert len(deaths) == 51  # every death recorded, every job marked failed
    assert all(d["marked_failed"] for d in deaths if d["scope"] != "host")
    folded = world.store.get_death("acme", "job-07", 1)
    assert folded is not None
    assert folded.done["notify"] == {"folded_into": {"scope": "host", "generation": 1}}

    for scope in ["host", *jobs]:
        beat(world, agent, scope, window=600)
    world.advance(1)
    recovered = [e for e in told(world) if e["type"] == "switch.recovered"]
    assert sorted(e["scope"] for e in recovered) == sorted(["host", *jobs])


def test_a_job_whose_deadline_comes_first_waits_for_its_host_and_is_folded_into_its_alert(
    world: World, agent: str
) -> None:
    beat(world, agent, "host", window=60)
    beat(world, agent, "job", window=5, depends_on="host")
    world.advance(20)  # the job died at 5 s; the host's deadline is at 60 s: the job waits
    assert told(world) == []
    world.advance(50)  # the host fires at 60 s; the job is folded into its alert
    [alert] = told(world)
    assert (alert["scope"], alert["data"]["dependants"]) == ("host", ["job"])


def test_a_job_whose_host_lives_is_told_apart_once_the_host_has_beaten(
    world: World, agent: str
) -> None:
    beat(world, agent, "host", window=60)
    beat(world, agent, "job", window=5, depends_on="host")
    for _ in range(3):
        world.advance(20)
        beat(world, agent, "host", window=60)
    # The job died at 5 s and waited for the host's deadline as it was then (60 s); the host
    # beat meanwhile, so the job is told apart, five seconds after that deadline.
    assert told(world) == []
    world.advance(6)
    [alert] = told(world)
    assert (alert["scope"], alert["data"]["dependants_count"]) == ("job", 0)


def test_deaths_fold_into_the_highest_dead_switch_of_their_chain(world: World, agent: str) -> None:
    beat(world, agent, "host", window=10)
    beat(world, agent, "orchestrator", window=10, depends_on="host")
    beat(world, agent, "worker", window=10, depends_on="orchestrator")
    world.advance(30)
    [alert] = told(world)
    assert (alert["scope"], alert["data"]["dependants"]) == ("host", ["orchestrator"])
    worker = world.store.get_death("acme", "worker", 1)
    assert worker is not None
    assert worker.done["notify"]["folded_into"]["scope"] == "host"


def test_a_host_that_died_before_its_job_last_beat_does_not_swallow_the_jobs_death(
    world: World, agent: str
) -> None:
    beat(world, agent, "host", window=10)
    beat(world, agent, "job", window=600, depends_on="host")
    world.advance(15)  # the host dies and stays dead
    for _ in range(3):  # the job goes on without it, then stops
        world.advance(200)
        beat(world, agent, "job", window=600, depends_on="host")
    world.advance(601)
    assert [(e["type"], e["scope"]) for e in told(world)] == [
        ("switch.fired", "host"),
        ("switch.fired", "job"),
    ]


def test_a_job_does_not_wait_on_a_paused_host_over_and_over(world: World, agent: str) -> None:
    beat(world, agent, "host", window=60)
    beat(world, agent, "job", window=5, depends_on="host")
    world.call("pause_switches", scope_prefix="host", until_next_beat=True)
    world.advance(120)  # the host is past its deadline, held; the job died at 5 s
    [alert] = told(world)
    assert alert["scope"] == "job"
    job_alarms = [t for t in world.delivered if t.key == "job"]
    assert len(job_alarms) <= 3  # its own alarm, one wait for the host's deadline, no spinning


def test_a_disarmed_dependant_is_no_longer_named_and_counts_again_once_armed(
    world: World, agent: str
) -> None:
    beat(world, agent, "host", window=10)
    beat(world, agent, "job-a", window=600, depends_on="host")
    beat(world, agent, "job-b", window=600, depends_on="host")
    world.call("heartbeat", agent, scope="job-b", expect_within_seconds=600, disarm=True)
    assert world.store.dependants("acme", "host", 10) == (["job-a"], 1)
    beat(world, agent, "job-b", window=600, depends_on="host")  # armed anew, on the host again
    assert world.store.dependants("acme", "host", 10) == (["job-a", "job-b"], 2)
    world.call("heartbeat", agent, scope="job-b", expect_within_seconds=600, disarm=True)
    world.advance(11)
    [alert] = told(world)
    assert (alert["data"]["dependants_count"], alert["data"]["dependants"]) == (1, ["job-a"])
