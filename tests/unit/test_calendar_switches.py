"""Switches on a calendar: a beat is due at each slot of cron or OnCalendar text in a time zone,
within a grace, and the first slot missed fires the switch at its due time, also across the
clock changes of that zone. A run's start and finish beats: a run that does not finish in time
dies, and one that finishes before its floor is told. Played on a moved clock, on the
in-memory store and on DynamoDB (moto), against a receiver of the namespace's webhook."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.liveness_support import World
from vigil.clock import ManualClock
from vigil.errors import ErrorCode, VigilError
from vigil.store import Store
from vigil.switches.records import Switch

HOOK = "https://receiver.example.com/hooks/vigil"
SCOPE = "nightly-backup"
BERLIN = "Europe/Berlin"
GRACE = 900


@pytest.fixture
def world(store: Store, clock: ManualClock) -> World:
    found = World(clock, store)
    found.call("create_channel", name="ops", url=HOOK, rules=[{"events": ["switch.fired"]}])
    return found


@pytest.fixture
def agent(world: World) -> str:
    _, secret = world.tenant.register(name="backup-job")
    return secret


def at(world: World, moment: datetime) -> None:
    """Moves the clock to ``moment`` (later than now) at once: no alarm is due before it."""
    world.clock.advance((moment - world.clock.now()).total_seconds())  # type: ignore[attr-defined]


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def moment(text: str) -> datetime:
    return datetime.fromisoformat(text)


def beat(world: World, secret: str, **terms: Any) -> dict[str, Any]:
    terms.setdefault("expect_within_seconds", GRACE)
    return world.call("heartbeat", secret, scope=SCOPE, **terms)


def nightly(world: World, secret: str, schedule: str = "30 2 * * *") -> dict[str, Any]:
    return beat(world, secret, schedule=schedule, time_zone=BERLIN)


def told(world: World) -> list[dict[str, Any]]:
    """What the webhook channel was sent, once the deliveries due have run."""
    world.run_alarms()
    return [json.loads(body) for url, body in world.posted if url == HOOK]


def switch(world: World) -> Switch:
    found = world.store.get_switch("acme", SCOPE)
    assert found is not None
    return found


def fires_at(world: World, due: datetime) -> dict[str, Any]:
    """Checks that the switch holds until a second before ``due`` and fires within two seconds
    of it (the lateness goal's p99); returns the switch.fired event."""
    at(world, due - timedelta(seconds=1))
    world.run_alarms()
    assert switch(world).state == "armed"
    world.advance(2)
    assert switch(world).state == "fired"
    [fired] = [event for event in told(world) if event["type"] == "switch.fired"][-1:]
    assert moment(fired["data"]["deadline"]) == due
    assert 0 <= fired["data"]["lateness_seconds"] <= 2
    return fired


# -- when a calendar switch is due ------------------------------------------------------------
def test_each_beat_is_due_at_its_next_slot_plus_the_grace(world: World, agent: str) -> None:
    at(world, utc("2026-03-25T12:00:00"))
    armed = nightly(world, agent)
    # 02:30 CET is 01:30 UTC; due 15 min later.
    assert moment(armed["deadline"]) == utc("2026-03-26T01:45:00")
    # The job runs at 02:31 Berlin time and beats: due at the next night's slot.
    at(world, utc("2026-03-26T01:31:00"))
    assert moment(nightly(world, agent)["deadline"]) == utc("2026-03-27T01:45:00")
    # The alarm armed for the first slot finds the deadline moved and goes on to the next.
    world.advance(15 * 60)
    assert switch(world).state == "armed"
    assert switch(world).alarm_due == utc("2026-03-27T01:45:00")
    listed = world.call("list_switches")["switches"][0]
    assert listed["schedule"] == "cron 30 2 * * * in Europe/Berlin, within 15 min"


def test_the_first_slot_missed_fires_across_the_spring_change(world: World, agent: str) -> None:
    # Sunday 2026-03-29 has no 02:30 in Berlin: cron runs a fixed-time job right after the gap,
    # at 03:00 CEST (01:00 UTC), and the switch expects its beat then.
    at(world, utc("2026-03-28T01:31:00"))
    assert moment(nightly(world, agent)["deadline"]) == utc("2026-03-29T01:15:00")
    fires_at(world, utc("2026-03-29T01:15:00"))


def test_the_first_slot_missed_fires_across_the_autumn_change(world: World, agent: str) -> None:
    # Sunday 2026-10-25 has 02:30 twice in Berlin: cron runs a fixed-time job the first time,
    # 02:30 CEST (00:30 UTC), not an hour later.
    at(world, utc("2026-10-24T00:31:00"))
    assert moment(nightly(world, agent)["deadline"]) == utc("2026-10-25T00:45:00")
    fires_at(world, utc("2026-10-25T00:45:00"))


def test_an_hourly_calendar_keeps_real_time_through_the_autumn_hour(
    world: World, agent: str
) -> None:
    # Hourly in Berlin on 2026-10-25: 02:00 CEST (00:00 UTC), then 02:00 CET (01:00 UTC).
    at(world, utc("2026-10-24T23:10:00"))
    assert moment(nightly(world, agent, "0 * * * *")["deadline"]) == utc("2026-10-25T00:15:00")
    at(world, utc("2026-10-25T00:05:00"))
    assert moment(nightly(world, agent, "0 * * * *")["deadline"]) == utc("2026-10-25T01:15:00")
    fires_at(world, utc("2026-10-25T01:15:00"))


def test_an_oncalendar_weekday_calendar_skips_the_weekend(world: World, agent: str) -> None:
    # Friday 2026-10-23 02:05 CEST: the next weekday slot is Monday 02:00 CET (01:00 UTC).
    at(world, utc("2026-10-23T00:05:00"))
    assert moment(nightly(world, agent, "Mon..Fri 02:00")["deadline"]) == utc("2026-10-26T01:15:00")
    listed = world.call("list_switches")["switches"][0]
    assert listed["schedule"] == "OnCalendar Mon..Fri 02:00 in Europe/Berlin, within 15 min"


def test_a_beat_without_a_schedule_makes_it_a_window_switch_again(world: World, agent: str) -> None:
    at(world, utc("2026-03-25T12:00:00"))
    nightly(world, agent)
    assert moment(beat(world, agent, expect_within_seconds=60)["deadline"]) == utc(
        "2026-03-25T12:01:00"
    )
    assert switch(world).calendar is None
    assert world.call("list_switches")["switches"][0]["schedule"] is None


def test_a_pause_over_a_slot_excuses_it_and_the_next_slot_is_expected(
    world: World, agent: str
) -> None:
    at(world, utc("2026-03-25T12:00:00"))
    nightly(world, agent)
    # Maintenance from 01:00 to 03:00 UTC: the 01:30 slot falls in it, its grace ends in it.
    at(world, utc("2026-03-26T01:00:00"))
    world.call("pause_switches", scope_prefix="nightly-", until="2026-03-26T03:00:00Z")
    world.advance(1)
    at(world, utc("2026-03-26T03:00:01"))
    world.run_alarms()
    assert switch(world).state == "armed"
    assert switch(world).deadline == utc("2026-03-27T01:45:00")


def test_a_beat_a_moment_before_its_slot_is_that_slots_beat(world: World, agent: str) -> None:
    # The job's clock runs ahead: cron starts it at 02:30 its time, 01:29:58 UTC.
    at(world, utc("2026-03-25T12:00:00"))
    nightly(world, agent)
    at(world, utc("2026-03-26T01:29:58"))
    assert moment(nightly(world, agent)["deadline"]) == utc("2026-03-27T01:45:00")


def test_a_pause_excuses_the_slots_before_its_end_even_if_their_grace_runs_on(
    world: World, agent: str
) -> None:
    at(world, utc("2026-03-25T12:00:00"))
    nightly(world, agent)
    # Maintenance from 01:00 to 01:40 UTC: the 01:30 slot's grace would run to 01:45.
    at(world, utc("2026-03-26T01:00:00"))
    world.call("pause_switches", scope_prefix="nightly-", until="2026-03-26T01:40:00Z")
    at(world, utc("2026-03-26T01:46:00"))
    world.run_alarms()
    assert switch(world).state == "armed"
    assert switch(world).deadline == utc("2026-03-27T01:45:00")


def test_a_pause_after_the_slot_gives_its_grace_from_the_pauses_end(
    world: World, agent: str
) -> None:
    at(world, utc("2026-03-25T12:00:00"))
    nightly(world, agent)
    # The job should have run at 01:30, before the pause began: it is not excused, but held
    # past its deadline it gets its grace again from the pause's end.
    at(world, utc("2026-03-26T01:35:00"))
    world.call("pause_switches", scope_prefix="nightly-", until="2026-03-26T02:00:00Z")
    at(world, utc("2026-03-26T01:50:00"))
    world.run_alarms()
    assert switch(world).state == "armed"
    fires_at(world, utc("2026-03-26T02:15:00"))


# -- bad calendars ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("terms", "field", "words"),
    [
        ({"schedule": "61 2 * * *"}, "schedule", "minute"),
        ({"schedule": "30 2 * * *", "time_zone": "Europe/Berln"}, "time_zone", "unknown"),
        ({"schedule": "* * * * * *"}, "schedule", "OnCalendar"),
        ({"schedule": "30 2 * * *", "expect_within_seconds": 30}, "expect_within", "grace"),
        ({"time_zone": BERLIN}, "time_zone", "schedule"),
        ({"schedule": "30 2 * * *", "time_zone": ""}, "time_zone", "unknown"),
        ({"schedule": "2026-03-20 02:00"}, "schedule", "disarm"),
        ({"min_run_seconds": 60}, "min_run_seconds", "phase start"),
        ({"phase": "start", "schedule": "30 2 * * *"}, "schedule", "finishes"),
        ({"phase": "start", "min_run_seconds": GRACE}, "min_run_seconds", "less than"),
    ],
)
def test_a_calendar_that_cannot_be_used_is_refused_and_changes_nothing(
    world: World, agent: str, terms: dict[str, Any], field: str, words: str
) -> None:
    at(world, utc("2026-03-25T12:00:00"))
    beat(world, agent, expect_within_seconds=600)
    before = switch(world)
    with pytest.raises(VigilError) as caught:
        beat(world, agent, **terms)
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT
    said = json.dumps(caught.value.to_dict())
    assert words in said, said
    assert field.split("_")[0] in said, said
    assert switch(world) == before


