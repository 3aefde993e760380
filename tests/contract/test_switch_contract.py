"""The switch store: the fake and DynamoDB (on moto) agree on every conditional change."""

from __future__ import annotations

import zlib
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import pytest

from vigil.clock import ManualClock, to_ms
from vigil.kit.uow import ConditionFailed
from vigil.store import Store
from vigil.stores.backfill import backfill_indexes
from vigil.stores.dynamo import DynamoStore
from vigil.switches.calendars import Calendar
from vigil.switches.dynamo import DEATH_INDEX, DEATH_SHARDS
from vigil.switches.records import Beat, Death, HeldLease, Pause, Switch
from vigil.switches.store import SWEEP_SHARDS, ArmedAlarm, sweep_shard


def switch(clock: ManualClock, scope: str = "job#1", window: int = 30, **changes: object) -> Switch:
    now = to_ms(clock.now())
    fields = {
        "namespace": "acme",
        "scope": scope,
        "holder": "agt_aaaaaaaaaaaaaaaa",
        "agent_id": "worker-1",
        "state": "armed",
        "generation": 1,
        "deadline": now + timedelta(seconds=window),
        "expect_within_seconds": window,
        "on_expiry": ["release_leases", "mark_failed"],
        "notify_address": None,
        "armed_at": now,
        "last_beat_at": now,
        "beats": 1,
        "alarm_due": now + timedelta(seconds=window),
        "version": 1,
        **changes,
    }
    return Switch.model_validate(fields)


def death_of(s: Switch, clock: ManualClock) -> Death:
    return Death(
        namespace=s.namespace,
        scope=s.scope,
        generation=s.generation,
        holder=s.holder,
        agent_id=s.agent_id,
        deadline=s.deadline,
        fired_at=to_ms(clock.now()),
        actions=s.on_expiry,
        notify_address=s.notify_address,
        done={},
        version=1,
    )


def pause_of(
    clock: ManualClock, prefix: str = "job#", namespace: str = "acme", **changes: object
) -> Pause:
    now = to_ms(clock.now())
    return Pause.begun(
        None,
        namespace,
        prefix,
        "per_aaaaaaaaaaaaaaaa",
        now,
        now + timedelta(hours=1),
        False,
        "upgrade",
    ).model_copy(update=changes)


def test_a_flapping_switch_keeps_its_deaths_and_since_when_it_flaps(
    store: Store, clock: ManualClock
) -> None:
    now = to_ms(clock.now())
    flaps = [now - timedelta(minutes=20, milliseconds=5), now - timedelta(minutes=1)]
    s = switch(clock, flaps=flaps, flapping_since=flaps[-1])
    store.commit([store.save_switch(s, None)])
    assert store.get_switch("acme", "job#1") == s
    settled = s.changed(flapping_since=None, flaps=[])
    store.commit([store.save_switch(settled, s.version)])
    assert store.get_switch("acme", "job#1") == settled


def test_the_fast_beat_sets_and_clears_a_calendar_and_a_run(
    store: Store, clock: ManualClock
) -> None:
    s = switch(clock)
    store.commit([store.save_switch(s, None)])
    now = to_ms(clock.advance(10))
    nightly = Calendar.parse("30 2 * * *", "Europe/Berlin", 900, now=now)
    terms: dict[str, Any] = {"on_expiry": None, "notify_address": None, "agent_id": None}

    def beat(**more: Any) -> Switch | None:
        at = to_ms(clock.advance(1))
        return store.beat_switch("acme", "job#1", s.holder, Beat(at=at, **terms, **more))

    # A start beat keeps no calendar of its own: its deadline is its run's.
    started = beat(expect_within_seconds=3600, phase="start", min_run_seconds=600)
    assert started is not None
    assert started.run_started_at == started.last_beat_at
    assert started.short_before == started.last_beat_at + timedelta(seconds=600)
    # A finish before the floor is refused by the fast path (the slow path tells it).
    assert beat(expect_within_seconds=900, phase="finish", calendar=nightly) is None
    clock.advance(600)
    finished = beat(expect_within_seconds=900, phase="finish", calendar=nightly)
    assert finished is not None
    assert (finished.calendar, finished.run_started_at, finished.short_before) == (
        nightly,
        None,
        None,
    )
    assert finished.deadline == nightly.due_after(finished.last_beat_at)
    assert store.get_switch("acme", "job#1") == finished
    # A beat without a schedule clears it: a window switch again.
    window = beat(expect_within_seconds=30)
    assert window is not None
    assert window.calendar is None
    assert store.get_switch("acme", "job#1") == window


