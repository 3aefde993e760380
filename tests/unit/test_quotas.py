"""Per-namespace quotas: each is refused with limit_exceeded once reached, changes nothing when
it refuses, frees its places when what it counts goes away, and holds under races; the counts
of one commit are merged into one write per item, as a DynamoDB transaction requires."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from tests.conftest import create_tables_from_template
from tests.liveness_support import World
from tests.support import error_of
from vigil.clock import ManualClock
from vigil.config import REQUIRED, Settings
from vigil.errors import ErrorCode
from vigil.kit.uow import ConditionFailed, Count
from vigil.quotas.records import Quotas
from vigil.store import Store
from vigil.stores.dynamo import DynamoStore
from vigil.stores.memory import MemoryStore

SMALL = Quotas(armed_switches=2, leases_per_scope=2, mailboxes=2, pending_deliveries=1)


@pytest.fixture
def world(clock: ManualClock) -> World:
    world = World(clock)
    world.app.quotas = SMALL
    world.switch_engine.quotas = SMALL
    return world


def arm(world: World, secret: str, scope: str, **more: Any) -> dict[str, Any]:
    return world.call("heartbeat", secret, scope=scope, expect_within_seconds=30, **more)


def usage(world: World, counter: Any) -> int:
    return world.store.quota_usage("acme", counter)


# -- armed switches -----------------------------------------------------------------------
def test_armed_switches_are_capped_and_freed_by_disarm_and_death(
    world: World, agent: tuple[str, str]
) -> None:
    arm(world, agent[1], "a")
    arm(world, agent[1], "b", on_expiry=["mark_failed"])
    for _ in range(3):  # steady beats count nothing
        world.clock.advance(1)
        arm(world, agent[1], "a")
    assert usage(world, "armed_switches") == 2

    error = error_of(arm, world, agent[1], "c")
    assert error.code is ErrorCode.LIMIT_EXCEEDED
    assert error.details == {"quota": "armed_switches", "limit": 2}
    assert error.to_dict()["retryable"] is False
    assert world.store.get_switch("acme", "c") is None

    world.call("heartbeat", agent[1], scope="a", expect_within_seconds=30, disarm=True)
    assert usage(world, "armed_switches") == 1
    arm(world, agent[1], "c")
    world.advance(31)  # b and c die
    assert usage(world, "armed_switches") == 0
    # Another namespace has its own quota.
    other = World(world.clock)
    other.app.quotas = SMALL
    _, theirs = other.tenant.register(name="other")
    arm(other, theirs, "a")


def test_two_arms_racing_for_the_last_place_get_one(
    world: World, agent: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    arm(world, agent[1], "a")
    store = world.store
    commit = store.commit
    raced: list[dict[str, Any]] = []

    def interleaved(writes: Any, completion: Any = None) -> None:
        monkeypatch.setattr(store, "commit", commit)
        # This arm read a quota with one place left; another arm takes it first.
        raced.append(arm(world, agent[1], "b"))
        commit(writes, completion)

    monkeypatch.setattr(store, "commit", interleaved)
    error = error_of(arm, world, agent[1], "c")
    assert error.code is ErrorCode.LIMIT_EXCEEDED
    assert raced[0]["state"] == "armed"
    assert usage(world, "armed_switches") == 2
    assert world.store.get_switch("acme", "c") is None


# -- leases per scope ---------------------------------------------------------------------
def test_leases_per_scope_are_capped_and_freed_by_release_and_death(
    world: World, agent: tuple[str, str]
) -> None:
    def acquire(resource: str, scope: str | None = "job") -> dict[str, Any]:
        return world.call("acquire_lease", agent[1], resource=resource, scope=scope)["lease"]

    first = acquire("r1")
    acquire("r2")
    acquire("r1")  # taking a lease held already counts nothing
    error = error_of(acquire, "r3")
    assert (error.code, error.details) == (
        ErrorCode.LIMIT_EXCEEDED,
        {"quota": "leases_per_scope", "limit": 2},
    )
    assert world.store.get_lease("acme", "r3") is None
    acquire("r3", scope="other")  # another scope, and no scope at all, are not this one's
    acquire("r4", scope=None)

    world.call("release_lease", agent[1], resource="r1", generation=first["generation"])
    assert world.store.scope_held("acme", "job") == 1
    acquire("r5")
    # The switch's death releases them: the scope's count goes back to zero.
    arm(world, agent[1], "job", on_expiry=["release_leases"])
    world.advance(31)
    assert world.store.scope_held("acme", "job") == 0
    assert world.store.scope_held("acme", "other") == 1


def test_a_lease_moving_between_scopes_moves_its_count(
    world: World, agent: tuple[str, str]
) -> None:
    world.call("acquire_lease", agent[1], resource="r", scope="a", ttl_seconds=5)
    world.clock.advance(6)  # lapsed: another takes it into another scope
    _, other = world.tenant.register(name="other")
    world.call("acquire_lease", other, resource="r", scope="b")
    assert (world.store.scope_held("acme", "a"), world.store.scope_held("acme", "b")) == (0, 1)


# -- mailboxes and pending deliveries ------------------------------------------------------
def test_named_mailboxes_are_capped(world: World, agent: tuple[str, str]) -> None:
    world.call("create_mailbox", agent[1], box="one")
    _, other = world.tenant.register(name="other")
    world.call("create_mailbox", other, box="two")
    assert world.call("create_mailbox", other, box="two")["created"] is False
    error = error_of(world.call, "create_mailbox", agent[1], box="three")
    assert error.details == {"quota": "mailboxes", "limit": 2}
    assert world.store.get_mailbox("acme", f"agent:{agent[0]}/three") is None


def test_an_undrained_mailbox_takes_no_new_switchs_alert(
    world: World, agent: tuple[str, str]
) -> None:
    watcher, watcher_secret = world.tenant.register(name="watcher")
    alerting = {"on_expiry": ["queue_alert"], "notify_address": f"agent:{watcher}"}
    world.call("heartbeat", agent[1], scope="a", expect_within_seconds=5, **alerting)
    world.advance(6)  # a dies: its alert waits in the watcher's mailbox
    error = error_of(arm, world, agent[1], "b", **alerting)
    assert error.details == {"quota": "pending_deliveries", "limit": 1}
    assert world.store.get_switch("acme", "b") is None
    arm(world, agent[1], "b")  # without an alert it arms
    (alert,) = world.call("inbox_poll", watcher_secret)["deliveries"]
    world.call("acknowledge", watcher_secret, id=alert["id"], generation=alert["generation"])
    arm(world, agent[1], "c", **alerting)


# -- counts merged per item ----------------------------------------------------------------
@pytest.mark.parametrize("backend", ["memory", "dynamo"])
def test_the_counts_of_one_commit_are_one_write_per_item(backend: str, request: Any) -> None:
    store: Store
    if backend == "dynamo":
        request.getfixturevalue("aws")
        client = boto3.client("dynamodb", region_name="us-east-1")
        store = DynamoStore(client, create_tables_from_template(client)["VigilTable"])
    else:
        store = MemoryStore()
    counts = [Count("NS#acme", "QUOTAS", "mailboxes", 1, 3) for _ in range(3)]
    counts += [Count("NS#acme", "QUOTAS", "armed_switches", -1), Count("K", "S", "n", 5)]
    writes = [store.count("acme", "mailboxes", 0, 3)]  # a write of the port, with no change
    writes += [_counted(store, count) for count in counts]
    store.commit(writes)
    assert store.quota_usage("acme", "mailboxes") == 3
    assert store.quota_usage("acme", "armed_switches") == -1
    assert store.counter("K", "S", "n") == 5
    # One more would pass the limit: the whole commit is refused.
    with pytest.raises(ConditionFailed):
        store.commit([_counted(store, Count("NS#acme", "QUOTAS", "mailboxes", 1, 3))])
    assert store.quota_usage("acme", "mailboxes") == 3


# -- decreases spread over shards ------------------------------------------------------------
@pytest.fixture(params=["memory", "dynamo"])
def store(request: Any) -> Store:
    if request.param == "memory":
        return MemoryStore()
    request.getfixturevalue("aws")
    client = boto3.client("dynamodb", region_name="us-east-1")
    return DynamoStore(client, create_tables_from_template(client)["VigilTable"])


def counters(store: Store, counter: Any) -> list[int]:
    return store.quota_shards("acme", counter)


def test_decreases_go_to_shards_and_an_increase_they_made_room_for_folds_them(
    store: Store,
) -> None:
    for _ in range(3):
        store.commit([store.count("acme", "armed_switches", 1, 3)])
    # Three switches leave: their decreases land on the shards their scopes hash to.
    store.commit([store.count("acme", "armed_switches", -1, 3, scope) for scope in "abc"])
    main, shards = store.quota_main("acme", "armed_switches"), counters(store, "armed_switches")
    assert main == 3
    assert sorted(held for held in shards if held) == [-1, -1, -1]  # three items, not one
    assert store.quota_usage("acme", "armed_switches") == 0
    # The main item alone refuses an increase; the sum has room, so the shards fold into it.
    with pytest.raises(ConditionFailed):
        store.commit([store.count("acme", "armed_switches", 1, 3)])
    assert store.over_quota("acme", "armed_switches", 3) is False
    assert store.quota_main("acme", "armed_switches") == 0
    assert counters(store, "armed_switches") == [0] * len(shards)
    for _ in range(3):
        store.commit([store.count("acme", "armed_switches", 1, 3)])
    # At the limit nothing folds, and the quota says so.
    assert store.over_quota("acme", "armed_switches", 3) is True
    assert store.quota_usage("acme", "armed_switches") == 3


def test_a_fold_overtaken_by_another_changes_nothing(store: Store) -> None:
    store.commit([store.count("acme", "mailboxes", 1, 9) for _ in range(1)])
    store.commit([store.count("acme", "mailboxes", 4, 9)])
    store.commit([store.count("acme", "mailboxes", -1, 9, key) for key in ("x", "y", "z")])
    read = counters(store, "mailboxes")
    store.fold("acme", "mailboxes", read)
    # A decrease lands after the first fold; a second fold that read before it comes late.
    store.commit([store.count("acme", "mailboxes", -1, 9, "x")])
    store.fold("acme", "mailboxes", read)
    assert store.quota_main("acme", "mailboxes") == 2
    assert sum(counters(store, "mailboxes")) == -1
    assert store.quota_usage("acme", "mailboxes") == 1


def _counted(store: Store, count: Count) -> Any:
    write = store.count("acme", "mailboxes", 0, 0)
    return type(write)(**{**vars(write), "counts": (count,)})


def _settings(quotas: dict[str, str]) -> Settings:
    return Settings.from_env({**dict.fromkeys(REQUIRED, "set"), **quotas})


def test_quotas_come_from_the_environment() -> None:
    assert Quotas.of(_settings({}).quota_limits) == Quotas()
    limits = _settings({"QUOTA_ARMED_SWITCHES": "5", "QUOTA_PENDING_DELIVERIES": "7"}).quota_limits
    chosen = Quotas.of(limits)
    assert (chosen.armed_switches, chosen.pending_deliveries, chosen.mailboxes) == (5, 7, 1000)
    with pytest.raises(RuntimeError):
        Quotas.of(_settings({"QUOTA_MAILBOXES": "0"}).quota_limits)


def test_a_setting_no_quota_reads_stops_nothing() -> None:
    unrelated = _settings({"QUOTA_SOMETHING_ELSE": "none", "QUOTA_LEGACY": "0"})
    assert Quotas.of(unrelated.quota_limits) == Quotas()
