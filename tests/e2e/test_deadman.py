"""The dead-man switch end to end: the MCP SDK client against the local runtime, where the
event pump plays the timer queue's event source mapping and the alarm function runs for real.

These tests wait in real time (a switch window is at least 2 s); they poll, never sleep blind.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest

from tests.e2e.clients import Session, open_session
from vigil.switches.records import EARLY_BEAT

pytestmark = pytest.mark.e2e

ALL_ACTIONS = ["release_leases", "mark_failed", "queue_alert"]
POLL_SECONDS = 0.25
DEATH_DEADLINE_SECONDS = 20.0
MAX_LATENESS_SECONDS = 2.0


async def _register(operator: Session, name: str) -> tuple[str, str]:
    registered = await operator.call("register", kind="agent", name=name)
    return registered["principal"]["id"], registered["secret"]


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text)


async def _poll(
    check: Callable[[], Awaitable[tuple[bool, dict[str, Any]]]], deadline_seconds: float
) -> dict[str, Any]:
    """Calls ``check`` every POLL_SECONDS until it reports done, or fails the test with the
    last thing it saw."""
    give_up = time.monotonic() + deadline_seconds
    while True:
        done, seen = await check()
        if done:
            return seen
        if time.monotonic() >= give_up:
            pytest.fail(f"not done after {deadline_seconds} s; last seen: {seen}")
        await anyio.sleep(POLL_SECONDS)


async def _drain(session: Session) -> list[dict[str, Any]]:
    """Every delivery waiting for ``session``, each acknowledged with its generation; stops
    after two consecutive empty polls."""
    deliveries: list[dict[str, Any]] = []
    empty = 0
    while empty < 2:
        batch = (await session.call("inbox_poll", wait_seconds=0, max_messages=10))["deliveries"]
        empty = 0 if batch else empty + 1
        for delivery in batch:
            acked = await session.call(
                "acknowledge", id=delivery["id"], generation=delivery["generation"]
            )
            assert acked["received"] is True
        deliveries += batch
    return deliveries


def test_a_missed_beat_releases_marks_failed_and_alerts_once(state: dict[str, Any]) -> None:
    url, operator_secret = state["mcp_url"], state["operator_secret"]
    scope = f"deadman-{uuid.uuid4().hex[:8]}"

    async def scenario() -> None:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, url, operator_secret)
            worker_id, worker_secret = await _register(operator, "deadman-worker")
            supervisor_id, supervisor_secret = await _register(operator, "deadman-supervisor")
            worker = await open_session(stack, url, worker_secret)
            supervisor = await open_session(stack, url, supervisor_secret)

            scoped = (
                await worker.call(
                    "acquire_lease", resource="repo:main", scope=scope, ttl_seconds=600
                )
            )["lease"]
            await worker.call("acquire_lease", resource=f"notes:{scope}", ttl_seconds=600)
            armed = await worker.call(
                "heartbeat",
                scope=scope,
                expect_within_seconds=3,
                on_expiry=["queue_alert", "mark_failed", "release_leases"],
                notify_address=f"agent:{supervisor_id}",
                agent_id="worker-3",
            )
            assert armed["state"] == "armed"
            assert armed["on_expiry"] == ALL_ACTIONS
            # The worker dies here: it never beats again.

            async def dead() -> tuple[bool, dict[str, Any]]:
                packet = await supervisor.call("resume_packet", scope=scope)
                death = packet["death"]
                # "failed" is reported from the moment it fires; wait for every action too.
                done = packet["state"] == "failed" and death is not None
                return done and death["completed"] == ALL_ACTIONS, packet

            packet = await _poll(dead, DEATH_DEADLINE_SECONDS)
            death = packet["death"]
            assert death["holder"] == worker_id
            assert death["agent_id"] == "worker-3"
            assert death["actions"] == ALL_ACTIONS
            assert death["marked_failed"] is True
            assert death["released"] == [
                {"resource": "repo:main", "generation": scoped["generation"]}
            ]
            assert death["blind_spot"]["unscoped_leases_held"] == 1
            assert packet["held_leases"] == []
            lateness = (_when(death["fired_at"]) - _when(death["deadline"])).total_seconds()
            assert 0 <= lateness < MAX_LATENESS_SECONDS
            assert death["lateness_seconds"] == pytest.approx(lateness, abs=0.001)

            taken = (await supervisor.call("acquire_lease", resource="repo:main", ttl_seconds=60))[
                "lease"
            ]
            assert taken["holder"] == supervisor_id
            assert taken["generation"] > scoped["generation"]

            deliveries = await _drain(supervisor)
            assert len(deliveries) == 1, deliveries
            alert = deliveries[0]
            assert (alert["kind"], alert["sender"]) == ("alert", "vigil")
            assert alert["id"] == death["alert_envelope_id"]
            payload = alert["payload"]
            assert payload["scope"] == scope
            assert payload["agent_id"] == "worker-3"
            assert _when(payload["deadline"]) == _when(death["deadline"])
            assert _when(payload["fired_at"]) == _when(death["fired_at"])
            assert payload["lateness_seconds"] == death["lateness_seconds"]
            assert payload["released_first"] == death["released"]
            assert payload["released_count"] == death["released_count"] == 1
            # Nothing for the worker either: the alert went to the supervisor only.
            assert await _drain(worker) == []

    anyio.run(scenario)


def test_a_switch_beaten_in_time_never_fires_and_disarms(state: dict[str, Any]) -> None:
    url, operator_secret = state["mcp_url"], state["operator_secret"]
    scope = f"steady-{uuid.uuid4().hex[:8]}"

    async def scenario() -> None:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, url, operator_secret)
            _, secret = await _register(operator, "steady-worker")
            worker = await open_session(stack, url, secret)

            started = time.monotonic()
            # Beats at 0, 1, ..., 5 s: the first alarm comes due at 3 s and must find the
            # deadline moved, arm the next one and fire nothing.
            for second in range(6):
                await anyio.sleep(max(0.0, started + second - time.monotonic()))
                beat = await worker.call("heartbeat", scope=scope, expect_within_seconds=3)
                assert (beat["state"], beat["generation"]) == ("armed", 1)
                assert (beat["beats"], beat["death"]) == (second + 1, None)

            packet = await worker.call("resume_packet", scope=scope)
            assert (packet["state"], packet["generation"], packet["death"]) == ("armed", 1, None)

            disarmed = await worker.call(
                "heartbeat", scope=scope, expect_within_seconds=3, disarm=True
            )
            assert disarmed["state"] == "disarmed"
            assert disarmed["death"] is None
            packet = await worker.call("resume_packet", scope=scope)
            assert (packet["state"], packet["death"]) == ("disarmed", None)

    anyio.run(scenario)


def test_a_calendar_switch_fires_at_its_first_missed_slot(state: dict[str, Any]) -> None:
    """OnCalendar text every minute, with a minute's grace: beaten once, the switch is due at
    the next minute's turn plus the grace, and fires then, through the real alarms."""
    url, operator_secret = state["mcp_url"], state["operator_secret"]
    scope = f"calendar-{uuid.uuid4().hex[:8]}"

    async def scenario() -> None:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, url, operator_secret)
            _, secret = await _register(operator, "calendar-job")
            worker = await open_session(stack, url, secret)
            before = datetime.now(UTC)
            armed = await worker.call(
                "heartbeat",
                scope=scope,
                expect_within_seconds=60,
                schedule="*-*-* *:*:00",
                time_zone="Asia/Kathmandu",
            )
            after = datetime.now(UTC)
            deadline = _when(armed["deadline"])

            def due(beat: datetime) -> datetime:
                # A beat counts for a slot up to EARLY_BEAT ahead of it; the switch is then due
                # at the next minute's turn (whatever the zone's offset) plus the grace.
                counted = (beat + EARLY_BEAT).replace(second=0, microsecond=0)
                return counted + timedelta(minutes=2)

            assert deadline in {due(before), due(after)}
            packet = await worker.call("resume_packet", scope=scope)
            assert packet["schedule"] == ("OnCalendar *-*-* *:*:00 in Asia/Kathmandu, within 1 min")

            async def dead() -> tuple[bool, dict[str, Any]]:
                packet = await worker.call("resume_packet", scope=scope)
                return packet["death"] is not None, packet

            wait = (deadline - datetime.now(deadline.tzinfo)).total_seconds()
            death = (await _poll(dead, wait + DEATH_DEADLINE_SECONDS))["death"]
            assert _when(death["deadline"]) == deadline
            assert 0 <= death["lateness_seconds"] < MAX_LATENESS_SECONDS

    anyio.run(scenario)