def test_put_get_round_trip_and_version_condition(store: Store, clock: ManualClock) -> None:
    s = switch(clock)
    store.commit([store.save_switch(s, None)])
    assert store.get_switch("acme", "job#1") == s
    with pytest.raises(ConditionFailed):
        store.commit([store.save_switch(s, None)])
    changed = s.model_copy(update={"state": "disarmed", "version": 2})
    store.commit([store.save_switch(changed, 1)])
    with pytest.raises(ConditionFailed):
        store.commit([store.save_switch(changed.model_copy(update={"version": 3}), 1)])
    assert store.get_switch("acme", "job#1") == changed
    assert store.get_switch("globex", "job#1") is None


def test_the_fast_beat_applies_only_to_an_armed_switch_in_time(
    store: Store, clock: ManualClock
) -> None:
    s = switch(clock)
    store.commit([store.save_switch(s, None)])
    now = to_ms(clock.advance(10))

    def beat(at: datetime, window: int = 30, notify: str | None = None) -> Beat:
        # Naming no on_expiry and no agent_id: the switch keeps its own.
        terms = {"on_expiry": None, "agent_id": None}
        return Beat(at=at, expect_within_seconds=window, notify_address=notify, **terms)

    beaten = store.beat_switch("acme", "job#1", s.holder, beat(now))
    assert beaten is not None
    kept = (s.on_expiry, s.notify_address, s.agent_id)
    assert s.agent_id is not None
    assert (beaten.deadline, beaten.beats, beaten.version) == (now + timedelta(seconds=30), 2, 2)
    assert (beaten.on_expiry, beaten.notify_address, beaten.agent_id) == kept
    assert store.get_switch("acme", "job#1") == beaten
    assert store.beat_switch("acme", "job#1", "agt_bbbbbbbbbbbbbbbb", beat(now)) is None
    assert store.beat_switch("acme", "job#1", s.holder, beat(now, notify="agent:x")) is None
    # A shorter window needs an earlier alarm: the fast beat refuses, the slow path arms it.
    assert store.beat_switch("acme", "job#1", s.holder, beat(now, window=2)) is None
    late = to_ms(clock.advance(31))
    assert store.beat_switch("acme", "job#1", s.holder, beat(late)) is None
    assert store.get_switch("acme", "job#1") == beaten


def test_firing_is_won_once_and_only_when_overdue(store: Store, clock: ManualClock) -> None:
    s = switch(clock)
    store.commit([store.save_switch(s, None)])
    with pytest.raises(ConditionFailed):
        store.fire_switch(s, death_of(s, clock), clock.now())  # not yet due
    assert store.get_death("acme", "job#1", 1) is None
    clock.advance(30)
    death = death_of(s, clock)
    store.fire_switch(s, death, clock.now())
    assert store.get_switch("acme", "job#1").state == "fired"  # type: ignore[union-attr]
    assert store.get_death("acme", "job#1", 1) == death
    with pytest.raises(ConditionFailed):
        store.fire_switch(s, death, clock.now())


def test_deaths_record_actions_once_and_the_latest_is_found(
    store: Store, clock: ManualClock
) -> None:
    first = switch(clock, window=2)
    store.commit([store.save_switch(first, None)])
    clock.advance(3)
    store.fire_switch(first, death_of(first, clock), clock.now())
    second = switch(clock, window=2, generation=2, version=3)
    store.commit([store.save_switch(second, 2)])
    clock.advance(3)
    store.fire_switch(second, death_of(second, clock), clock.now())
    # A scope whose name extends this one's must not be mistaken for it.
    other = switch(clock, scope="job#1#2", window=2, generation=9)
    store.commit([store.save_switch(other, None)])
    clock.advance(3)
    store.fire_switch(other, death_of(other, clock), clock.now())

    latest = store.latest_death("acme", "job#1")
    assert latest is not None
    assert latest.generation == 2
    recorded = latest.recorded("mark_failed", {"failed_at": "x"})
    store.commit([store.save_death(recorded, latest.version)])
    assert recorded.done == {"mark_failed": {"failed_at": "x"}}
    with pytest.raises(ConditionFailed):
        store.commit([store.save_death(latest.recorded("release_leases", {}), latest.version)])
    assert store.get_death("acme", "job#1", 2) == recorded


