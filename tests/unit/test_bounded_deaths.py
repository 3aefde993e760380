"""A death stays within every service limit however many leases its holder had: released in
bounded batches recorded as pages, an alert of counts and the first few names, a beat that
never runs an unbounded plan. The fake refuses what DynamoDB and SQS would refuse, so these
tests would fail on a design that put the whole release in one item or one alert."""

from __future__ import annotations

from typing import Any

import pytest

from tests.liveness_support import World
from vigil.clock import ManualClock
from vigil.errors import ErrorCode, VigilError
from vigil.kit.dynamo import DynamoWrite
from vigil.kit.limits import MAX_ITEM_BYTES, MAX_MESSAGE_BYTES, item_bytes
from vigil.leases.records import granted
from vigil.store import Store
from vigil.stores.memory import MemoryStore
from vigil.switches.engine import BEAT_STEPS
from vigil.switches.records import NAMED_RELEASES, RELEASE_BATCH

# 200 characters of four UTF-8 bytes each: the longest names, at the most bytes per character.
SCOPE = "作業-" + "\U0001d516" * 197
ACTIONS = ["release_leases", "mark_failed", "queue_alert"]


def resource(index: int) -> str:
    return f"{index:05d}" + "\U0001d52f" * 195


def hold(world: World, holder_id: str, count: int) -> None:
    """``count`` scoped leases of the holder, written straight to the store: the tools would
    take minutes to make thousands, and what is under test is what happens after."""
    now = world.clock.now()
    for index in range(count):
        lease = granted(None, "acme", resource(index), SCOPE, holder_id, None, 3600, now)
        write = world.store.save_lease(lease, None)
        if isinstance(write, DynamoWrite):
            # Item by item: moto copies the whole table for each item of a transaction. (A new
            # lease's check that no lease is at its old key has nothing to write.)
            for item in write.items:
                if "Put" in item:
                    world.store.client.put_item(**item["Put"])  # type: ignore[attr-defined]
        else:
            world.store.commit([write])


def arm(world: World, secret: str, watcher_id: str) -> dict[str, Any]:
    return world.call(
        "heartbeat",
        secret,
        scope=SCOPE,
        expect_within_seconds=10,
        on_expiry=ACTIONS,
        notify_address=f"agent:{watcher_id}",
        agent_id="worker-1",
    )


def inbox(world: World, secret: str) -> list[dict[str, Any]]:
    found = []
    while page := world.call("inbox_poll", secret, max_messages=10)["deliveries"]:
        for delivery in page:
            found.append(delivery)
            world.call("acknowledge", secret, id=delivery["id"], generation=delivery["generation"])
    return found


def released_pages(world: World, secret: str, packet: dict[str, Any]) -> list[str]:
    names = []
    for number in range(1, packet["death"]["released_pages"] + 1):
        page = world.call("resume_packet", secret, scope=SCOPE, released_page=number)
        assert 0 < len(page["released_leases"]) <= RELEASE_BATCH
        names += [held["resource"] for held in page["released_leases"]]
    return names


def check_all_released_once(world: World, store: Store, count: int) -> None:
    for index in range(count):
        lease = store.get_lease("acme", resource(index))
        assert lease is not None
        assert (lease.state, lease.released_by) == ("released", f"expiry:{SCOPE}")
        assert lease.version == 2  # granted, then released: once


