"""One identity for a name, and the leniency the seeds ask for: every identifier a caller chooses
is taken in Unicode NFC and refused if it holds a control or invisible character; session ids
and idempotency keys are any printable text; a notify_address is accepted without queue_alert."""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest

from tests.liveness_support import World
from tests.support import error_of
from vigil.errors import ErrorCode
from vigil.kit.names import normal_name

COMPOSED = unicodedata.normalize("NFC", "café-ünïcode")
DECOMPOSED = unicodedata.normalize("NFD", COMPOSED)
# Zero-width space, zero-width joiner, left-to-right mark, right-to-left override, byte order
# mark, line separator, a control character, an unpaired surrogate.
INVISIBLE = ["\u200b", "\u200d", "\u200e", "\u202e", "\ufeff", "\u2028", "\x85", "\ud800"]


def stored(world: World) -> dict[str, str]:
    """Every table of the in-memory store, to compare before and after."""
    return {
        name: repr(table) for name, table in vars(world.store).items() if isinstance(table, dict)
    }


def test_the_two_spellings_differ_until_normalised() -> None:
    assert COMPOSED != DECOMPOSED
    assert normal_name(DECOMPOSED, 200) == COMPOSED
    for character in INVISIBLE:
        with pytest.raises(ValueError, match="control or invisible"):
            normal_name(f"a{character}b", 200)
    # Normalising may lengthen a name; the bound holds for what is stored.
    with pytest.raises(ValueError, match="longer than"):
        normal_name("\u0958" * 3, 4)


def test_both_spellings_of_a_scope_are_one_switch(world: World) -> None:
    _, secret = world.tenant.register(name="worker")
    world.call("heartbeat", secret, scope=DECOMPOSED, expect_within_seconds=30)
    world.advance(10)
    second = world.call("heartbeat", secret, scope=COMPOSED, expect_within_seconds=30)
    assert second["scope"] == COMPOSED
    assert second["generation"] == 1
    assert world.call("resume_packet", secret, scope=DECOMPOSED)["state"] == "armed"
    assert world.store.get_switch("acme", DECOMPOSED) is None


def test_both_spellings_of_a_resource_are_one_lease(world: World) -> None:
    _, first = world.tenant.register(name="first")
    _, second = world.tenant.register(name="second")
    lease = world.call("acquire_lease", first, resource=COMPOSED, scope=DECOMPOSED)["lease"]
    assert (lease["resource"], lease["scope"]) == (COMPOSED, COMPOSED)
    error = error_of(world.call, "acquire_lease", second, resource=DECOMPOSED)
    assert error.code is ErrorCode.VERSION_CONFLICT


def test_a_session_id_is_any_printable_text_in_one_spelling(world: World) -> None:
    agent, secret = world.tenant.register(name="worker")
    key = "q83v/+Lp0x9==" + " with spaces"
    for n, session_id in enumerate(("run 42/step b", "aGVsbG8+d29ybGQ/Pz8=", DECOMPOSED)):
        beat = world.call(
            "session_heartbeat", secret, sessionId=session_id, idempotencyKey=f"{key} {n}"
        )
        assert beat["sessionId"] == unicodedata.normalize("NFC", session_id)
    replay = world.call("session_heartbeat", secret, sessionId=COMPOSED, idempotencyKey="k2")
    assert replay["sessionId"] == COMPOSED
    sessions = world.call("list_sessions")["sessions"]
    assert sorted(s["sessionId"] for s in sessions) == sorted(
        ["run 42/step b", "aGVsbG8+d29ybGQ/Pz8=", COMPOSED]
    )
    assert {s["owner"] for s in sessions} == {agent}


def test_an_idempotency_key_is_any_printable_text(world: World) -> None:
    _, secret = world.tenant.register(name="worker")
    key = "b64+/= key"
    first = world.call("acquire_lease", secret, resource="repo", idempotency_key=key)
    again = world.call("acquire_lease", secret, resource="repo", idempotency_key=key)
    assert first == again


@pytest.mark.parametrize("character", INVISIBLE, ids=[f"U+{ord(c):04X}" for c in INVISIBLE])
def test_a_name_with_an_invisible_character_is_refused_and_changes_nothing(
    world: World, character: str
) -> None:
    _, secret = world.tenant.register(name="worker")
    name = f"job{character}1"
    calls: list[tuple[str, dict[str, Any]]] = [
        ("heartbeat", {"scope": name, "expect_within_seconds": 30}),
        ("acquire_lease", {"resource": name}),
        ("acquire_lease", {"resource": "repo", "scope": name}),
        ("session_heartbeat", {"sessionId": name, "idempotencyKey": "k"}),
        ("session_heartbeat", {"sessionId": "s", "idempotencyKey": name}),
        ("report_progress", {"scope": name, "progress": {}}),
        ("register", {"kind": "agent", "name": name}),
    ]
    before = stored(world)
    for tool, arguments in calls:
        caller = world.tenant.operator_secret if tool == "register" else secret
        error = error_of(world.call, tool, caller, **arguments)
        assert error.code is ErrorCode.INVALID_ARGUMENT, tool
    assert stored(world) == before


def test_a_notify_address_without_queue_alert_is_accepted_and_unused(world: World) -> None:
    _, secret = world.tenant.register(name="worker")
    watcher, watcher_secret = world.tenant.register(name="watcher")
    beat = world.call(
        "heartbeat",
        secret,
        scope="job",
        expect_within_seconds=5,
        notify_address=f"agent:{watcher}",
    )
    assert beat["state"] == "armed"
    world.advance(6)
    world.run_alarms()
    assert world.call("resume_packet", secret, scope="job")["death"]["actions"] == ["mark_failed"]
    assert world.call("inbox_poll", watcher_secret)["deliveries"] == []
