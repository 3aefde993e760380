"""The Beater: scopes beaten at a third of their window in batches of up to 100, retries of
what may pass until each deadline, scopes refused for good dropped, and disarming on a normal
exit only. Its calls go to the in-memory service here, through the same tool a real one calls
over HTTP (tests/e2e/test_beater.py runs it against the local runtime); the clock is moved."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.liveness_support import World
from vigil.beater import BATCH, Beater
from vigil.errors import VigilError, throttled, unavailable
from vigil.people.client import Refused, Unreachable


class Service:
    """The Beater's calls, made to the world's app as the REST mirror makes them; each may be
    made to fail first by the test."""

    def __init__(self, world: World, secret: str) -> None:
        self.world = world
        self.secret = secret
        self.calls: list[list[dict[str, Any]]] = []
        self.failures: list[BaseException] = []  # raised, one per call, before calling

    def __call__(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        assert tool == "heartbeat_batch"
        self.calls.append(arguments["beats"])
        if self.failures:
            raise self.failures.pop(0)
        try:
            return self.world.app.call(tool, arguments, self.secret, via="rest")
        except VigilError as error:
            raise Refused(error.to_dict()) from None


class Clock:
    def __init__(self, world: World) -> None:
        self.world = world
        self.start = world.clock.now()

    def __call__(self) -> float:
        return (self.world.clock.now() - self.start).total_seconds()

    def sleep(self, seconds: float) -> None:
        self.world.clock.advance(seconds)


def beater(world: World, service: Service, *scopes: str, **options: Any) -> Beater:
    clock = Clock(world)
    return Beater(
        "http://vigil.invalid",
        service.secret,
        scopes=scopes,
        call=service,
        clock=clock,
        sleep=clock.sleep,
        jitter=lambda: 1.0,
        **options,
    )


def state(world: World, scope: str) -> str | None:
    switch = world.store.get_switch("acme", scope)
    return None if switch is None else switch.state


def test_each_scope_is_beaten_at_a_third_of_its_window_in_one_call(
    world: World, agent: tuple[str, str]
) -> None:
    service = Service(world, agent[1])
    b = beater(world, service, "a", "b", window=30)
    b.add("slow", window=300, agent_id="worker-9")
    assert b.beat_due() == pytest.approx(10)  # all armed; the next round in a third of 30 s
    assert len(service.calls) == 1
    assert len(service.calls[0]) == 3
    assert {state(world, s) for s in ("a", "b", "slow")} == {"armed"}
    world.clock.advance(4)
    b.beat_due()
    assert len(service.calls) == 1  # nothing due, nor within a sixth of its window
    world.clock.advance(6)
    assert b.beat_due() == pytest.approx(10)
    # a and b are due; slow (due at 100 s) is not, even gathered with them.
    assert [beat["scope"] for beat in service.calls[1]] == ["a", "b"]
    slow = world.store.get_switch("acme", "slow")
    assert slow is not None
    assert (slow.agent_id, slow.beats) == ("worker-9", 1)


def test_many_scopes_go_in_batches_of_the_tools_limit(world: World, agent: tuple[str, str]) -> None:
    service = Service(world, agent[1])
    b = beater(world, service, *(f"job-{n}" for n in range(250)))
    b.beat_due()
    assert [len(beats) for beats in service.calls] == [BATCH, BATCH, 50]
    assert world.store.quota_usage("acme", "armed_switches") == 250


@pytest.mark.parametrize(
    "failure",
    [
        Refused(throttled("too many", 1).to_dict()),
        Refused(unavailable().to_dict()),
        Unreachable("no answer"),
    ],
    ids=["throttled", "unavailable", "unreachable"],
)
def test_a_refused_round_is_retried_with_jitter_within_the_deadline(
    world: World, agent: tuple[str, str], failure: Exception
) -> None:
    service = Service(world, agent[1])
    b = beater(world, service, "a", window=30)
    b.beat_due()
    world.clock.advance(10)
    service.failures = [failure] * 3
    waits = []
    for _ in range(3):
        waits.append(b.beat_due())
        world.clock.advance(waits[-1])
    # Growing waits (full jitter, here its top), each within the deadline.
    assert waits == [pytest.approx(0.5), pytest.approx(1.0), pytest.approx(2.0)]
    b.beat_due()
    assert len(service.calls) == 5
    switch = world.store.get_switch("acme", "a")
    assert switch is not None
    assert (switch.state, switch.beats) == ("armed", 2)
    assert b.beat_due() == pytest.approx(10)  # back to a third of the window


def test_retries_never_wait_past_the_deadline(world: World, agent: tuple[str, str]) -> None:
    service = Service(world, agent[1])
    b = beater(world, service, "a", window=6)
    b.beat_due()
    world.clock.advance(2)
    service.failures = [Refused(unavailable().to_dict())] * 10
    total = 2.0
    while total < 6:
        wait = b.beat_due()
        assert total + wait <= 6 + 1e-9
        world.clock.advance(max(wait, 0.01))
        total += max(wait, 0.01)


def test_a_beat_refused_for_good_stops_that_scope_only(
    world: World, agent: tuple[str, str], watcher: tuple[str, str]
) -> None:
    world.call("heartbeat", watcher[1], scope="theirs", expect_within_seconds=300)
    service = Service(world, agent[1])
    b = beater(world, service, "mine", "theirs", window=30)
    b.beat_due()
    assert b.beating == ["mine"]
    assert b.failures["theirs"].code == "forbidden"
    world.clock.advance(10)
    b.beat_due()
    assert [beat["scope"] for beat in service.calls[-1]] == ["mine"]


def test_a_normal_exit_disarms_every_switch(world: World, agent: tuple[str, str]) -> None:
    service = Service(world, agent[1])
    with beater(world, service, "a", "b") as b:
        assert b.beating == ["a", "b"]
        assert state(world, "a") == "armed"
    assert (state(world, "a"), state(world, "b")) == ("disarmed", "disarmed")
    assert world.store.quota_usage("acme", "armed_switches") == 0


def test_an_exit_by_exception_leaves_the_switches_to_fire(
    world: World, agent: tuple[str, str]
) -> None:
    service = Service(world, agent[1])
    with pytest.raises(RuntimeError), beater(world, service, "a"):
        raise RuntimeError("the work failed")
    assert state(world, "a") == "armed"
    world.advance(61)
    assert world.store.latest_death("acme", "a") is not None
    with pytest.raises(RuntimeError), beater(world, service, "b", disarm_on_error=True):
        raise RuntimeError("the work failed")
    assert state(world, "b") == "disarmed"


def test_as_a_decorator_it_beats_while_the_function_runs(
    world: World, agent: tuple[str, str]
) -> None:
    service = Service(world, agent[1])
    seen = []

    @beater(world, service, "decorated")
    def work() -> str:
        seen.append(state(world, "decorated"))
        return "done"

    assert work() == "done"
    assert seen == ["armed"]
    assert state(world, "decorated") == "disarmed"


def test_disarming_retries_what_may_pass(world: World, agent: tuple[str, str]) -> None:
    service = Service(world, agent[1])
    b = beater(world, service, "a")
    b.beat_due()
    service.failures = [Refused(throttled("busy", 1).to_dict())]
    b.stop()
    assert state(world, "a") == "disarmed"
    removed = beater(world, service, "c")
    removed.beat_due()
    removed.remove("c")
    assert state(world, "c") == "disarmed"
    assert removed.beating == []


def test_a_wrong_secret_or_no_answer_fails_at_start(world: World, agent: tuple[str, str]) -> None:
    with pytest.raises(Refused) as refused, beater(world, Service(world, "not-a-secret"), "a"):
        pass
    assert refused.value.code == "unauthenticated"
    service = Service(world, agent[1])
    service.failures = [Unreachable("no answer")]
    with pytest.raises(Unreachable), beater(world, service, "a"):
        pass
    assert state(world, "a") is None
    # Once running, the same refusal drops the scopes it was about and the beater goes on.
    b = beater(world, Service(world, "not-a-secret"), "a")
    b.beat_due()
    assert (b.beating, b.failures["a"].code) == ([], "unauthenticated")


def test_a_scope_added_while_running_is_armed_when_add_returns(
    world: World, agent: tuple[str, str], watcher: tuple[str, str]
) -> None:
    world.call("heartbeat", watcher[1], scope="theirs", expect_within_seconds=300)
    service = Service(world, agent[1])
    with beater(world, service, "first") as b:
        b.add("second", window=90, agent_id="worker-2")
        assert state(world, "second") == "armed"
        b.add("theirs")
        assert b.failures["theirs"].code == "forbidden"
        assert b.beating == ["first", "second"]


def test_a_scope_removed_while_its_beat_is_in_flight_ends_disarmed(
    world: World, agent: tuple[str, str]
) -> None:
    """One call at a time changes a switch: the removal waits for the round's beat, then
    disarms; the round's beat never lands after the disarm."""
    service = Service(world, agent[1])
    b = beater(world, service, "a", window=30)
    b.beat_due()
    world.clock.advance(10)
    blocked: list[bool] = []
    answer = service.__call__

    def in_flight(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if not blocked:
            remover = threading.Thread(target=b.remove, args=("a",))
            remover.start()
            remover.join(timeout=0.2)
            blocked.append(remover.is_alive())  # waiting for this call to end
            removers.append(remover)
            return answer(tool, arguments)
        return answer(tool, arguments)

    removers: list[threading.Thread] = []
    b._call = in_flight
    b.beat_due()
    removers[0].join(timeout=5)
    assert blocked == [True]
    assert state(world, "a") == "disarmed"
    assert b.beating == []


def test_a_start_that_fails_midway_disarms_what_it_armed(
    world: World, agent: tuple[str, str]
) -> None:
    service = Service(world, agent[1])
    scopes = [f"job-{n}" for n in range(150)]
    answer = service.__call__
    calls = []

    def second_fails(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        calls.append(len(arguments["beats"]))
        if len(calls) == 2:
            raise Unreachable("no answer")
        return answer(tool, arguments)

    b = beater(world, service, *scopes)
    b._call = second_fails
    with pytest.raises(Unreachable), b:
        pass
    assert calls[:2] == [100, 50]
    assert {state(world, s) for s in scopes[:100]} == {"disarmed"}
    assert {state(world, s) for s in scopes[100:]} == {None}


def test_disarming_waits_between_retries_and_gives_up_in_time(
    world: World, agent: tuple[str, str]
) -> None:
    service = Service(world, agent[1])
    b = beater(world, service, "a")
    b.beat_due()
    answer = service.__call__
    calls = []

    def always_throttled(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        calls.append(arguments)
        error = throttled("busy", 1).to_dict()
        return {"results": [{"scope": "a", "result": None, "error": error}], "failed": 1}

    b._call = always_throttled
    b.stop()
    # Waits of 1, 2, 2, 2... seconds (the jitter's top) until DISARM_SECONDS have passed.
    assert 3 <= len(calls) <= 8
    assert state(world, "a") == "armed"
    b._call = answer
    b.remove("a")
    assert state(world, "a") == "disarmed"


def test_an_answer_that_is_not_vigils_is_retried_like_no_answer(
    world: World, agent: tuple[str, str]
) -> None:
    service = Service(world, agent[1])
    b = beater(world, service, "a", window=30)
    b.beat_due()
    world.clock.advance(10)
    b._call = lambda tool, arguments: {"hello": "proxy"}
    assert b.beat_due() == pytest.approx(0.5)  # a retry, with its jittered wait
    assert b.beating == ["a"]
    b._call = service
    world.clock.advance(0.5)
    b.beat_due()
    switch = world.store.get_switch("acme", "a")
    assert switch is not None
    assert switch.beats == 2