def test_released_pages_are_written_once_each_and_never_read_as_deaths(
    store: Store, clock: ManualClock
) -> None:
    s = switch(clock, window=2)
    store.commit([store.save_switch(s, None)])
    clock.advance(3)
    death = death_of(s, clock)
    store.fire_switch(s, death, clock.now())
    batch = [HeldLease(resource="réseau/ü" * 20, generation=4)]
    page = death.page(batch)
    advanced = death.released_batch(batch, after=batch[-1].resource)
    store.commit([store.add_released_page(page), store.save_death(advanced, death.version)])
    assert store.get_released_page("acme", "job#1", 1, 1) == page
    assert store.get_released_page("acme", "job#1", 1, 2) is None
    assert store.latest_death("acme", "job#1") == advanced  # a page sorts beside its death
    with pytest.raises(ConditionFailed):  # a page is never written over
        store.commit([store.add_released_page(page)])


def test_moving_the_alarm_is_won_once(store: Store, clock: ManualClock) -> None:
    s = switch(clock)
    store.commit([store.save_switch(s, None)])
    later = s.alarm_due + timedelta(seconds=60)
    assert store.move_alarm(s.model_copy(update={"alarm_due": later}), s.alarm_due) is True
    assert store.move_alarm(s.model_copy(update={"alarm_due": later}), s.alarm_due) is False
    assert store.get_switch("acme", "job#1").alarm_due == later  # type: ignore[union-attr]


def test_switches_are_listed_from_their_index_in_scope_order(
    store: Store, clock: ManualClock
) -> None:
    scopes = ["job#2", "job#1", "other", "jobs-ü"]
    for scope in scopes:
        store.commit([store.save_switch(switch(clock, scope=scope), None)])
    store.commit([store.save_switch(switch(clock, scope="job#1", namespace="globex"), None)])
    # Later saves (a beat, a disarm) write no index row and leave the listing as it was.
    beaten = store.beat_switch(
        "acme",
        "job#1",
        "agt_aaaaaaaaaaaaaaaa",
        Beat(
            at=to_ms(clock.advance(1)),
            expect_within_seconds=30,
            on_expiry=["release_leases", "mark_failed"],
            notify_address=None,
            agent_id=None,
        ),
    )
    assert beaten is not None
    listed = store.list_switches("acme", "", None, 10)
    assert [s.scope for s in listed] == sorted(scopes)
    assert listed[0] == beaten
    assert [s.scope for s in store.list_switches("acme", "job", None, 10)] == [
        "job#1",
        "job#2",
        "jobs-ü",
    ]
    assert [s.scope for s in store.list_switches("acme", "job", "job#1", 1)] == ["job#2"]
    assert [s.namespace for s in store.list_switches("globex", "", None, 10)] == ["globex"]


def test_a_firing_indexes_its_death_newest_first(store: Store, clock: ManualClock) -> None:
    deaths = []
    for scope in ["b", "a", "c"]:
        s = switch(clock, scope=scope, window=2)
        store.commit([store.save_switch(s, None)])
        clock.advance(3)
        death = death_of(s, clock)
        store.fire_switch(s, death, clock.now())
        deaths.append(death)
    newest_first = list(reversed(deaths))
    assert store.recent_deaths("acme", None, 10) == newest_first
    first = store.recent_deaths("acme", None, 2)
    assert first == newest_first[:2]
    assert store.recent_deaths("acme", first[-1].position, 10) == newest_first[2:]
    assert store.recent_deaths("globex", None, 10) == []
    # The listing reads the death as it is now, with its actions' progress.
    done = deaths[0].recorded("mark_failed", {"failed_at": "x"})
    store.commit([store.save_death(done, deaths[0].version)])
    assert store.recent_deaths("acme", None, 10)[-1] == done


