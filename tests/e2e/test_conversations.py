"""Conversations end to end: the MCP SDK client against the local runtime (moto, SQS mailboxes):
a direct message received, acknowledged and read back; a shared chat whose membership changes;
a stale version; mentions among astral characters."""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

import anyio
import pytest

from tests.e2e.clients import Session, open_session

pytestmark = pytest.mark.e2e


async def _principal(
    operator: Session, url: str, stack: AsyncExitStack, kind: str, name: str
) -> tuple[str, Session]:
    registered = await operator.call("register", kind=kind, name=name)
    return registered["principal"]["id"], await open_session(stack, url, registered["secret"])


async def _inbox(session: Session) -> list[dict[str, Any]]:
    """Everything waiting in the session's own mailbox, each acknowledged."""
    found: list[dict[str, Any]] = []
    while True:
        batch = (await session.call("receive", max_messages=10))["deliveries"]
        if not batch:
            return found
        for delivery in batch:
            acked = await session.call(
                "acknowledge", id=delivery["id"], generation=delivery["generation"]
            )
            assert acked == {"received": True}
        found += batch


def test_an_agent_writes_to_another_which_receives_acknowledges_and_reads(
    state: dict[str, Any],
) -> None:
    url = state["mcp_url"]

    async def scenario() -> None:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, url, state["operator_secret"])
            ann_id, ann = await _principal(operator, url, stack, "agent", "conv-ann")
            bob_id, bob = await _principal(operator, url, stack, "agent", "conv-bob")

            sent = await ann.call(
                "send",
                target={"kind": "agent", "id": bob_id},
                body="the nightly build is green",
                idempotency_key="nightly",
            )
            (message,) = sent["messages"]
            assert message["queued_for"] == [bob_id]
            (delivery,) = await _inbox(bob)
            assert delivery["kind"] == "message"
            assert delivery["sender"] == ann_id
            assert delivery["payload"]["conversation_id"] == sent["conversation_id"]
            assert delivery["payload"]["message_id"] == message["id"]
            assert await _inbox(bob) == []  # acknowledged: it does not come back

            read = await bob.call("get_conversation", id=sent["conversation_id"])
            assert read["kind"] == "direct"
            assert [(m["sender"], m["body"]) for m in read["messages"]] == [
                (ann_id, "the nightly build is green")
            ]
            replay = await ann.call(
                "send",
                target={"kind": "agent", "id": bob_id},
                body="the nightly build is green",
                idempotency_key="nightly",
            )
            assert replay == sent
            assert await _inbox(bob) == []
            assert await _inbox(ann) == []  # a sender never reads its own message back

    anyio.run(scenario)


def test_a_shared_chat_discloses_by_membership(state: dict[str, Any]) -> None:
    url = state["mcp_url"]

    async def scenario() -> None:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, url, state["operator_secret"])
            lead_id, lead = await _principal(operator, url, stack, "person", "chat-lead")
            a_id, a = await _principal(operator, url, stack, "agent", "chat-a")
            b_id, b = await _principal(operator, url, stack, "agent", "chat-b")
            late_id, late = await _principal(operator, url, stack, "agent", "chat-late")

            chat = await lead.call(
                "start_chat",
                targets=[{"kind": "agent", "id": a_id}, {"kind": "agent", "id": b_id}],
                body="before",
                title="release 42",
            )
            conversation_id = chat["conversation_id"]
            added = await lead.call(
                "change_chat_membership",
                conversation_id=conversation_id,
                operation="add",
                members=[late_id],
                version=chat["version"],
            )
            assert added["version"] == chat["version"] + 1
            stale = await lead.attempt(
                "change_chat_membership",
                conversation_id=conversation_id,
                operation="rename",
                title="too late",
                version=chat["version"],
            )
            assert stale["error"]["code"] == "version_conflict"
            assert stale["error"]["details"] == {"current_version": added["version"]}

            await a.call("send", conversation_id=conversation_id, body="after")
            seen = await late.call("get_conversation", id=conversation_id)
            assert [m["body"] for m in seen["messages"]] == ["after"]
            assert [d["payload"]["body"] for d in await _inbox(late)] == ["after"]
            everything = await b.call("get_conversation", id=conversation_id)
            assert [m["body"] for m in everything["messages"]] == ["before", "after"]
            assert {p["principal_id"] for p in everything["participants"]} == {
                lead_id,
                a_id,
                b_id,
                late_id,
            }

            await lead.call(
                "change_chat_membership",
                conversation_id=conversation_id,
                operation="remove",
                members=[b_id],
                version=added["version"],
            )
            removed = await b.attempt("get_conversation", id=conversation_id)
            missing = await b.attempt("get_conversation", id="cnv_aaaaaaaaaaaaaaaa")
            assert removed["error"]["code"] == "not_found"
            assert removed == missing
            assert [d["payload"]["body"] for d in await _inbox(b)] == ["before", "after"]
            after_removal = await lead.call(
                "send", conversation_id=conversation_id, body="without b"
            )
            assert set(after_removal["messages"][0]["queued_for"]) == {a_id, late_id}
            assert await _inbox(b) == []

    anyio.run(scenario)


def test_mentions_count_code_points_among_astral_characters(state: dict[str, Any]) -> None:
    url = state["mcp_url"]
    # A rocket, a woman technologist of a skin tone (four code points joined by U+200D), a
    # double-struck S and a hieroglyph: every one outside the Basic Multilingual Plane.
    body = "🚀👩🏽\u200d💻 @rev \U0001d54a \U00013080 @ops, merge?"
    rev, ops = body.index("@rev"), body.index("@ops")

    async def scenario() -> None:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, url, state["operator_secret"])
            rev_id, reviewer = await _principal(operator, url, stack, "agent", "mention-rev")
            ops_id, ops_agent = await _principal(operator, url, stack, "agent", "mention-ops")
            _, author = await _principal(operator, url, stack, "agent", "mention-author")
            mentions = [
                {"start": rev, "end": rev + 4, "principal_id": rev_id},
                {"start": ops, "end": ops + 4, "principal_id": ops_id},
            ]
            chat = await author.call(
                "start_chat",
                targets=[{"kind": "agent", "id": rev_id}, {"kind": "agent", "id": ops_id}],
                body=body,
                mentions=mentions,
            )
            for agent in (reviewer, ops_agent):
                (delivery,) = await _inbox(agent)
                got = delivery["payload"]
                assert got["body"] == body
                assert got["mentions"] == mentions
                spans = [got["body"][m["start"] : m["end"]] for m in got["mentions"]]
                assert spans == ["@rev", "@ops"]
            read = await reviewer.call("get_conversation", id=chat["conversation_id"])
            assert read["messages"][0]["mentions"] == mentions
            past_the_end = await author.attempt(
                "send",
                conversation_id=chat["conversation_id"],
                body=body,
                mentions=[{"start": len(body) - 1, "end": len(body) + 1, "principal_id": rev_id}],
            )
            assert past_the_end["error"]["code"] == "invalid_argument"

    assert (rev, ops) == (6, 15)  # code points: UTF-16 would count 10 and 21
    anyio.run(scenario)
