"""Races and crashes around the expiry, injected rather than hoped for: an alarm and a beat
(or a disarm) interleaved in both orders, and a crash after every step of the expiry path
followed by the alarm being delivered again."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

import pytest

from tests.liveness_support import World
from vigil.app import App
from vigil.clock import ManualClock
from vigil.kit.memory import MemoryWrite
from vigil.stores.memory import MemoryStore
from vigil.switches.records import HeldLease, Switch

SCOPE = "job-1"


def arm(world: World, secret: str, watcher: str, window: int = 10) -> dict[str, Any]:
    world.call("acquire_lease", secret, resource="repo:main", scope=SCOPE, ttl_seconds=3600)
    return world.call(
        "heartbeat",
        secret,
        scope=SCOPE,
        expect_within_seconds=window,
        on_expiry=["release_leases", "mark_failed", "queue_alert"],
        notify_address=f"agent:{watcher}",
    )


def alerts(world: World, secret: str) -> list[dict[str, Any]]:
    found = []
    while page := world.call("inbox_poll", secret, max_messages=10)["deliveries"]:
        for delivery in page:
            found.append(delivery)
            world.call("acknowledge", secret, id=delivery["id"], generation=delivery["generation"])
    return found


def app_at(world: World, moment: ManualClock) -> App:
    """Another Lambda invocation sharing the store, whose request began at another moment."""
    return App(
        world.store,
        moment,
        queues=world.queues,
        alarms=world.alarms,
        blobs=world.blobs,
        keys=world.app.keys,
        sender=world.sender,
    )


class InterleavingStore(MemoryStore):
    """Runs ``between`` once, after the alarm path has read the switch and before it fires it."""

    def __init__(self) -> None:
        super().__init__()
        self.between: Any = None

    def fire_switch(self, switch: Switch, death: Any, now: Any, *also: Any) -> None:
        if self.between is not None:
            between, self.between = self.between, None
            between()
        super().fire_switch(switch, death, now, *also)


@pytest.fixture
def racing(clock: ManualClock) -> World:
    return World(clock, store=InterleavingStore())


@pytest.mark.parametrize("operation", ["beat", "disarm"])
def test_an_in_time_write_landing_between_the_alarms_read_and_its_firing_wins(
    racing: World, operation: str
) -> None:
    _, secret = racing.tenant.register(name="worker")
    watcher, watcher_secret = racing.tenant.register(name="watcher")
    arm(racing, secret, watcher)
    started = ManualClock(racing.clock.now() + timedelta(seconds=9.5))  # the request began in time
    racing.clock.advance(10.2)  # the alarm is processed just after the deadline
    arguments = {"scope": SCOPE, "expect_within_seconds": 10, "disarm": operation == "disarm"}
    arguments.update(
        on_expiry=["release_leases", "mark_failed", "queue_alert"],
        notify_address=f"agent:{watcher}",
    )
    racing.store.between = lambda: app_at(racing, started).call(
        "heartbeat", arguments, secret, via="rest"
    )  # type: ignore[attr-defined]
    racing.run_alarms()
    assert racing.store.latest_death("acme", SCOPE) is None
    switch = racing.store.get_switch("acme", SCOPE)
    assert switch is not None
    assert switch.state == ("disarmed" if operation == "disarm" else "armed")
    assert alerts(racing, watcher_secret) == []


@pytest.mark.parametrize("operation", ["beat", "disarm"])
def test_a_write_landing_after_the_firing_learns_of_the_death(world: World, operation: str) -> None:
    _, secret = world.tenant.register(name="worker")
    watcher, watcher_secret = world.tenant.register(name="watcher")
    arm(world, secret, watcher)
    started = ManualClock(world.clock.now() + timedelta(seconds=9.5))
    world.clock.advance(10.2)
    world.run_alarms()  # the alarm commits first
    arguments = {
        "scope": SCOPE,
        "expect_within_seconds": 10,
        "disarm": operation == "disarm",
        "on_expiry": ["release_leases", "mark_failed", "queue_alert"],
        "notify_address": f"agent:{watcher}",
    }
    result = app_at(world, started).call("heartbeat", arguments, secret, via="rest")
    assert result["death"]["generation"] == 1
    if operation == "disarm":
        assert result["state"] == "failed"  # a disarm cannot undo a death
    else:
        assert (result["state"], result["generation"]) == ("armed", 2)
    world.run_alarms()  # the recovery envelope, sent by the death's alarm after the beat
    told = [alert["payload"]["event"] for alert in alerts(world, watcher_secret)]
    # The death was told once; a beat that armed the switch again told of its end too.
    assert told == ["switch_fired"] + (["switch_recovered"] if operation == "beat" else [])


class Crash(Exception):
    pass


@dataclass(frozen=True)
class _Released(MemoryWrite):
    releases: bool = False


class CrashingStore(MemoryStore):
    """Crashes once, right after the named step has taken effect."""

    def __init__(self) -> None:
        super().__init__()
        self.crash_after: str | None = None

    def _step(self, name: str) -> None:
        if self.crash_after == name:
            self.crash_after = None
            raise Crash(name)

    def fire_switch(self, switch: Switch, death: Any, now: Any, *also: Any) -> None:
        super().fire_switch(switch, death, now, *also)
        self._step("fire")

    def commit(self, writes: Any, completion: Any = None) -> None:
        super().commit(writes, completion)
        # A transaction is atomic: the crash comes after all of it, or before.
        if any(getattr(write, "releases", False) for write in writes):
            self._step("release")

    def save_lease(self, lease: Any, expected_version: Any, scope_limit: Any = None) -> Any:
        write = super().save_lease(lease, expected_version, scope_limit)
        return _Released(**vars(write), releases=lease.state == "released")

    def save_death(self, death: Any, expected_version: int) -> MemoryWrite:
        write = super().save_death(death, expected_version)
        before = self.deaths[(death.namespace, death.scope, death.generation)]

        def apply() -> None:
            write.apply()
            for action in death.done.keys() - before.done.keys():
                self._step(f"record:{action}")

        return replace(write, apply=apply)


STEPS = [
    "fire",
    "release",
    "record:release_leases",
    "send",
    "record:queue_alert",
    "record:notify",
]


@pytest.mark.parametrize("step", STEPS)
def test_a_crash_after_any_step_then_the_alarm_again_finishes_without_repeating(
    clock: ManualClock, step: str
) -> None:
    store = CrashingStore()
    world = World(clock, store=store)
    _, secret = world.tenant.register(name="worker")
    watcher, watcher_secret = world.tenant.register(name="watcher")
    arm(world, secret, watcher)
    lease_version = store.get_lease("acme", "repo:main").version  # type: ignore[union-attr]

    original_send = world.queues.send
    sends = []

    def send(ref: Any, body: str) -> str:
        sends.append(body)
        message_id = original_send(ref, body)
        if step == "send" and len(sends) == 1:
            raise Crash("send")
        return message_id

    world.queues.send = send  # type: ignore[method-assign]
    store.crash_after = None if step == "send" else step
    clock.advance(10)
    (timer,) = world.due_alarms()
    with pytest.raises(Crash):
        world.deliver(timer)
    world.deliver(timer)  # the queue hands the unacknowledged alarm out again
    world.deliver(timer)  # and once more, late: nothing left to do

    death = store.latest_death("acme", SCOPE)
    assert death is not None
    # mark_failed is recorded by the firing itself, the others in their order.
    assert list(death.done) == ["mark_failed", "release_leases", "queue_alert", "notify"]
    lease = store.get_lease("acme", "repo:main")
    assert lease is not None
    assert lease.state == "released"
    assert lease.version == lease_version + 1  # released once, never twice
    assert death.release.released == 1
    assert death.release.first == [HeldLease(resource="repo:main", generation=1)]
    assert len(alerts(world, watcher_secret)) == 1
    # The alert is sent again only when the crash came between sending and recording it.
    assert len(sends) == (2 if step == "send" else 1)
