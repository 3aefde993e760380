"""The fires of one batch of timers read their namespace's pauses and channels once, not once
each; outside a batch every read is made afresh; a pause made between two batches holds the
second."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tests.liveness_support import World
from vigil.clock import ManualClock
from vigil.entrypoints import alarm
from vigil.entrypoints.timer_events import serve
from vigil.kit.batch import one_batch, read_once


def test_inside_a_batch_a_key_is_read_once_and_outside_every_time() -> None:
    reads: list[str] = []

    def read() -> int:
        reads.append("x")
        return len(reads)

    assert [read_once("k", read), read_once("k", read)] == [1, 2]
    with one_batch():
        assert [read_once("k", read), read_once("k", read), read_once("j", read)] == [3, 3, 4]
        with one_batch():  # a batch of its own shares nothing with the one around it
            assert read_once("k", read) == 5
        assert read_once("k", read) == 3
    assert read_once("k", read) == 6


def count_calls(world: World, monkeypatch: pytest.MonkeyPatch, *names: str) -> dict[str, int]:
    """How many times each of the store's methods ``names`` is called from now on."""
    counts = dict.fromkeys(names, 0)
    for name in names:
        original = getattr(world.store, name)

        def counting(*args: Any, _name: str = name, _original: Any = original) -> Any:
            counts[_name] += 1
            return _original(*args)

        monkeypatch.setattr(world.store, name, counting)
    return counts


@pytest.fixture
def counted(world: World, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    return count_calls(world, monkeypatch, "pauses", "list_channels")


def _batch(world: World, scopes: list[str]) -> dict[str, Any]:
    due = world.due_alarms()
    assert sorted(timer.key for timer in due) == sorted(scopes)
    records = [{"messageId": t.key, "body": t.model_dump_json()} for t in due]
    return serve(
        {"Records": records},
        world.clock,
        world.alarms,
        lambda: alarm.handlers(world.switch_engine),
        logging.getLogger("tests.batch_reads"),
    )


def test_a_batch_of_deaths_reads_the_pauses_and_channels_once(
    world: World, clock: ManualClock, agent: tuple[str, str], counted: dict[str, int]
) -> None:
    scopes = [f"host/agent-{n}" for n in range(5)]
    for scope in scopes:
        world.call("heartbeat", agent[1], scope=scope, expect_within_seconds=10)
    clock.advance(11)
    with one_batch():
        assert _batch(world, scopes) == {"batchItemFailures": []}
    assert counted == {"pauses": 1, "list_channels": 1}
    deaths = world.call("list_deaths", world.tenant.operator_secret)["deaths"]
    assert sorted(d["scope"] for d in deaths) == scopes


def test_a_pause_made_between_two_batches_holds_the_second(
    world: World, clock: ManualClock, agent: tuple[str, str]
) -> None:
    for scope in ("a/1", "b/1"):
        world.call("heartbeat", agent[1], scope=scope, expect_within_seconds=10)
    clock.advance(11)
    due = world.due_alarms()
    first = [t for t in due if t.key == "a/1"]
    second = [t for t in due if t.key == "b/1"]
    for timer in first:
        world.alarms.arm(timer, clock.now())
    with one_batch():
        _batch(world, ["a/1"])
    world.call(
        "pause_switches", world.tenant.operator_secret, scope_prefix="b/", until_next_beat=True
    )
    for timer in second:
        world.alarms.arm(timer, clock.now())
    with one_batch():
        _batch(world, ["b/1"])
    assert world.store.get_switch("acme", "a/1").state == "fired"  # type: ignore[union-attr]
    assert world.store.get_switch("acme", "b/1").state == "armed"  # type: ignore[union-attr]


def _deliver_batch(world: World, due: list[Any]) -> None:
    """``due`` delivered as one batch of the alarm function: its switches read ahead, then
    each timer to its handler."""
    with one_batch():
        world.switch_engine.read_ahead(due)
        for timer in due:
            world.deliver(timer)


def test_a_batchs_switches_are_read_together_once(
    world: World, clock: ManualClock, agent: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(5):
        world.call("heartbeat", agent[1], scope=f"job-{n}", expect_within_seconds=10)
    clock.advance(11)
    reads = count_calls(world, monkeypatch, "get_switch", "get_switches")
    _deliver_batch(world, world.due_alarms())
    assert reads == {"get_switch": 0, "get_switches": 1}
    assert {world.store.get_switch("acme", f"job-{n}").state for n in range(5)} == {"fired"}  # type: ignore[union-attr]


def test_a_switch_saved_after_its_batch_read_it_is_looked_at_again_not_fired(
    world: World, clock: ManualClock, agent: tuple[str, str]
) -> None:
    """Read ahead past its deadline, then beaten in time by the clock of the call that beat it
    (a clock a second behind the alarm's): the firing the stale view tries fails its condition,
    and the timer is looked at again, on a fresh read."""
    world.call("heartbeat", agent[1], scope="job", expect_within_seconds=10)
    clock.advance(10.5)
    (timer,) = world.alarms.take_due(clock.now())
    with one_batch():
        world.switch_engine.read_ahead([timer])
        clock.advance(-1)
        world.call("heartbeat", agent[1], scope="job", expect_within_seconds=10)
        clock.advance(1)
        world.deliver(timer)
    switch = world.store.get_switch("acme", "job")
    assert switch is not None
    assert world.store.latest_death("acme", "job") is None
    assert switch.state == "armed"
    # Its next alarm is armed for the deadline the beat set, as a fresh read would have.
    assert switch.alarm_due == switch.deadline
    assert [t.due_at for t in world.alarms.armed] == [switch.deadline]