# -- runs ---------------------------------------------------------------------------------
def test_a_run_that_does_not_finish_in_time_dies_saying_when_it_began(
    world: World, agent: str
) -> None:
    at(world, utc("2026-03-25T12:00:00"))
    nightly(world, agent)
    at(world, utc("2026-03-26T01:30:05"))
    started = beat(world, agent, phase="start", expect_within_seconds=3600)
    assert moment(started["deadline"]) == utc("2026-03-26T02:30:05")
    fired = fires_at(world, utc("2026-03-26T02:30:05"))
    assert moment(fired["data"]["run_started_at"]) == utc("2026-03-26T01:30:05")
    death = world.call("list_deaths")["deaths"][0]
    assert moment(death["run_started_at"]) == utc("2026-03-26T01:30:05")


def test_a_run_finished_within_its_window_waits_for_the_next_slot(world: World, agent: str) -> None:
    at(world, utc("2026-03-25T12:00:00"))
    nightly(world, agent)
    at(world, utc("2026-03-26T01:30:05"))
    beat(world, agent, phase="start", expect_within_seconds=3600, min_run_seconds=60)
    assert switch(world).run_started_at == utc("2026-03-26T01:30:05")
    assert switch(world).calendar is not None  # a start beat keeps the calendar
    at(world, utc("2026-03-26T01:50:00"))
    finished = beat(world, agent, phase="finish", schedule="30 2 * * *", time_zone=BERLIN)
    assert moment(finished["deadline"]) == utc("2026-03-27T01:45:00")
    assert switch(world).run_started_at is None
    assert switch(world).short_before is None
    assert [event["type"] for event in told(world)] == []


