"""Requests end to end: the MCP SDK client against the local runtime, where the event pump
plays the timer queue and the alarm function runs for real. An agent asks a person for an
approval of an exact action, redeems it for its intent (and not for another action) and reports
the execution; a second approval left unanswered expires on time and cannot be redeemed; a
blocking cycle between two agents is refused; a 2-of-3 approval is redeemable only at its second
approval, one denial closes one, and one asked with deny_on_timeout is denied at its deadline.

The expiry waits in real time (at least 10 s); it polls, never sleeps blind.
"""

from __future__ import annotations

import time
from contextlib import AsyncExitStack
from datetime import datetime
from typing import Any

import anyio
import pytest

from tests.e2e.clients import Session, open_session

pytestmark = pytest.mark.e2e

DEPLOY = {"op": "deploy", "service": "checkout", "version": "1.2.3"}
POLL_SECONDS = 0.25
EXPIRY_DEADLINE_SECONDS = 25.0
MAX_LATENESS_SECONDS = 2.0


async def _principal(
    operator: Session, url: str, stack: AsyncExitStack, kind: str, name: str
) -> tuple[str, Session]:
    registered = await operator.call("register", kind=kind, name=name)
    return registered["principal"]["id"], await open_session(stack, url, registered["secret"])


async def _inbox(session: Session) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    while True:
        batch = (await session.call("receive", max_messages=10))["deliveries"]
        if not batch:
            return found
        for delivery in batch:
            await session.call("acknowledge", id=delivery["id"], generation=delivery["generation"])
        found += batch


def test_an_approval_of_an_exact_action_is_redeemed_and_reported(state: dict[str, Any]) -> None:
    url = state["mcp_url"]

    async def scenario() -> None:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, url, state["operator_secret"])
            _, agent = await _principal(operator, url, stack, "agent", "req-agent")
            person_id, person = await _principal(operator, url, stack, "person", "req-person")

            asked = await agent.call(
                "ask",
                target={"kind": "person", "id": person_id},
                body="May I deploy checkout 1.2.3?",
                kind="approval",
                action=DEPLOY,
                idempotency_key="deploy-1.2.3",
            )
            assert asked["state"] == "open"
            assert asked["audience"] == [person_id]
            listed = await person.call("request_status", state="open")
            assert [r["id"] for r in listed["requests"]] == [asked["id"]]

            approved = await person.call(
                "reply", id=asked["id"], version=asked["version"], outcome="approved"
            )
            assert approved["state"] == "approved"
            (response,) = await _inbox(agent)
            assert response["kind"] == "response"
            assert response["payload"]["response"]["outcome"] == "approved"

            intent = await agent.call("redeem_approval", id=asked["id"], action=DEPLOY)
            assert intent["state"] == "intended"
            assert intent["action"] == DEPLOY
            assert await agent.call("redeem_approval", id=asked["id"], action=DEPLOY) == intent
            other = await agent.attempt(
                "redeem_approval", id=asked["id"], action={**DEPLOY, "version": "1.2.4"}
            )
            assert other["error"]["code"] == "invalid_argument"

            started = await agent.call("report_execution", id=intent["id"], state="started")
            assert started["state"] == "started"
            done = await agent.call(
                "report_execution", id=intent["id"], state="succeeded", result={"build": 42}
            )
            assert done["state"] == "succeeded"
            assert done["proof"] is False
            assert [r["state"] for r in done["reports"]] == ["started", "succeeded"]

    anyio.run(scenario)


def test_an_unanswered_approval_expires_on_time_and_cannot_be_redeemed(
    state: dict[str, Any],
) -> None:
    url = state["mcp_url"]

    async def scenario() -> None:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, url, state["operator_secret"])
            _, agent = await _principal(operator, url, stack, "agent", "req-waiting")
            person_id, _ = await _principal(operator, url, stack, "person", "req-away")
            asked = await agent.call(
                "ask",
                target={"kind": "person", "id": person_id},
                body="Deploy while I wait?",
                kind="approval",
                action=DEPLOY,
                expires_in_seconds=10,
            )
            due = datetime.fromisoformat(asked["expires_at"])

            give_up = time.monotonic() + EXPIRY_DEADLINE_SECONDS
            while True:
                responses = await _inbox(agent)
                if responses:
                    break
                if time.monotonic() >= give_up:
                    pytest.fail("the approval's expiry never reached its requester")
                await anyio.sleep(POLL_SECONDS)
            (response,) = responses
            assert response["kind"] == "response"
            assert response["payload"]["state"] == "expired"
            expired = await agent.call("get_request", id=asked["id"])
            assert expired["state"] == "expired"
            at = datetime.fromisoformat(expired["response"]["at"])
            assert 0 <= (at - due).total_seconds() <= MAX_LATENESS_SECONDS
            refused = await agent.attempt("redeem_approval", id=asked["id"], action=DEPLOY)
            assert refused["error"]["code"] == "version_conflict"
            assert refused["error"]["details"]["state"] == "expired"

    anyio.run(scenario)