def test_a_burst_of_deaths_in_one_namespace_is_spread_and_listed_whole(
    dynamo_store: DynamoStore, clock: ManualClock
) -> None:
    """Forty deaths in the same millisecond: their entries in the deaths' index spread over its
    partitions, and the listing pages through all of them, newest first, each once."""
    switches = [switch(clock, scope=f"host-7/agent-{n}", window=2) for n in range(40)]
    for s in switches:
        dynamo_store.commit([dynamo_store.save_switch(s, None)])
    clock.advance(3)
    deaths = []
    for s in switches:
        deaths.append(death_of(s, clock))
        dynamo_store.fire_switch(s, deaths[-1], clock.now())
    listed: list[str] = []
    before = None
    while page := dynamo_store.recent_deaths("acme", before, 7):
        listed += [d.position for d in page]
        before = page[-1].position
    assert listed == sorted((d.position for d in deaths), reverse=True)
    rows = dynamo_store.client.scan(TableName=dynamo_store.table, IndexName=DEATH_INDEX)["Items"]
    assert len(rows) == 40
    per_partition = Counter(row["gsi1pk"]["S"] for row in rows)
    assert all(pk.startswith("NS#acme#DEATHS#") for pk in per_partition)
    # Forty entries over 32 partitions: spread, none holding more than a few.
    assert len(per_partition) > DEATH_SHARDS // 2
    assert max(per_partition.values()) <= 4


def test_the_backfill_indexes_what_was_stored_before_the_indexes(
    dynamo_store: DynamoStore, clock: ManualClock
) -> None:
    """Switches and deaths written without index entries (as before list_switches existed, and
    deaths before the deaths' index was gsi1, with its rows of their own) are indexed by
    ``vigil backfill-indexes``, once, and the old rows go."""
    old = switch(clock, scope="old", window=2)
    dynamo_store.commit([dynamo_store.save_switch(old, None)])
    clock.advance(3)
    death = death_of(old, clock)
    dynamo_store.fire_switch(old, death, clock.now())
    client, table = dynamo_store.client, dynamo_store.table
    # As if written before the indexes.
    rows = client.query(
        TableName=table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "NS#acme#SWITCHES"}},
    )["Items"]
    for row in rows:
        client.delete_item(TableName=table, Key={"pk": row["pk"], "sk": row["sk"]})
    death_key = {"pk": {"S": "NS#acme#SW#old"}, "sk": {"S": "DEATH#000000000001"}}
    client.update_item(TableName=table, Key=death_key, UpdateExpression="REMOVE gsi1pk, gsi1sk")
    old_row = {
        "pk": {"S": f"NS#acme#DEATHS#{zlib.crc32(b'old') % DEATH_SHARDS}"},
        "sk": {"S": death.position},
        "scope": {"S": "old"},
        "generation": {"N": "1"},
    }
    client.put_item(TableName=table, Item=old_row)
    assert dynamo_store.list_switches("acme", "", None, 10) == []
    assert dynamo_store.recent_deaths("acme", None, 10) == []
    # Switches indexed already whose scopes read like a switch's or a death's sort key: their
    # index rows are neither.
    for scope in ("SWITCH", "DEATH#000000000001"):
        dynamo_store.commit([dynamo_store.save_switch(switch(clock, scope=scope), None)])
    # Nor are pauses whose prefixes read so.
    for prefix in ("SWITCH", "DEATH#000000000001"):
        dynamo_store.commit([dynamo_store.save_pause(pause_of(clock, prefix), None)])

    assert backfill_indexes(client, table) == (1, 1, 0, 0, 1, 0)
    assert [s.scope for s in dynamo_store.list_switches("acme", "", None, 10)] == [
        "DEATH#000000000001",
        "SWITCH",
        "old",
    ]
    assert dynamo_store.recent_deaths("acme", None, 10) == [death]
    assert "Item" not in client.get_item(TableName=table, Key={k: old_row[k] for k in ("pk", "sk")})
    assert backfill_indexes(client, table) == (0, 0, 0, 0, 0, 0)