def test_a_run_that_finishes_before_its_floor_is_told_once(world: World, agent: str) -> None:
    at(world, utc("2026-03-25T12:00:00"))
    nightly(world, agent)
    at(world, utc("2026-03-26T01:30:05"))
    beat(world, agent, phase="start", expect_within_seconds=3600, min_run_seconds=600)
    at(world, utc("2026-03-26T01:30:35"))
    finished = beat(world, agent, phase="finish", schedule="30 2 * * *", time_zone=BERLIN)
    assert finished["state"] == "armed"
    assert moment(finished["deadline"]) == utc("2026-03-27T01:45:00")
    [short] = told(world)
    assert short["type"] == "switch.ran_short"
    assert short["data"]["run_seconds"] == 30
    assert short["data"]["min_run_seconds"] == 600
    assert moment(short["data"]["started_at"]) == utc("2026-03-26T01:30:05")
    # Finished again (a retried call): the run is over, nothing more is told.
    beat(world, agent, phase="finish", schedule="30 2 * * *", time_zone=BERLIN)
    assert len(told(world)) == 1


def test_a_start_again_with_no_beat_since_is_a_retry_and_keeps_the_runs_start(
    world: World, agent: str
) -> None:
    at(world, utc("2026-03-26T01:30:05"))
    start = {"phase": "start", "expect_within_seconds": 3600, "min_run_seconds": 600}
    beat(world, agent, **start)
    world.advance(20)
    beat(world, agent, **start)  # its answer was lost: the same call again
    assert switch(world).run_started_at == utc("2026-03-26T01:30:05")
    at(world, utc("2026-03-26T01:40:15"))  # 610 s after the first start
    beat(world, agent, phase="finish", schedule="30 2 * * *", time_zone=BERLIN)
    assert told(world) == []


def test_a_start_after_a_beat_in_the_run_begins_a_new_run(world: World, agent: str) -> None:
    at(world, utc("2026-03-26T01:30:05"))
    beat(world, agent, phase="start", expect_within_seconds=3600)
    world.advance(20)
    beat(world, agent, expect_within_seconds=3600)  # a beat within the run
    world.advance(20)
    beat(world, agent, phase="start", expect_within_seconds=3600)
    assert switch(world).run_started_at == utc("2026-03-26T01:30:45")


def test_a_start_that_arms_the_switch_again_keeps_its_calendar(world: World, agent: str) -> None:
    at(world, utc("2026-03-25T12:00:00"))
    nightly(world, agent)
    fires_at(world, utc("2026-03-26T01:45:00"))
    beat(world, agent, phase="start", expect_within_seconds=3600)
    assert switch(world).calendar is not None
    assert world.call("list_switches")["switches"][0]["schedule"] is not None
