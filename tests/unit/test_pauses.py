"""Pausing dead-man switches for maintenance: pause_switches, resume_switches and list_pauses
over the whole call path on the in-memory store, with the alarms driven by a moved clock."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from tests.liveness_support import World
from tests.support import Tenant, error_of
from vigil.clock import ManualClock, iso, parse_iso, to_ms
from vigil.errors import ErrorCode
from vigil.store import Store
from vigil.switches.records import MAX_PAUSES

ALL_ACTIONS = ["release_leases", "mark_failed", "queue_alert"]


def beat(
    world: World, secret: str, scope: str = "job-1", window: int = 3, **more: Any
) -> dict[str, Any]:
    return world.call("heartbeat", secret, scope=scope, expect_within_seconds=window, **more)


def arm_fully(
    world: World, agent: tuple[str, str], watcher: tuple[str, str], scope: str = "job-1"
) -> None:
    """A switch with every action, over a lease of its scope."""
    world.call("acquire_lease", agent[1], resource=f"repo:{scope}", scope=scope, ttl_seconds=3600)
    beat(
        world,
        agent[1],
        scope,
        on_expiry=ALL_ACTIONS,
        notify_address=f"agent:{watcher[0]}",
    )


def in_seconds(world: World, seconds: float) -> str:
    return iso(world.clock.now() + timedelta(seconds=seconds))


def pause(world: World, prefix: str = "job-", **more: Any) -> dict[str, Any]:
    return world.call("pause_switches", scope_prefix=prefix, **more)


def alerts(world: World, watcher: tuple[str, str]) -> list[dict[str, Any]]:
    return world.call("inbox_poll", watcher[1], max_messages=10)["deliveries"]


def assert_not_fired(
    world: World, agent: tuple[str, str], watcher: tuple[str, str], scope: str = "job-1"
) -> None:
    """No death, no alert, the lease still held, the switch still armed."""
    assert world.store.latest_death("acme", scope) is None
    assert alerts(world, watcher) == []
    lease = world.store.get_lease("acme", f"repo:{scope}")
    assert lease is not None
    assert (lease.state, lease.holder) == ("held", agent[0])
    assert world.call("resume_packet", scope=scope)["state"] == "armed"


def fired_at(world: World, scope: str = "job-1") -> datetime | None:
    death = world.store.latest_death("acme", scope)
    return None if death is None else death.fired_at


# -- a pause holds the expiry ------------------------------------------------------------------
def test_a_switch_expiring_during_a_pause_is_held_and_fires_after_the_pause_and_its_window(
    world: World, agent: tuple[str, str], watcher: tuple[str, str]
) -> None:
    arm_fully(world, agent, watcher)
    until = world.clock.now() + timedelta(seconds=20)
    pause(world, until=iso(until), reason="database upgrade")
    world.advance(19)
    assert_not_fired(world, agent, watcher)
    assert len(world.alarms.armed) == 1  # held, with one alarm in flight
    world.advance(3.5)  # the pause ended 2.5 s ago: within the switch's 3 s of grace
    assert_not_fired(world, agent, watcher)
    packet = world.call("resume_packet", scope="job-1")
    assert parse_iso(packet["deadline"]) == until + timedelta(seconds=3)

    world.advance(1)
    death = world.store.latest_death("acme", "job-1")
    assert death is not None
    # The deadline it missed is its grace's, so its lateness is not the pause's length.
    assert death.deadline == until + timedelta(seconds=3)
    assert 0 <= death.lateness_seconds <= 1
    assert list(death.done) == ["mark_failed", "release_leases", "queue_alert", "notify"]
    (alert,) = alerts(world, watcher)
    assert alert["payload"]["deadline"] == iso(until + timedelta(seconds=3))
    lease = world.store.get_lease("acme", "repo:job-1")
    assert lease is not None
    assert lease.state == "released"


def test_a_switch_beaten_in_its_grace_after_the_pause_does_not_fire(
    world: World, agent: tuple[str, str], watcher: tuple[str, str]
) -> None:
    arm_fully(world, agent, watcher)
    until = world.clock.now() + timedelta(seconds=20)
    pause(world, until=iso(until))
    world.advance(22)
    result = beat(world, agent[1], on_expiry=ALL_ACTIONS, notify_address=f"agent:{watcher[0]}")
    assert (result["state"], result["generation"], result["death"]) == ("armed", 1, None)
    assert parse_iso(result["deadline"]) == world.clock.now() + timedelta(seconds=3)
    world.advance(2)
    assert_not_fired(world, agent, watcher)
    # Beaten no more, it fires at its own deadline: the grace is given once.
    world.advance(2)
    death = world.store.latest_death("acme", "job-1")
    assert death is not None
    assert death.deadline == parse_iso(result["deadline"])
    assert 0 <= death.lateness_seconds <= 1


def test_a_late_beat_while_held_keeps_the_switch_and_beats_go_on_working(
    world: World, agent: tuple[str, str], watcher: tuple[str, str]
) -> None:
    arm_fully(world, agent, watcher)
    pause(world, until=in_seconds(world, 600))
    world.advance(30)  # held for 27 s past its deadline
    late = beat(world, agent[1], on_expiry=ALL_ACTIONS, notify_address=f"agent:{watcher[0]}")
    assert (late["state"], late["generation"], late["beats"], late["death"]) == (
        "armed",
        1,
        2,
        None,
    )
    for _ in range(5):  # beaten in time during the pause, as ever
        world.advance(2)
        beat(world, agent[1], on_expiry=ALL_ACTIONS, notify_address=f"agent:{watcher[0]}")
    assert_not_fired(world, agent, watcher)


def test_a_held_switch_may_be_disarmed_by_its_holder_and_by_an_operator_only(
    world: World, agent: tuple[str, str]
) -> None:
    beat(world, agent[1], "job-1")
    beat(world, agent[1], "job-2")
    _, other = world.tenant.register(name="other")
    pause(world, until=in_seconds(world, 600))
    world.advance(10)
    assert error_of(beat, world, other, "job-1").code is ErrorCode.FORBIDDEN
    assert beat(world, agent[1], "job-1", disarm=True)["state"] == "disarmed"
    by_operator = world.call("heartbeat", scope="job-2", expect_within_seconds=3, disarm=True)
    assert by_operator["state"] == "disarmed"
    assert world.store.latest_death("acme", "job-1") is None
    assert world.store.latest_death("acme", "job-2") is None
    events = world.call("list_audit_events")["events"]
    assert (events[0]["action"], events[0]["target"]) == ("disarm", "job-2")


def test_on_dynamodb_a_held_switch_keeps_its_alarm_coming_back_until_it_fires(
    dynamo_store: Store, clock: ManualClock
) -> None:
    clock.advance(0.0004)  # between two milliseconds, as a real clock is; the table keeps ms
    world = World(clock, dynamo_store)
    _, secret = world.tenant.register(name="worker")
    beat(world, secret)
    until = to_ms(clock.now()) + timedelta(seconds=200)
    pause(world, until=iso(until))
    world.advance(199)  # held, its alarm back every minute
    assert world.store.latest_death("acme", "job-1") is None
    assert len(world.delivered) == 4  # at the deadline, then three hold checks
    world.advance(5)
    death = world.store.latest_death("acme", "job-1")
    assert death is not None
    assert death.deadline == until + timedelta(seconds=3)


# -- which switches a pause covers -------------------------------------------------------------
def test_a_prefix_covers_exactly_the_scopes_that_begin_with_it_in_its_namespace(
    world: World, clock: ManualClock, agent: tuple[str, str]
) -> None:
    globex = Tenant(world.app, clock, "globex")
    _, abroad = globex.register(name="abroad")
    for scope in ("abc", "abcd", "abc/1", "ab", "xabc", "ABC"):
        beat(world, agent[1], scope)
    globex.call("heartbeat", abroad, scope="abc", expect_within_seconds=3)
    pause(world, "abc", until=in_seconds(world, 600))
    world.advance(10)
    held = {"abc", "abcd", "abc/1"}
    for scope in ("abc", "abcd", "abc/1", "ab", "xabc", "ABC"):
        died = world.store.latest_death("acme", scope) is not None
        assert died is (scope not in held), scope
    assert world.store.latest_death("globex", "abc") is not None


def test_a_whole_scope_pauses_that_switch_and_overlapping_pauses_hold_until_the_last_ends(
    world: World, agent: tuple[str, str]
) -> None:
    beat(world, agent[1], "deploy/eu")
    beat(world, agent[1], "deploy/us")
    pause(world, "deploy/", until=in_seconds(world, 20))
    later = world.clock.now() + timedelta(seconds=60)
    pause(world, "deploy/eu", until=iso(later))
    world.advance(24)  # the first pause ended 4 s ago; its grace of 3 s is over
    assert world.store.latest_death("acme", "deploy/us") is not None
    assert world.store.latest_death("acme", "deploy/eu") is None
    world.advance(38)  # 2 s after the second pause ended: in its grace
    assert world.store.latest_death("acme", "deploy/eu") is None
    world.advance(2)
    death = world.store.latest_death("acme", "deploy/eu")
    assert death is not None
    assert death.deadline == later + timedelta(seconds=3)
    assert 0 <= death.lateness_seconds <= 1


# -- until the next beat -----------------------------------------------------------------------
def test_until_next_beat_holds_silent_switches_until_their_agents_come_back(
    world: World, agent: tuple[str, str], watcher: tuple[str, str]
) -> None:
    arm_fully(world, agent, watcher, "job-silent")
    beat(world, agent[1], "job-alive")
    made = pause(world, until_next_beat=True)
    assert (made["until"], made["until_next_beat"], made["state"]) == (None, True, "active")
    world.clock.advance(0.5)
    beat(world, agent[1], "job-alive")  # beaten after the pause began: no longer covered
    beat(world, agent[1], "job-new")  # armed after it began: never covered
    world.advance(3600)  # an hour: the silent switch stays held, its alarm back each minute
    assert_not_fired(world, agent, watcher, "job-silent")
    assert len(world.alarms.armed) == 1
    assert world.store.latest_death("acme", "job-alive") is not None
    assert world.store.latest_death("acme", "job-new") is not None

    # Its agent comes back: the late beat keeps it, and the pause is over for it.
    back = beat(
        world,
        agent[1],
        "job-silent",
        on_expiry=ALL_ACTIONS,
        notify_address=f"agent:{watcher[0]}",
    )
    assert (back["state"], back["death"]) == ("armed", None)
    world.advance(2)
    assert_not_fired(world, agent, watcher, "job-silent")
    world.advance(2)
    death = world.store.latest_death("acme", "job-silent")
    assert death is not None
    assert death.deadline == parse_iso(back["deadline"])
    assert 0 <= death.lateness_seconds <= 1
    assert len(alerts(world, watcher)) == 1


def test_until_and_until_next_beat_together_end_at_whichever_comes_first(
    world: World, agent: tuple[str, str]
) -> None:
    beat(world, agent[1], "job-a")
    beat(world, agent[1], "job-b")
    pause(world, until=in_seconds(world, 30), until_next_beat=True)
    world.clock.advance(0.5)
    beat(world, agent[1], "job-a")
    world.advance(10)
    assert world.store.latest_death("acme", "job-a") is not None  # its next beat ended it
    assert world.store.latest_death("acme", "job-b") is None
    world.advance(21)  # until passed: held no more, in its grace
    assert world.store.latest_death("acme", "job-b") is None
    world.advance(3)
    assert world.store.latest_death("acme", "job-b") is not None


# -- ending a pause early ----------------------------------------------------------------------
def test_a_pause_resumed_early_gives_held_switches_their_window_from_the_resumption(
    world: World, agent: tuple[str, str], watcher: tuple[str, str]
) -> None:
    arm_fully(world, agent, watcher)
    beat(world, agent[1], "job-slow", window=90)
    made = pause(world, until=in_seconds(world, 3600))
    world.advance(300)
    assert_not_fired(world, agent, watcher)
    resumed_at = world.clock.now()
    ended = world.call("resume_switches", id=made["id"], version=made["version"])
    assert (ended["state"], ended["version"]) == ("ended", 2)
    assert parse_iso(ended["resumed_at"]) == resumed_at
    assert world.call("list_pauses")["pauses"] == []

    # A held switch learns of the end at its next check, every window of its own (at least a
    # minute): a 90 s switch in time to get all of it.
    world.advance(89)
    assert world.store.latest_death("acme", "job-slow") is None
    world.advance(2)
    slow = world.store.latest_death("acme", "job-slow")
    assert slow is not None
    assert slow.deadline == resumed_at + timedelta(seconds=90)
    assert 0 <= slow.lateness_seconds <= 1
    # The 3 s switch saw it within a minute, and fired then: nothing fired at the resumption.
    fired = fired_at(world)
    assert fired is not None
    assert resumed_at + timedelta(seconds=3) <= fired <= resumed_at + timedelta(seconds=61)
    assert len(alerts(world, watcher)) == 1


def test_a_pause_until_next_beat_resumed_lets_switches_whose_agents_never_came_back_fire(
    world: World, agent: tuple[str, str]
) -> None:
    beat(world, agent[1], window=120)
    made = pause(world, until_next_beat=True)
    world.advance(900)
    assert world.store.latest_death("acme", "job-1") is None
    resumed_at = world.clock.now()
    world.call("resume_switches", scope_prefix="job-", version=made["version"])
    world.advance(119)
    assert world.store.latest_death("acme", "job-1") is None
    world.advance(2)
    death = world.store.latest_death("acme", "job-1")
    assert death is not None
    assert death.deadline == resumed_at + timedelta(seconds=120)


def test_resuming_needs_the_current_version_and_an_ended_pause_is_returned_as_it_is(
    world: World,
) -> None:
    made = pause(world, until=in_seconds(world, 60))
    stale = error_of(world.call, "resume_switches", id=made["id"], version=2)
    assert stale.code is ErrorCode.VERSION_CONFLICT
    assert stale.details == {"current_version": 1}
    world.clock.advance(61)
    ended = world.call("resume_switches", id=made["id"], version=1)
    assert (ended["state"], ended["version"], ended["resumed_at"]) == ("ended", 1, None)
    missing = error_of(world.call, "resume_switches", scope_prefix="nothing-", version=1)
    assert missing.code is ErrorCode.NOT_FOUND
    # The prefix's place takes a new pause once the last has ended.
    again = pause(world, until_next_beat=True)
    assert (again["version"], again["state"]) == (2, "active")
    assert again["id"] != made["id"]
    gone = error_of(world.call, "resume_switches", id=made["id"], version=1)
    assert gone.code is ErrorCode.NOT_FOUND


# -- the audit trail, retries and limits -------------------------------------------------------
def test_pause_and_resume_are_audited_with_who_and_the_versions(world: World) -> None:
    world.clock.advance(1)  # after the bootstrap's event
    made = pause(world, until=in_seconds(world, 60), reason="migrating the queue")
    assert made["paused_by"] == world.tenant.operator.id
    assert made["reason"] == "migrating the queue"
    world.clock.advance(5)
    world.call("resume_switches", scope_prefix="job-", version=1)
    events = world.call("list_audit_events")["events"]
    fields = ("action", "target_kind", "target", "actor", "before_version", "after_version")
    assert [tuple(e[f] for f in fields) for e in events[:2]] == [
        ("resume", "pause", "job-", world.tenant.operator.id, 1, 2),
        ("pause", "pause", "job-", world.tenant.operator.id, None, 1),
    ]


def test_retries_with_the_same_key_return_the_first_result_and_audit_once(world: World) -> None:
    until = in_seconds(world, 60)
    first = pause(world, until=until, idempotency_key="p-1")
    world.clock.advance(1)
    assert pause(world, until=until, idempotency_key="p-1") == first
    mismatch = error_of(pause, world, until=in_seconds(world, 90), idempotency_key="p-1")
    assert mismatch.code is ErrorCode.IDEMPOTENCY_MISMATCH
    resumed = world.call("resume_switches", id=first["id"], version=1, idempotency_key="r-1")
    world.clock.advance(1)
    again = world.call("resume_switches", id=first["id"], version=1, idempotency_key="r-1")
    assert again == resumed
    actions = [e["action"] for e in world.call("list_audit_events")["events"]]
    assert actions.count("pause") == 1
    assert actions.count("resume") == 1
    # Without a key, the prefix is paused already: a second pause conflicts and names it.
    pause(world, until_next_beat=True)
    twice = error_of(pause, world, until_next_beat=True)
    assert twice.code is ErrorCode.VERSION_CONFLICT
    assert twice.details["current_version"] == 3


def test_a_namespace_holds_a_bounded_number_of_pauses(world: World) -> None:
    for n in range(MAX_PAUSES):
        pause(world, f"p-{n:03d}-", until_next_beat=True)
    full = error_of(pause, world, "one-more-", until_next_beat=True)
    assert full.code is ErrorCode.LIMIT_EXCEEDED
    assert full.details == {"limit": MAX_PAUSES}

    seen, cursor = [], None
    while True:
        page = world.call("list_pauses", **({"cursor": cursor} if cursor else {}))
        seen += [p["scope_prefix"] for p in page["pauses"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [f"p-{n:03d}-" for n in range(MAX_PAUSES)]
    first = world.call("list_pauses")
    assert len(first["pauses"]) == 50
    world.call("resume_switches", scope_prefix="p-000-", version=1)
    pause(world, "one-more-", until_next_beat=True)  # an ended pause frees its place


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({}, "a pause needs an end"),
        ({"until_next_beat": False}, "a pause needs an end"),
        ({"until": "2025-12-31T23:59:59Z"}, "until must be after now"),
        ({"until": "2026-03-01T00:00:00Z"}, "until must be after now"),  # 59 days ahead
        ({"until": "2026-01-01T01:00:00"}, "Value error"),  # no offset
        ({"until": "2026-01-01 01:00:00Z"}, "Value error"),
        ({"until": 1767229200}, "Value error"),  # a number is no time here
        ({"until": "2026-02-30T00:00:00Z"}, "Value error"),
    ],
)
def test_a_pause_needs_an_end_in_the_future(
    world: World, arguments: dict[str, Any], problem: str
) -> None:
    refused = error_of(pause, world, **arguments)
    assert refused.code is ErrorCode.INVALID_ARGUMENT
    assert problem in str(refused.message) + str(refused.details)
    assert world.call("list_pauses")["pauses"] == []


def test_until_is_read_with_its_offset_and_returned_in_utc(world: World) -> None:
    made = pause(world, until="2026-01-01t03:00:00.5+02:00")
    assert made["until"] == "2026-01-01T01:00:00.500000Z"


# -- who may -----------------------------------------------------------------------------------
def test_only_operators_pause_and_resume_and_people_may_watch(
    world: World, clock: ManualClock, agent: tuple[str, str]
) -> None:
    _, person = world.tenant.register(kind="person", name="watcher")
    made = pause(world, until_next_beat=True)
    for secret in (agent[1], person):
        refused = error_of(
            world.call, "pause_switches", secret, scope_prefix="x-", until_next_beat=True
        )
        assert refused.code is ErrorCode.FORBIDDEN
        refused = error_of(world.call, "resume_switches", secret, id=made["id"], version=1)
        assert refused.code is ErrorCode.FORBIDDEN
    assert error_of(world.call, "list_pauses", agent[1]).code is ErrorCode.FORBIDDEN
    listed = world.call("list_pauses", person)["pauses"]
    assert [(p["id"], p["scope_prefix"]) for p in listed] == [(made["id"], "job-")]

    globex = Tenant(world.app, clock, "globex")
    assert globex.call("list_pauses")["pauses"] == []
    abroad = error_of(globex.call, "resume_switches", id=made["id"], version=1)
    assert abroad.code is ErrorCode.NOT_FOUND
    abroad = error_of(globex.call, "resume_switches", scope_prefix="job-", version=1)
    assert abroad.code is ErrorCode.NOT_FOUND
    assert world.call("list_pauses")["pauses"][0]["state"] == "active"  # untouched