def every_armed_alarm(store: Store, limit: int) -> list[ArmedAlarm]:
    """Every shard of the sweep index read to its end, ``limit`` a page."""
    found: list[ArmedAlarm] = []
    for shard in range(SWEEP_SHARDS):
        after = None
        while True:
            page = store.armed_alarms(shard, after, limit)
            assert all(sweep_shard(a.namespace, a.scope) == shard for a in page.alarms)
            found += page.alarms
            if page.after is None:
                break
            after = page.after
    return found


def test_the_sweep_index_holds_each_switch_while_it_is_armed(
    store: Store, clock: ManualClock
) -> None:
    switches = [switch(clock, scope=f"job-{i}", window=10 + i) for i in range(40)]
    switches.append(switch(clock, scope="job-1", namespace="globex"))
    for s in switches:
        store.commit([store.save_switch(s, None)])
    # Shards spread them: no shard holds them all.
    assert len({sweep_shard(s.namespace, s.scope) for s in switches}) > 10
    expected = {(s.namespace, s.scope): (s.generation, s.alarm_due) for s in switches}

    for limit in (1, 3, 100):
        found = every_armed_alarm(store, limit)
        assert len(found) == len(expected)
        assert {(a.namespace, a.scope): (a.generation, a.alarm_due) for a in found} == expected

    # An armed switch stored whole again (a slow beat) stays; one fired or disarmed leaves.
    beaten = switches[0].model_copy(update={"beats": 2, "version": 2})
    store.commit([store.save_switch(beaten, 1)])
    disarmed = switches[1].model_copy(update={"state": "disarmed", "version": 2})
    store.commit([store.save_switch(disarmed, 1)])
    fired = switches[2]
    clock.advance(60)
    store.fire_switch(fired, death_of(fired, clock), clock.now())
    left = {(a.namespace, a.scope) for a in every_armed_alarm(store, 100)}
    assert left == set(expected) - {("acme", "job-1"), ("acme", "job-2")}
    # Armed again in a new generation, it is back.
    again = fired.model_copy(update={"generation": 2, "version": 3})
    store.commit([store.save_switch(again, 2)])
    assert ("acme", "job-2", 2) in {
        (a.namespace, a.scope, a.generation) for a in every_armed_alarm(store, 100)
    }


def test_the_backfill_puts_armed_switches_stored_before_the_sweep_index_in_their_shard(
    dynamo_store: DynamoStore, clock: ManualClock
) -> None:
    client, table = dynamo_store.client, dynamo_store.table
    armed, disarmed = switch(clock, scope="armed"), switch(clock, scope="disarmed")
    for s in (armed, disarmed):
        dynamo_store.commit([dynamo_store.save_switch(s, None)])
    off = disarmed.model_copy(update={"state": "disarmed", "version": 2})
    dynamo_store.commit([dynamo_store.save_switch(off, 1)])
    key = {"pk": {"S": "NS#acme#SW#armed"}, "sk": {"S": "SWITCH"}}
    client.update_item(TableName=table, Key=key, UpdateExpression="REMOVE sweep")
    assert every_armed_alarm(dynamo_store, 100) == []

    assert backfill_indexes(client, table) == (0, 0, 1, 0, 0, 0)
    assert [a.scope for a in every_armed_alarm(dynamo_store, 100)] == ["armed"]
    assert backfill_indexes(client, table) == (0, 0, 0, 0, 0, 0)


def test_pauses_are_kept_one_per_prefix_in_prefix_order(store: Store, clock: ManualClock) -> None:
    prefixes = ["job#", "b", "jobs-ü", "job"]
    made = {prefix: pause_of(clock, prefix) for prefix in prefixes}
    for pause in made.values():
        store.commit([store.save_pause(pause, None)])
    store.commit([store.save_pause(pause_of(clock, "job#", namespace="globex"), None)])
    assert store.pauses("acme") == [made[prefix] for prefix in sorted(prefixes)]
    assert [p.namespace for p in store.pauses("globex")] == ["globex"]
    assert store.pauses("initech") == []
    with pytest.raises(ConditionFailed):  # one pause per prefix
        store.commit([store.save_pause(pause_of(clock, "job#"), None)])

    resumed = made["job#"].resumed("per_bbbbbbbbbbbbbbbb", to_ms(clock.advance(60)))
    store.commit([store.save_pause(resumed, 1)])
    with pytest.raises(ConditionFailed):  # on the version it was read at
        store.commit([store.save_pause(resumed.changed(), 1)])
    assert store.pauses("acme")[2] == resumed
    # An ended pause's place takes a new one, going on from its version.
    again = Pause.begun(
        resumed, "acme", "job#", "per_aaaaaaaaaaaaaaaa", to_ms(clock.now()), None, True, None
    )
    store.commit([store.save_pause(again, resumed.version)])
    assert store.pauses("acme")[2] == again
    assert again.version == 3


