"""The net under the timers: a switch whose alarm was lost is found by the sweep and expired
once, through the engine, on both stores; a switch beaten in time is never touched."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest

from tests.liveness_support import World
from vigil.clock import ManualClock
from vigil.entrypoints import alarm
from vigil.stores.memory import MemoryStore
from vigil.switches import sweep as sweeping
from vigil.switches.store import SWEEP_SHARDS, ArmedAlarm
from vigil.switches.sweep import SWEEP_GRACE, SWEEP_KIND, SweepResult


@pytest.fixture(params=["memory", "dynamo"])
def world(request: pytest.FixtureRequest, clock: ManualClock) -> World:
    store = MemoryStore() if request.param == "memory" else request.getfixturevalue("dynamo_store")
    return World(clock, store)


def beat(world: World, secret: str, window: int, **more: Any) -> dict[str, Any]:
    return world.call("heartbeat", secret, scope="job-1", expect_within_seconds=window, **more)


def state(world: World) -> str | None:
    switch = world.store.get_switch("acme", "job-1")
    return switch.state if switch is not None else None


def sweep(world: World) -> SweepResult:
    """One run: its timers armed, then each sweep timer delivered (continuations too) to the
    alarm function's handlers, as the timer queue would; what they found, summed. Other
    timers stay armed."""
    sweeping.start(world.switch_engine)
    handler = alarm.handlers(world.switch_engine)[SWEEP_KIND]
    results, timers = [], 0
    while due := [t for t in world.due_alarms() if t.kind == SWEEP_KIND or rearm(world, t)]:
        for timer in due:
            timers += 1
            results.append(handler(timer))
    world.sweep_timers = timers  # type: ignore[attr-defined]
    return SweepResult(
        sum(r.checked for r in results),
        sum(r.swept for r in results),
        sum(r.failed for r in results),
        sum(r.finished for r in results) == SWEEP_SHARDS,
    )


def rearm(world: World, timer: Any) -> bool:
    world.alarms.arm(timer, world.clock.now())
    return False


def armed(world: World) -> list[ArmedAlarm]:
    found: list[ArmedAlarm] = []
    for shard in range(SWEEP_SHARDS):
        found += world.store.armed_alarms(shard, None, 100).alarms
    return found


def test_a_switch_whose_timer_was_lost_fires_once_when_swept(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    _, secret = world.tenant.register(name="worker")
    beat(world, secret, window=30)
    (lost,) = world.alarms.take_due(world.clock.now() + timedelta(days=1))  # never delivered

    world.clock.advance(30 + SWEEP_GRACE.total_seconds() - 1)
    early = sweep(world)
    assert (early.checked, early.swept) == (1, 0)  # within the grace: the timer's to deliver
    assert state(world) == "armed"

    world.clock.advance(2)
    with caplog.at_level(logging.WARNING, logger="vigil.switches.sweep"):
        result = sweep(world)
    assert result._asdict() == {"checked": 1, "swept": 1, "failed": 0, "finished": True}
    assert "switch swept: its alarm did not come" in caplog.messages
    switch = world.store.get_switch("acme", "job-1")
    assert switch is not None
    assert switch.state == "fired"
    death = world.store.get_death("acme", "job-1", 1)
    assert death is not None
    assert not death.pending()
    assert death.lateness_seconds == pytest.approx(SWEEP_GRACE.total_seconds() + 1)
    assert armed(world) == []  # a fired switch leaves the index

    # The lost timer turns up after all: the death is recorded once, its actions run once.
    assert world.deliver(lost)
    assert world.store.recent_deaths("acme", None, 10) == [death]
    assert world.store.get_death("acme", "job-1", 1) == death
    again = sweep(world)
    assert (again.checked, again.swept) == (0, 0)


def test_a_switch_beaten_in_time_is_never_swept(world: World) -> None:
    _, secret = world.tenant.register(name="worker")
    beat(world, secret, window=30)
    for _ in range(30):  # five minutes of beats every 10 s, its alarms delivered
        world.advance(10)
        beat(world, secret, window=30)
        result = sweep(world)
        assert (result.checked, result.swept) == (1, 0)
    switch = world.store.get_switch("acme", "job-1")
    assert switch is not None
    assert switch.state == "armed"
    assert world.store.latest_death("acme", "job-1") is None


def test_a_lost_alarm_of_a_moved_deadline_is_armed_again_not_fired(world: World) -> None:
    _, secret = world.tenant.register(name="worker")
    beat(world, secret, window=300)
    world.alarms.take_due(world.clock.now() + timedelta(days=1))  # the first alarm is lost
    for _ in range(3):
        world.clock.advance(100)
        beat(world, secret, window=300)  # the deadline is now 600 s from the first beat

    world.clock.advance(SWEEP_GRACE.total_seconds() + 1)  # the lost alarm was due at 300 s
    result = sweep(world)
    assert result.swept == 1
    switch = world.store.get_switch("acme", "job-1")
    assert switch is not None
    assert switch.state == "armed"
    assert switch.alarm_due == switch.deadline
    assert [t.due_at for t in world.alarms.armed] == [switch.deadline]
    assert sweep(world).swept == 0


def test_a_disarmed_switch_leaves_the_index_and_a_new_generation_comes_back(
    world: World,
) -> None:
    _, secret = world.tenant.register(name="worker")
    beat(world, secret, window=30)
    assert [(a.scope, a.generation) for a in armed(world)] == [("job-1", 1)]
    beat(world, secret, window=30, disarm=True)
    assert armed(world) == []
    world.clock.advance(3600)
    assert sweep(world).checked == 0
    beat(world, secret, window=30)
    assert [(a.scope, a.generation) for a in armed(world)] == [("job-1", 2)]


def test_a_shard_longer_than_a_timer_reads_goes_on_in_the_next_timer(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sweeping, "SWEEP_PAGE", 1)
    monkeypatch.setattr(sweeping, "PAGES_PER_TIMER", 1)
    _, secret = world.tenant.register(name="worker")
    for n in range(40):  # more switches than shards: some shard holds two or more
        world.call("heartbeat", secret, scope=f"job-{n}", expect_within_seconds=30)
    world.alarms.take_due(world.clock.now() + timedelta(days=1))  # every alarm is lost
    world.clock.advance(3600)
    result = sweep(world)
    assert result._asdict() == {"checked": 40, "swept": 40, "failed": 0, "finished": True}
    # A timer reads one switch here: forty switches took more timers than the run armed.
    assert world.sweep_timers >= 40 > SWEEP_SHARDS  # type: ignore[attr-defined]
    assert {s.state for s in world.store.list_switches("acme", "", None, 50)} == {"fired"}
