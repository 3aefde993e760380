"""The dead-man switch at the service layer: beats, expiry, alarms, deaths, resume packets."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import Any

import pytest

from tests.liveness_support import World
from vigil.clock import ManualClock, parse_iso
from vigil.errors import ErrorCode, VigilError
from vigil.kit.limits import dynamo_item_bytes
from vigil.stores.dynamo import DynamoStore
from vigil.stores.memory import MemoryStore


def beat(
    world: World, secret: str, scope: str = "job-1", window: int = 30, **more: Any
) -> dict[str, Any]:
    return world.call("heartbeat", secret, scope=scope, expect_within_seconds=window, **more)


def full_switch(
    world: World, agent: tuple[str, str], watcher: tuple[str, str], window: int = 3
) -> dict[str, Any]:
    return beat(
        world,
        agent[1],
        window=window,
        on_expiry=["queue_alert", "release_leases", "mark_failed"],
        notify_address=f"agent:{watcher[0]}",
        agent_id="worker-3",
    )


def alerts(world: World, watcher: tuple[str, str]) -> list[dict[str, Any]]:
    found = []
    while True:
        page = world.call("inbox_poll", watcher[1], max_messages=10)["deliveries"]
        if not page:
            return found
        for delivery in page:
            found.append(delivery)
            world.call(
                "acknowledge", watcher[1], id=delivery["id"], generation=delivery["generation"]
            )


def test_first_beat_arms_one_alarm_and_steady_beats_arm_none(
    world: World, agent: tuple[str, str]
) -> None:
    first = beat(world, agent[1])
    assert (first["state"], first["generation"], first["beats"]) == ("armed", 1, 1)
    assert len(world.alarms.armed) == 1
    for _ in range(5):
        world.clock.advance(10)
        result = beat(world, agent[1])
    assert result["beats"] == 6
    assert parse_iso(result["deadline"]) == world.clock.now() + timedelta(seconds=30)
    assert len(world.alarms.armed) == 1  # beats never touch the alarm


def test_beaten_in_time_it_never_fires_and_alarms_rearm_once_per_window(
    world: World, agent: tuple[str, str]
) -> None:
    beat(world, agent[1], window=30)
    for _ in range(12):  # 120 s of beats every 10 s
        world.advance(10)
        beat(world, agent[1], window=30)
    assert world.store.latest_death("acme", "job-1") is None
    # One alarm in flight at any time: the one for the newest deadline.
    assert len(world.alarms.armed) == 1
    # The alarm ran about once per window (re-arming for the moved deadline), not once per beat.
    assert 1 <= len(world.delivered) <= 120 // 30 + 1


def test_an_unbeaten_switch_fires_once_with_all_actions_in_order(
    world: World, agent: tuple[str, str], watcher: tuple[str, str]
) -> None:
    lease = world.call(
        "acquire_lease", agent[1], resource="repo:main", scope="job-1", ttl_seconds=600
    )["lease"]
    world.call("acquire_lease", agent[1], resource="unscoped", ttl_seconds=600)
    full_switch(world, agent, watcher, window=3)
    world.advance(2)
    assert world.store.latest_death("acme", "job-1") is None
    world.advance(2)
    death = world.store.latest_death("acme", "job-1")
    assert death is not None
    assert death.actions == ["release_leases", "mark_failed", "queue_alert"]
    # mark_failed is recorded by the firing's own write, the others as they run.
    assert list(death.done) == ["mark_failed", "release_leases", "queue_alert", "notify"]
    assert 0 <= death.lateness_seconds <= 1

    released = world.store.get_lease("acme", "repo:main")
    assert released is not None
    assert released.state == "released"
    assert released.generation == lease["generation"]

    packet = world.call("resume_packet", scope="job-1")
    assert packet["state"] == "failed"
    assert packet["death"]["released"] == [
        {"resource": "repo:main", "generation": lease["generation"]}
    ]
    assert packet["death"]["released_count"] == 1
    assert packet["death"]["released_pages"] == 1
    assert packet["released_leases"] == packet["death"]["released"]
    assert packet["death"]["blind_spot"]["unscoped_leases_held"] == 1
    assert packet["held_leases"] == []

    (alert,) = alerts(world, watcher)
    payload = alert["payload"]
    assert alert["sender"] == "vigil"
    assert (payload["scope"], payload["agent_id"]) == ("job-1", "worker-3")
    assert payload["released_count"] == 1
    assert payload["released_first"] == [
        {"resource": "repo:main", "generation": lease["generation"]}
    ]
    assert payload["lateness_seconds"] == death.lateness_seconds


def test_the_same_alarm_delivered_five_times_runs_the_actions_once(
    world: World, agent: tuple[str, str], watcher: tuple[str, str]
) -> None:
    full_switch(world, agent, watcher, window=3)
    world.clock.advance(3)
    (timer,) = world.due_alarms()
    for _ in range(5):
        world.deliver(timer)
    death = world.store.latest_death("acme", "job-1")
    assert death is not None
    assert death.generation == 1
    assert len(alerts(world, watcher)) == 1


def test_a_late_beat_learns_of_its_death_and_arms_a_new_generation(
    world: World, agent: tuple[str, str], watcher: tuple[str, str]
) -> None:
    full_switch(world, agent, watcher, window=3)
    world.advance(5)
    result = full_switch(world, agent, watcher, window=3)
    assert result["state"] == "armed"
    assert result["generation"] == 2
    assert result["death"]["generation"] == 1
    assert result["death"]["marked_failed"] is True
    # The death stays on record for a successor.
    assert world.call("resume_packet", scope="job-1")["death"]["generation"] == 1
    # The watcher was told of the death, then (by the death's alarm, after the beat's commit)
    # of its end: two seconds down, by this beat.
    world.run_alarms()
    fired, recovered = (delivery["payload"] for delivery in alerts(world, watcher))
    assert fired["event"] == "switch_fired"
    assert recovered["event"] == "switch_recovered"
    assert recovered["generation"] == 1
    assert recovered["downtime_seconds"] == 2
    assert recovered["recovered_by"] == agent[0]


def test_a_beat_after_the_deadline_but_before_the_alarm_records_the_death_itself(
    world: World, agent: tuple[str, str], watcher: tuple[str, str]
) -> None:
    full_switch(world, agent, watcher, window=3)
    world.clock.advance(4)  # no alarm delivered yet
    result = full_switch(world, agent, watcher, window=3)
    assert result["death"]["generation"] == 1
    assert result["death"]["completed"] == ["release_leases", "mark_failed", "queue_alert"]
    world.run_alarms()  # the old alarm arrives late: nothing more happens
    told = [delivery["payload"]["event"] for delivery in alerts(world, watcher)]
    assert told == ["switch_fired", "switch_recovered"]
    assert world.store.get_switch("acme", "job-1").generation == 2  # type: ignore[union-attr]


def test_disarm_stops_the_switch(world: World, agent: tuple[str, str]) -> None:
    beat(world, agent[1], window=3)
    result = beat(world, agent[1], window=3, disarm=True)
    assert result["state"] == "disarmed"
    world.advance(10)
    assert world.store.latest_death("acme", "job-1") is None
    assert world.call("resume_packet", scope="job-1")["state"] == "disarmed"


def test_another_principal_cannot_beat_or_disarm_an_armed_switch(
    world: World, agent: tuple[str, str], watcher: tuple[str, str]
) -> None:
    beat(world, agent[1])
    for extra in ({}, {"disarm": True}):
        with pytest.raises(VigilError) as refused:
            beat(world, watcher[1], **extra)
        assert refused.value.code is ErrorCode.FORBIDDEN
    # An operator may disarm it.
    assert beat(world, world.tenant.operator_secret, disarm=True)["state"] == "disarmed"


@pytest.mark.parametrize(
    "arguments",
    [
        {"scope": "s", "expect_within_seconds": 1},
        {"scope": "s", "expect_within_seconds": 2_592_001},
        {"scope": "", "expect_within_seconds": 5},
        {"scope": "s", "expect_within_seconds": 5, "on_expiry": ["explode"]},
        {"scope": "s", "expect_within_seconds": 5, "on_expiry": ["queue_alert"]},
        {"scope": "s\u200b", "expect_within_seconds": 5},
        {"scope": "\u202es", "expect_within_seconds": 5},
        {"scope": "s", "expect_within_seconds": 5, "agent_id": "x" * 65},
        {"scope": "s", "expect_within_seconds": "5"},
        {"scope": "s", "expect_within_seconds": 5, "surprise": True},
    ],
)
def test_bad_heartbeat_input_is_a_typed_error_and_arms_nothing(
    world: World, agent: tuple[str, str], arguments: dict[str, Any]
) -> None:
    with pytest.raises(VigilError) as refused:
        world.app.call("heartbeat", arguments, agent[1], via="rest")
    assert refused.value.code is ErrorCode.INVALID_ARGUMENT
    assert world.alarms.armed == []
    assert world.store.get_switch("acme", "s") is None


def test_an_action_listed_twice_runs_once_and_a_label_is_kept_as_written(
    world: World, agent: tuple[str, str]
) -> None:
    # The seed's on_expiry is "any of" three actions and its agent_id any text of 64 at most.
    label = "worker\t3 \u202e👩‍💻"
    armed = beat(world, agent[1], on_expiry=["mark_failed", "mark_failed"], agent_id=label)
    assert (armed["on_expiry"], armed["agent_id"]) == (["mark_failed"], label)
    switch = world.store.get_switch("acme", "job-1")
    assert switch is not None
    assert (switch.on_expiry, switch.agent_id) == (["mark_failed"], label)


def test_queue_alert_needs_a_registered_address(world: World, agent: tuple[str, str]) -> None:
    with pytest.raises(VigilError) as refused:
        beat(
            world, agent[1], on_expiry=["queue_alert"], notify_address="agent:agt_aaaaaaaaaaaaaaaa"
        )
    assert refused.value.code is ErrorCode.NOT_FOUND
    assert world.store.get_switch("acme", "job-1") is None


def test_agent_key_authenticates_when_no_header_is_sent(
    world: World, agent: tuple[str, str]
) -> None:
    result = world.app.call(
        "heartbeat",
        {"scope": "k", "expect_within_seconds": 5, "agent_key": agent[1]},
        None,
        via="rest",
    )
    assert result["state"] == "armed"
    with pytest.raises(VigilError) as refused:
        world.app.call(
            "heartbeat",
            {"scope": "k", "expect_within_seconds": 5, "agent_key": agent[1]},
            world.tenant.operator_secret,
            via="rest",
        )
    assert refused.value.code is ErrorCode.UNAUTHENTICATED


def test_scopes_are_per_namespace(world: World, agent: tuple[str, str]) -> None:
    from tests.support import Tenant

    other = Tenant(world.app, world.clock, "globex")
    beat(world, agent[1])
    with pytest.raises(VigilError) as hidden:
        world.call("resume_packet", other.operator_secret, scope="job-1")
    assert hidden.value.code is ErrorCode.NOT_FOUND
    assert beat(world, other.operator_secret)["generation"] == 1  # its own switch


def test_the_first_beats_after_a_death_repeat_it_in_case_an_answer_was_lost(
    world: World, agent: tuple[str, str], watcher: tuple[str, str]
) -> None:
    full_switch(world, agent, watcher, window=30)
    world.advance(31)
    reports = []
    for _ in range(4):
        reports.append(full_switch(world, agent, watcher, window=30)["death"])
        world.clock.advance(1)
    assert [r["generation"] if r else None for r in reports] == [1, 1, 1, None]
    assert world.call("resume_packet", scope="job-1")["death"]["generation"] == 1


@pytest.mark.parametrize("backend", ["memory", "dynamo"])
def test_a_switch_keeps_the_last_beat_of_each_half_hour_of_its_day(
    clock: ManualClock, backend: str, request: pytest.FixtureRequest
) -> None:
    store = MemoryStore() if backend == "memory" else request.getfixturevalue("dynamo_store")
    world = World(clock, store)
    _, secret = world.tenant.register(name="worker")
    window = 7200
    start = clock.now()
    beat(world, secret, window=window)
    beaten = [start]
    # Twenty hours of beats every 20 minutes, then a gap of three hours, then six more hours
    # (another generation after a disarm, whose beats the picture keeps too).
    for _ in range(60):
        world.advance(1200)
        beat(world, secret, window=window)
        beaten.append(clock.now())
    beat(world, secret, window=window, disarm=True)
    world.advance(3 * 3600)
    for _ in range(18):
        world.advance(1200)
        beat(world, secret, window=window)
        beaten.append(clock.now())
    packet = world.call("resume_packet", secret, scope="job-1")
    # The day is this half hour and the 47 before it; each keeps its latest beat.
    this_half_hour = int(clock.now().timestamp()) // 1800
    latest: dict[int, datetime] = {}
    for at in beaten:
        if int(at.timestamp()) // 1800 > this_half_hour - 48:
            latest[int(at.timestamp()) // 1800] = at
    expected = [at.replace(second=0, microsecond=0) for at in sorted(latest.values())]
    assert [parse_iso(at) for at in packet["recent_beats"]] == expected
    # 30 half hours of the first generation, 5 without a beat, 13 of the second.
    assert len(expected) == 43


def test_a_switch_stored_before_it_kept_beats_takes_one_slow_beat(
    clock: ManualClock, dynamo_store: DynamoStore
) -> None:
    world = World(clock, dynamo_store)
    _, secret = world.tenant.register(name="worker")
    beat(world, secret)
    client, table = dynamo_store.client, dynamo_store.table
    key = {"pk": {"S": "NS#acme#SW#job-1"}, "sk": {"S": "SWITCH"}}
    stored = client.get_item(TableName=table, Key=key)["Item"]
    assert "recent" in stored
    client.update_item(TableName=table, Key=key, UpdateExpression="REMOVE recent")
    world.advance(10)
    assert beat(world, secret)["beats"] == 2
    world.advance(10)
    assert beat(world, secret)["beats"] == 3
    packet = world.call("resume_packet", secret, scope="job-1")
    assert len(packet["recent_beats"]) == 1


def test_a_switch_with_a_full_day_of_beats_is_still_one_write_unit(
    clock: ManualClock, dynamo_store: DynamoStore
) -> None:
    """The steady beat's one write unit holds for a switch with every half hour of its day
    beaten, a 64-character scope and a notify address."""
    world = World(clock, dynamo_store)
    agent, secret = world.tenant.register(name="worker")
    scope = "s" * 64
    for _ in range(48):
        beat(world, secret, scope=scope, window=3600, notify_address=f"agent:{agent}")
        world.advance(1800)
    key = {"pk": {"S": f"NS#acme#SW#{scope}"}, "sk": {"S": "SWITCH"}}
    item = dynamo_store.client.get_item(TableName=dynamo_store.table, Key=key)["Item"]
    assert len(item["recent"]["M"]) == 48
    assert dynamo_item_bytes(item) <= 1024


def test_a_death_with_nothing_to_do_but_tell_is_told_in_the_firings_own_write(
    world: World, agent: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    world.call("heartbeat", agent[1], scope="quiet", expect_within_seconds=10)
    commits: list[int] = []
    commit = world.store.commit

    def counted(writes: Any, completion: Any = None) -> None:
        commits.append(len(writes))
        commit(writes, completion)

    monkeypatch.setattr(world.store, "commit", counted)
    world.clock.advance(11)
    assert world.run_alarms() == 1
    death = world.store.latest_death("acme", "quiet")
    assert death is not None
    assert list(death.done) == ["mark_failed", "notify"]
    # One commit: the switch fired, its death recorded and its event written together.
    assert len(commits) == 1
    assert world.store.get_notification("acme", death.done["notify"]["event_id"]) is not None


@pytest.mark.parametrize("backend", ["memory", "dynamo"])
def test_a_beat_that_names_no_terms_keeps_the_switchs_and_says_them(
    clock: ManualClock, backend: str, request: pytest.FixtureRequest
) -> None:
    """An agent that gives its on_expiry, notify_address and label once keeps its alert: a
    beat naming none of them, on the fast path and on the slow one (a shorter window), keeps
    the switch's and answers with them; a switch armed anew takes the defaults."""
    store = MemoryStore() if backend == "memory" else request.getfixturevalue("dynamo_store")
    world = World(clock, store)
    agent = world.tenant.register(name="worker")
    watcher = world.tenant.register(name="supervisor")
    terms = {
        "on_expiry": ["release_leases", "mark_failed", "queue_alert"],
        "notify_address": f"agent:{watcher[0]}",
        "agent_id": "worker-3",
    }
    first = full_switch(world, agent, watcher, window=30)
    assert {name: first[name] for name in terms} == terms
    for window in (30, 30, 10):  # the last one shortens the window: the slow path
        world.advance(5)
        kept = beat(world, agent[1], window=window)
        assert {name: kept[name] for name in terms} == terms, window
    assert kept["beats"] == 4
    # Changing one term keeps the others.
    world.advance(5)
    changed = beat(world, agent[1], window=10, agent_id="worker-4")
    assert {name: changed[name] for name in terms} == {**terms, "agent_id": "worker-4"}
    world.advance(11)
    world.run_alarms()
    (alert,) = alerts(world, watcher)
    assert (alert["payload"]["agent_id"], alert["payload"]["scope"]) == ("worker-4", "job-1")
    # Armed anew after its death, by a beat naming nothing: the defaults, said.
    again = beat(world, agent[1])
    assert again["generation"] == 2
    assert (again["on_expiry"], again["notify_address"], again["agent_id"]) == (
        ["mark_failed"],
        None,
        None,
    )


def test_a_beat_refused_after_reading_the_death_sends_no_recovery_envelope(
    world: World, agent: tuple[str, str], watcher: tuple[str, str]
) -> None:
    """The recovery envelope leaves only once the recovery is committed: a beat refused by the
    armed-switch quota sends none, and the death stays unended."""
    full_switch(world, agent, watcher, window=3)
    world.advance(5)
    world.app.quotas = dataclasses.replace(world.app.quotas, armed_switches=0)
    with pytest.raises(VigilError):
        full_switch(world, agent, watcher, window=3)
    world.run_alarms()
    told = [delivery["payload"]["event"] for delivery in alerts(world, watcher)]
    assert told == ["switch_fired"]
    death = world.store.get_death("acme", "job-1", 1)
    assert death is not None
    assert death.recovered_at is None