def test_a_grace_is_granted_once_and_never_over_a_beat(store: Store, clock: ManualClock) -> None:
    s = switch(clock, window=30)
    store.commit([store.save_switch(s, None)])
    clock.advance(40)  # past its deadline, held by a pause meanwhile
    graced = s.graced(s.deadline + timedelta(seconds=300))
    assert store.grant_grace(graced, missed=s.deadline, previous_due=s.alarm_due) is True
    assert store.grant_grace(graced, missed=s.deadline, previous_due=s.alarm_due) is False
    stored = store.get_switch("acme", "job#1")
    assert stored is not None
    assert (stored.deadline, stored.alarm_due, stored.version) == (
        graced.deadline,
        graced.alarm_due,
        2,
    )
    assert (stored.last_beat_at, stored.beats) == (s.last_beat_at, s.beats)  # no beat

    other = switch(clock, scope="job#2", window=30)
    store.commit([store.save_switch(other, None)])
    beaten = store.beat_switch(
        "acme",
        "job#2",
        other.holder,
        Beat(
            at=to_ms(clock.advance(1)),
            expect_within_seconds=30,
            on_expiry=other.on_expiry,
            notify_address=None,
            agent_id=None,
        ),
    )
    assert beaten is not None
    # A beat moved the deadline since it was read: the grace is not written over it.
    late = other.graced(other.deadline + timedelta(seconds=300))
    assert store.grant_grace(late, missed=other.deadline, previous_due=other.alarm_due) is False
    assert store.get_switch("acme", "job#2") == beaten


def test_a_switchs_dependants_are_listed_in_scope_order_and_counted_past_the_page(
    store: Store,
) -> None:
    store.commit([store.add_dependant("acme", "host", f"job-{n:02d}") for n in range(7)])
    store.commit([store.add_dependant("acme", "host", "job-03")])  # again: still one
    store.commit([store.add_dependant("acme", "other-host", "job-99")])
    assert store.dependants("acme", "host", 3) == (["job-00", "job-01", "job-02"], 7)
    assert store.dependants("acme", "host", 50) == ([f"job-{n:02d}" for n in range(7)], 7)
    store.commit([store.remove_dependant("acme", "host", "job-00")])
    store.commit([store.remove_dependant("acme", "host", "job-00")])  # gone already: nothing
    assert store.dependants("acme", "host", 2) == (["job-01", "job-02"], 6)
    assert store.dependants("other", "host", 2) == ([], 0)


def test_a_dependency_check_fails_once_the_chain_changed(store: Store, clock: ManualClock) -> None:
    """Checks go with the change they guard (here, a dependant's row), never alone."""
    parent = switch(clock, scope="host")
    store.commit([store.save_switch(parent, None)])
    check = store.depends_on_is("acme", "host", parent)
    nothing = store.depends_on_is("acme", "absent", None)
    store.commit([check, nothing, store.add_dependant("acme", "host", "job")])  # as read: holds
    store.commit([store.save_switch(parent.changed(depends_on="rack-1"), parent.version)])
    with pytest.raises(ConditionFailed):
        store.commit([check, store.add_dependant("acme", "host", "job-2")])
    store.commit([store.save_switch(switch(clock, scope="absent"), None)])
    with pytest.raises(ConditionFailed):
        store.commit([nothing, store.add_dependant("acme", "absent", "job-3")])
    assert store.dependants("acme", "host", 5) == (["job"], 1)
    assert store.dependants("acme", "absent", 5) == ([], 0)