def test_a_blocking_cycle_between_two_agents_is_refused(state: dict[str, Any]) -> None:
    url = state["mcp_url"]

    async def scenario() -> None:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, url, state["operator_secret"])
            ann_id, ann = await _principal(operator, url, stack, "agent", "req-ann")
            bob_id, bob = await _principal(operator, url, stack, "agent", "req-bob")
            first = await ann.call(
                "ask", target={"kind": "agent", "id": bob_id}, body="your schema?", blocking=True
            )
            assert first["blocking"] is True
            back = await bob.call("ask", target={"kind": "agent", "id": ann_id}, body="your API?")
            refused = await bob.attempt("set_blocking", id=back["id"], blocking=True)
            assert refused["error"]["code"] == "version_conflict"
            assert refused["error"]["details"]["cycle"] == [bob_id, ann_id, bob_id]
            cleared = await ann.call("set_blocking", id=first["id"], blocking=False)
            assert cleared["blocking"] is False
            blocked = await bob.call("set_blocking", id=back["id"], blocking=True)
            assert blocked["blocking"] is True

    anyio.run(scenario)


def test_two_of_three_approve_one_denial_denies_and_a_timeout_denies(
    state: dict[str, Any],
) -> None:
    """A 2-of-3 approval is redeemable only at its second approval; with the default policy one
    denial closes it; asked with deny_on_timeout, its deadline denies it for "timeout", and its
    history says the timer did."""
    url = state["mcp_url"]

    async def scenario() -> None:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, url, state["operator_secret"])
            _, agent = await _principal(operator, url, stack, "agent", "quorum-agent")
            people = [
                await _principal(operator, url, stack, "person", f"quorum-{n}") for n in range(3)
            ]
            targets = [{"kind": "person", "id": person_id} for person_id, _ in people]
            chat = await agent.call("start_chat", targets=targets, body="deploys")

            async def ask(expires: int = 3600, **policy: Any) -> dict[str, Any]:
                asked: dict[str, Any] = await agent.call(
                    "ask",
                    conversation_id=chat["conversation_id"],
                    body="May I deploy checkout 1.2.3?",
                    kind="approval",
                    action=DEPLOY,
                    policy=policy,
                    expires_in_seconds=expires,
                )
                return asked

            (_, first), (_, second), (_, third) = people
            asked = await ask(quorum=2)
            voted = await first.call("reply", id=asked["id"], version=1, outcome="approved")
            assert voted["state"] == "open"
            early = await agent.attempt("redeem_approval", id=asked["id"], action=DEPLOY)
            assert early["error"]["details"]["state"] == "open"
            approved = await second.call("reply", id=asked["id"], version=1, outcome="approved")
            assert approved["state"] == "approved"
            assert [c["kind"] for c in approved["history"]] == ["asked", "voted", "replied"]
            assert {c["via"] for c in approved["history"]} == {"mcp"}
            intent = await agent.call("redeem_approval", id=asked["id"], action=DEPLOY)
            assert intent["state"] == "intended"

            closed = await ask(quorum=2)
            denied = await third.call(
                "reply", id=closed["id"], version=1, outcome="denied", answer="not today"
            )
            assert (denied["state"], denied["response"]["answer"]) == ("denied", "not today")

            timed = await ask(deny_on_timeout=True, expires=10)
            give_up = time.monotonic() + EXPIRY_DEADLINE_SECONDS
            # Read as denied from its deadline on; its alarm records it.
            while (final := await agent.call("get_request", id=timed["id"]))["response"] is None:
                if time.monotonic() >= give_up:
                    pytest.fail("the request was never denied at its deadline")
                await anyio.sleep(POLL_SECONDS)
            assert (final["state"], final["response"]["answer"]) == ("denied", "timeout")
            last = final["history"][-1]
            assert (last["kind"], last["by"], last["reason"]) == ("timed_out", None, "timeout")

    anyio.run(scenario)