@pytest.mark.parametrize("count", [5000])
def test_thousands_of_long_scoped_leases_are_released_once_with_one_small_alert(
    clock: ManualClock, count: int
) -> None:
    world = World(clock)
    worker_id, worker = world.tenant.register(name="worker")
    watcher_id, watcher = world.tenant.register(name="watcher")
    hold(world, worker_id, count)
    arm(world, worker, watcher_id)

    world.advance(11)  # the alarm fires the switch; further alarms go on with the release
    for _ in range(count // RELEASE_BATCH):
        if not world.alarms.armed:
            break
        world.advance(1)

    death = world.store.latest_death("acme", SCOPE)
    assert death is not None
    assert death.pending() == []
    assert death.release.released == count
    assert item_bytes(death.scope, death) < MAX_ITEM_BYTES // 10  # bounded, whatever was held
    check_all_released_once(world, world.store, count)

    (alert,) = inbox(world, watcher)  # exactly one
    payload = alert["payload"]
    assert payload["released_count"] == count
    assert [held["resource"] for held in payload["released_first"]] == [
        resource(index) for index in range(NAMED_RELEASES)
    ]
    assert len(alert["payload"]["scope"]) == 200
    assert len(str(alert).encode()) < MAX_MESSAGE_BYTES // 10

    packet = world.call("resume_packet", watcher, scope=SCOPE)
    assert packet["death"]["released_count"] == count
    assert released_pages(world, watcher, packet) == [resource(index) for index in range(count)]
    assert (
        world.call("resume_packet", watcher, scope=SCOPE, released_page=10**6)["released_leases"]
        is None
    )


def test_a_successor_rearms_a_crowded_scope_in_a_bounded_number_of_steps(
    clock: ManualClock,
) -> None:
    count = 2000
    world = World(clock)
    worker_id, worker = world.tenant.register(name="worker")
    watcher_id, watcher = world.tenant.register(name="watcher")
    hold(world, worker_id, count)
    arm(world, worker, watcher_id)
    world.alarms.armed.clear()  # the alarm is late: the successor's beat finds the death first
    clock.advance(11)

    _, successor = world.tenant.register(name="successor")
    rearmed = arm(world, successor, watcher_id)

    assert (rearmed["state"], rearmed["generation"]) == ("armed", 2)
    reported = rearmed["death"]
    assert reported["generation"] == 1
    # The beat did a few batches at most, and said so: the rest is the alarm's.
    assert 0 < reported["released_count"] <= BEAT_STEPS * RELEASE_BATCH
    # Only what the firing recorded itself.
    assert reported["completed"] == ["mark_failed"]
    assert any(timer.generation == 1 for timer in world.alarms.armed)

    for _ in range(count // RELEASE_BATCH):
        world.advance(1)
    death = world.store.get_death("acme", SCOPE, 1)
    assert death is not None
    assert death.pending() == []
    check_all_released_once(world, world.store, count)
    told = [a["payload"]["event"] for a in inbox(world, watcher) if a["payload"]["generation"] == 1]
    # The death, then its end, each once, after every batch was released (the successor,
    # beating no more, has died since: its own alert).
    assert told == ["switch_fired", "switch_recovered"]


def test_the_fake_refuses_what_dynamodb_and_sqs_refuse(clock: ManualClock) -> None:
    store = MemoryStore()
    now = clock.now()
    too_big = granted(None, "acme", "x" * MAX_ITEM_BYTES, None, "agt_x", None, 60, now)
    with pytest.raises(VigilError) as refused:
        store.commit([store.save_lease(too_big, None)])
    assert refused.value.code is ErrorCode.UNAVAILABLE
    many = [
        store.save_lease(granted(None, "acme", f"r{i}", None, "agt_x", None, 60, now), None)
        for i in range(101)
    ]
    with pytest.raises(VigilError):
        store.commit(many)
    assert store.get_lease("acme", "r0") is None  # nothing of a refused transaction lands
    store.commit(many[:100])
    big = [
        store.save_lease(
            granted(None, "acme", f"{i}" + "b" * 60_000, None, "agt_x", None, 60, now), None
        )
        for i in range(80)
    ]
    with pytest.raises(VigilError):  # 80 items of about 60 KB: over the 4 MB of a transaction
        store.commit(big)

    world = World(clock)
    ref = world.queues.ensure("q")
    with pytest.raises(VigilError):
        world.queues.send(ref, "x" * (MAX_MESSAGE_BYTES + 1))
    assert world.queues.receive(ref, 10, 0, 30) == []


def test_on_dynamodb_a_death_past_the_old_item_limit_completes(
    clock: ManualClock, dynamo_store: Store
) -> None:
    # About 330 leases with such names made one death item pass 400 KB when it held the
    # whole plan and outcome; 400 of them now take ten batches and one small item.
    count = 400
    world = World(clock, store=dynamo_store)
    worker_id, worker = world.tenant.register(name="worker")
    watcher_id, watcher = world.tenant.register(name="watcher")
    hold(world, worker_id, count)
    arm(world, worker, watcher_id)
    world.advance(11)

    death = dynamo_store.latest_death("acme", SCOPE)
    assert death is not None
    assert (death.pending(), death.release.released) == ([], count)
    check_all_released_once(world, dynamo_store, count)
    assert dynamo_store.scope_leases("acme", SCOPE) == []
    (alert,) = inbox(world, watcher)
    assert alert["payload"]["released_count"] == count
    packet = world.call("resume_packet", watcher, scope=SCOPE)
    assert released_pages(world, watcher, packet) == [resource(index) for index in range(count)]
