"""Idempotency completions stay small. A completion keeps what a later change could move (an
instruction's delivery count, a request's state and history) as it was, and leaves out what
never changes once stored (an instruction's body, a request's text), which a replay reads back:
the replay returns the first result exactly, and the item every keyed call writes does not grow
with what people and agents write."""

from __future__ import annotations

from typing import Any

import pytest

from tests.faults.scenarios import every_scenario, key_field
from tests.faults.world import NAMESPACE, World
from tests.support import Tenant, app_on, completion_bytes
from vigil import catalog
from vigil.clock import ManualClock
from vigil.errors import ErrorCode, VigilError
from vigil.store import Store

ONE_WRITE_UNIT = 1024

# Keyed calls whose completion is larger than one write unit, and why it has to be.
LARGER: dict[str, str] = {
    "rotate_secret: one's own": "the full result, new secret included, sealed for the handover",
    "begin_attachment_upload: a large file": "the presigned form, which cannot be made again "
    "the same (on Lambda it also carries the session token)",
}


def test_a_beats_completion_does_not_grow_with_the_instructions_it_hands_out(
    store: Store, clock: ManualClock
) -> None:
    tenant = Tenant(app_on(store, clock), clock, "acme")
    agent_id, agent = tenant.register(name="agent")
    _, person = tenant.register(kind="person", name="person")

    def beat(session: str, key: str, **arguments: Any) -> dict[str, Any]:
        return tenant.call(
            "session_heartbeat", agent, sessionId=session, idempotencyKey=key, **arguments
        )

    sizes = {}
    for session, length in (("small", 10), ("large", 4096)):
        beat(session, f"{session}-0")
        for n in range(2):
            tenant.call("post_instruction", person, sessionId=session, body=str(n) * length)
        first = beat(session, f"{session}-1")
        assert [len(i["body"]) for i in first["instructions"]] == [length, length]
        sizes[length] = completion_bytes(
            store, "acme", agent_id, "session_heartbeat", f"{session}-1"
        )
        # Handed out again, the instructions count two deliveries; the replay still says one.
        again = beat(session, f"{session}-2")
        assert [i["deliveryCount"] for i in again["instructions"]] == [2, 2]
        assert beat(session, f"{session}-1") == first
        with pytest.raises(VigilError) as refused:
            beat(session, f"{session}-1", status="blocked")
        assert refused.value.code is ErrorCode.IDEMPOTENCY_MISMATCH
    assert sizes[4096] == sizes[10] < ONE_WRITE_UNIT


def test_posts_and_requests_keep_their_text_out_of_their_completions(
    store: Store, clock: ManualClock
) -> None:
    tenant = Tenant(app_on(store, clock), clock, "acme")
    agent_id, agent = tenant.register(name="agent")
    person_id, person = tenant.register(kind="person", name="person")
    bob_id, _ = tenant.register(name="bob")
    tenant.call("session_heartbeat", agent, sessionId="s", idempotencyKey="beat")

    sizes: dict[str, set[int]] = {"post_instruction": set(), "ask": set(), "replace_request": set()}
    for length in (10, 8000):
        body, key = "x" * length, f"key-{length:04d}"
        calls = {
            "post_instruction": (
                person,
                person_id,
                {"sessionId": "s", "body": body, "idempotencyKey": key},
            ),
            "ask": (
                agent,
                agent_id,
                {"target": {"kind": "agent", "id": bob_id}, "body": body, "idempotency_key": key},
            ),
        }
        results = {}
        for tool, (secret, principal_id, arguments) in calls.items():
            results[tool] = tenant.call(tool, secret, **arguments)
            sizes[tool].add(completion_bytes(store, "acme", principal_id, tool, key))
        asked = results["ask"]
        replace = {"id": asked["id"], "version": 1, "body": body[::-1], "idempotency_key": key}
        results["replace_request"] = tenant.call("replace_request", agent, **replace)
        sizes["replace_request"].add(
            completion_bytes(store, "acme", agent_id, "replace_request", key)
        )
        # The request has been replaced since: a replay of ask still gives it as asked.
        for tool, (secret, _, arguments) in calls.items():
            assert tenant.call(tool, secret, **arguments) == results[tool]
        assert tenant.call("replace_request", agent, **replace) == results["replace_request"]
        assert results["replace_request"]["previous"]["body"] == body
    assert all(len(found) == 1 for found in sizes.values()), sizes


def test_every_keyed_call_completes_in_one_write_unit(aws: None) -> None:
    world = World()
    scenarios = [s for s in every_scenario(mutating_only=True) if s.keyed]
    assert set(LARGER) <= {s.name for s in scenarios}
    over = {}
    for scenario in scenarios:
        arguments = scenario.prepare(world)
        field = key_field(catalog.tool(scenario.tool))
        arguments.setdefault(field, world.unique("key"))
        scenario.run(world, scenario, arguments)
        size = completion_bytes(
            world.store, NAMESPACE, world.ids[scenario.caller], scenario.tool, arguments[field]
        )
        if size >= ONE_WRITE_UNIT and scenario.name not in LARGER:
            over[scenario.name] = size
    assert not over
