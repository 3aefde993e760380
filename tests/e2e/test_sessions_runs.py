"""Sessions, instructions, runs and progress end to end: the MCP SDK client against the local
runtime, a person steering an agent and a second worker claiming a lapsed run."""

from __future__ import annotations

import time
import uuid
from contextlib import AsyncExitStack
from typing import Any

import anyio
import pytest

from tests.e2e.clients import open_session

pytestmark = pytest.mark.e2e


def test_a_person_steers_an_agent_through_its_session(state: dict[str, Any]) -> None:
    url = state["mcp_url"]

    async def scenario() -> None:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, url, state["operator_secret"])
            person = await operator.call("register", kind="person", name="Reviewer")
            agent = await operator.call("register", kind="agent", name="session-worker")
            steer = await open_session(stack, url, person["secret"])
            work = await open_session(stack, url, agent["secret"])
            session_id = f"s-{uuid.uuid4().hex[:12]}"

            first = await work.call(
                "session_heartbeat", sessionId=session_id, status="active", idempotencyKey="b1"
            )
            assert first["instructions"] == []
            posted = await steer.call(
                "post_instruction", sessionId=session_id, body="Pause before deploying."
            )
            beat = await work.call(
                "session_heartbeat",
                sessionId=session_id,
                status="waiting",
                stepIndex=2,
                stepCount=5,
                idempotencyKey="b2",
            )
            assert [i["id"] for i in beat["instructions"]] == [posted["id"]]
            # Not acknowledged: it comes again on the next beat.
            again = await work.call("session_heartbeat", sessionId=session_id, idempotencyKey="b3")
            assert [i["id"] for i in again["instructions"]] == [posted["id"]]
            done = await work.call(
                "session_heartbeat",
                sessionId=session_id,
                acknowledgedInstructionIds=[posted["id"]],
                idempotencyKey="b4",
            )
            assert done["acknowledged"] == [posted["id"]]
            after = await work.call("session_heartbeat", sessionId=session_id, idempotencyKey="b5")
            assert after["instructions"] == []
            listed = await steer.call("list_instructions", sessionId=session_id)
            states = {i["id"]: i["state"] for i in listed["instructions"]}
            assert states == {posted["id"]: "acknowledged"}
            # A retry of an earlier beat replays its first answer.
            replay = await work.call(
                "session_heartbeat",
                sessionId=session_id,
                status="waiting",
                stepIndex=2,
                stepCount=5,
                idempotencyKey="b2",
            )
            assert replay == beat
            unknown = await work.call(
                "session_heartbeat",
                sessionId=session_id,
                acknowledgedInstructionIds=["ins_aaaaaaaaaaaaaaaa"],
                idempotencyKey="b6",
            )
            assert unknown["unknownInstructionIds"] == ["ins_aaaaaaaaaaaaaaaa"]
            refused = await work.attempt(
                "session_heartbeat", sessionId="zero\u200bwidth", idempotencyKey="b7"
            )
            assert refused["error"]["code"] == "invalid_argument"

    anyio.run(scenario)


def test_a_lapsed_run_claimed_by_another_worker_fences_the_first(state: dict[str, Any]) -> None:
    url = state["mcp_url"]

    async def scenario() -> None:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, url, state["operator_secret"])
            first = await operator.call("register", kind="agent", name="run-worker-1")
            second = await operator.call("register", kind="agent", name="run-worker-2")
            a = await open_session(stack, url, first["secret"])
            b = await open_session(stack, url, second["secret"])
            run_id = str(uuid.uuid4())

            started = await a.call("start_run", run_id=run_id, lease_duration_seconds=5)
            assert started["run"]["generation"] == 1
            renewed = await a.call("create_run_heartbeat", run_id=run_id, lease_duration_seconds=5)
            assert set(renewed) == {"run_id", "expires_at"}
            await a.call("report_progress", progress={"done": 3, "of": 10})

            deadline = time.monotonic() + 15
            while True:  # the lease lapses in real time; poll, never sleep blind
                claimed = await b.attempt("claim_run", run_id=run_id, lease_duration_seconds=60)
                if "error" not in claimed or time.monotonic() > deadline:
                    break
                await anyio.sleep(0.5)
            assert claimed["run"]["generation"] == 2
            stale = await a.attempt("create_run_heartbeat", run_id=run_id, lease_duration_seconds=5)
            assert stale["error"]["code"] == "stale_generation"
            finished = await b.call(
                "finish_run", run_id=run_id, generation=2, outcome="succeeded", result={"n": 1}
            )
            assert finished["run"]["state"] == "finished"
            progress = await b.call("get_progress", principal_id=first["principal"]["id"])
            assert progress["last_progress"]["progress"] == {"done": 3, "of": 10}

    anyio.run(scenario)
