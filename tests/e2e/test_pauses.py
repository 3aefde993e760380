"""Pausing a dead-man switch end to end: the MCP SDK client against the local runtime, where the
event pump plays the timer queue's event source mapping and the alarm function runs for real.

These tests wait in real time (a switch window is at least 2 s); they poll, never sleep blind.
"""

from __future__ import annotations

import time
import uuid
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest

from tests.e2e.clients import Session, open_session
from tests.e2e.test_deadman import (
    ALL_ACTIONS,
    DEATH_DEADLINE_SECONDS,
    MAX_LATENESS_SECONDS,
    POLL_SECONDS,
    _drain,
    _poll,
    _register,
    _when,
)

pytestmark = pytest.mark.e2e

PAUSE_SECONDS = 8


async def _watch_it_not_fire(
    watcher: Session, supervisor: Session, scope: str, until: datetime
) -> int:
    """Polls the switch until ``until`` (a wall-clock time), failing the test at the first
    sign of a firing: a state other than armed, a death, an alert. Returns how many looks it
    took."""
    looks = 0
    while datetime.now(UTC) < until:
        packet = await watcher.call("resume_packet", scope=scope)
        assert (packet["state"], packet["death"]) == ("armed", None), packet
        assert packet["held_leases"], "the held switch's lease was released"
        assert await _drain(supervisor) == []
        looks += 1
        await anyio.sleep(POLL_SECONDS)
    return looks


def test_a_paused_switch_does_not_fire_and_fires_after_the_pause_and_its_window(
    state: dict[str, Any],
) -> None:
    url, operator_secret = state["mcp_url"], state["operator_secret"]
    scope = f"paused-{uuid.uuid4().hex[:8]}"

    async def scenario() -> None:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, url, operator_secret)
            _, worker_secret = await _register(operator, "paused-worker")
            supervisor_id, supervisor_secret = await _register(operator, "paused-supervisor")
            worker = await open_session(stack, url, worker_secret)
            supervisor = await open_session(stack, url, supervisor_secret)

            await worker.call(
                "acquire_lease", resource=f"repo:{scope}", scope=scope, ttl_seconds=600
            )
            await worker.call(
                "heartbeat",
                scope=scope,
                expect_within_seconds=3,
                on_expiry=ALL_ACTIONS,
                notify_address=f"agent:{supervisor_id}",
            )
            until = (datetime.now(UTC) + timedelta(seconds=PAUSE_SECONDS)).replace(microsecond=0)
            paused = await operator.call(
                "pause_switches",
                scope_prefix=scope,
                until=until.isoformat().replace("+00:00", "Z"),
                reason="maintenance window",
                idempotency_key=f"pause-{scope}",
            )
            assert (paused["state"], _when(paused["until"])) == ("active", until)
            listed = await operator.call("list_pauses")
            assert paused in listed["pauses"]
            refused = await supervisor.attempt("list_pauses")  # an agent does not watch
            assert refused["error"]["code"] == "forbidden"
            # The worker dies here: its deadline passes 3 s in, during the pause. The switch
            # is held through the pause and its window after it.
            looks = await _watch_it_not_fire(
                operator, supervisor, scope, until + timedelta(seconds=2.5)
            )
            assert looks > 10

            async def dead() -> tuple[bool, dict[str, Any]]:
                packet = await operator.call("resume_packet", scope=scope)
                death = packet["death"]
                return death is not None and death["completed"] == ALL_ACTIONS, packet

            packet = await _poll(dead, DEATH_DEADLINE_SECONDS)
            death = packet["death"]
            # The deadline it missed is the pause's end plus its window.
            assert _when(death["deadline"]) == until + timedelta(seconds=3)
            assert 0 <= death["lateness_seconds"] < MAX_LATENESS_SECONDS
            assert packet["held_leases"] == []
            alerts = await _drain(supervisor)
            assert [a["payload"]["scope"] for a in alerts] == [scope]

            trail = await operator.call("list_audit_events", limit=10)
            assert any((e["action"], e["target"]) == ("pause", scope) for e in trail["events"]), (
                trail
            )

    anyio.run(scenario)


def test_a_switch_paused_until_its_next_beat_is_kept_by_a_late_beat(
    state: dict[str, Any],
) -> None:
    url, operator_secret = state["mcp_url"], state["operator_secret"]
    scope = f"next-beat-{uuid.uuid4().hex[:8]}"

    async def scenario() -> None:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, url, operator_secret)
            _, worker_secret = await _register(operator, "next-beat-worker")
            worker = await open_session(stack, url, worker_secret)

            await worker.call("heartbeat", scope=scope, expect_within_seconds=2)
            await operator.call("pause_switches", scope_prefix=scope, until_next_beat=True)
            # Silent for twice its window: held.
            started = time.monotonic()
            while time.monotonic() - started < 5:
                packet = await operator.call("resume_packet", scope=scope)
                assert (packet["state"], packet["death"]) == ("armed", None), packet
                await anyio.sleep(POLL_SECONDS)

            back = await worker.call("heartbeat", scope=scope, expect_within_seconds=2)
            assert (back["state"], back["generation"], back["death"]) == ("armed", 1, None)

            # The pause is over for it: silent again, it fires at its new deadline.
            async def dead() -> tuple[bool, dict[str, Any]]:
                packet = await operator.call("resume_packet", scope=scope)
                return packet["death"] is not None, packet

            packet = await _poll(dead, DEATH_DEADLINE_SECONDS)
            assert _when(packet["death"]["deadline"]) == _when(back["deadline"])
            assert 0 <= packet["death"]["lateness_seconds"] < MAX_LATENESS_SECONDS

    anyio.run(scenario)
