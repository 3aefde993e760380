"""Claiming and routing: a person of a request's audience takes it in hand for a while (others
see who has it, and it leaves their waiting queue; the claim expires), or releases it; an
operator's routing rules assign new requests, by asker, kind and action op, to the first of
some people in the audience or to the least recently assigned of a group. Each claim, release
and assignment is in the history and the audit. Races are injected: two claims at once, two
routed asks at once. On the in-memory store and on DynamoDB (moto)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.test_request_decisions import Board, revoke
from vigil.clock import ManualClock
from vigil.errors import ErrorCode
from vigil.store import Store

PAY = {"op": "pay", "vendor": "acme-hosting", "amount": 500}


@pytest.fixture
def board(clock: ManualClock, store: Store) -> Board:
    found = Board(clock, store)
    found.ids["sue"], found.secrets["sue"] = found.world.tenant.register(kind="person", name="sue")
    return found


def ask_people(board: Board, **arguments: Any) -> dict[str, Any]:
    """ann asks pat and sue (people) and bob (an agent)."""
    targets = [
        {"kind": "person", "id": board.ids["pat"]},
        {"kind": "person", "id": board.ids["sue"]},
        {"kind": "agent", "id": board.ids["bob"]},
    ]
    chat = board.call("start_chat", "ann", targets=targets, body="hi")
    arguments.setdefault("kind", "approval")
    return board.call("ask", "ann", conversation_id=chat["conversation_id"], **arguments)


def waiting(board: Board, who: str) -> list[str]:
    found = board.call("request_status", who, waiting=True)["requests"]
    return [r["id"] for r in found]


def test_a_claim_shows_who_has_it_hides_it_from_others_and_expires(
    board: Board, clock: ManualClock
) -> None:
    asked = ask_people(board, action=PAY)
    assert asked["id"] in waiting(board, "sue")
    claimed = board.call("claim_request", "pat", id=asked["id"], minutes=10)
    assert claimed["claim"]["by"] == board.ids["pat"]
    seen = board.get(asked["id"])
    assert seen["claim"]["by"] == board.ids["pat"]
    change = seen["history"][-1]
    assert (change["kind"], change["by"], change["claim"]["by"]) == (
        "claimed",
        board.ids["pat"],
        board.ids["pat"],
    )
    assert asked["id"] in waiting(board, "pat")
    assert asked["id"] not in waiting(board, "sue")
    # A claim never stops a decision, nor makes a reply read before it stale.
    board.clock.advance(1)
    clock.advance(600)
    assert "claim" not in board.get(asked["id"])
    assert asked["id"] in waiting(board, "sue")
    decided = board.vote("sue", asked, "approved")
    assert decided["state"] == "approved"
    events = board.call("list_audit_events", "operator")["events"]
    assert [(e["action"], e["actor"]) for e in events if e["action"] == "claim"] == [
        ("claim", board.ids["pat"])
    ]


def test_two_claims_at_once_have_one_holder(board: Board) -> None:
    asked = ask_people(board)
    board.call("claim_request", "pat", id=asked["id"])
    refused = board.refused("claim_request", "sue", id=asked["id"])
    assert refused.code is ErrorCode.VERSION_CONFLICT
    assert refused.details["claimed_by"] == board.ids["pat"]
    # Released, it is anyone's to claim; releasing what one does not hold changes nothing.
    before = board.get(asked["id"])["version"]
    assert board.call("claim_request", "sue", id=asked["id"], release=True)["version"] == before
    board.call("claim_request", "pat", id=asked["id"], release=True)
    assert board.call("claim_request", "sue", id=asked["id"])["claim"]["by"] == board.ids["sue"]


def test_a_claim_racing_another_is_decided_by_the_version(
    board: Board, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = ask_people(board)
    store = board.world.store
    read = store.get_request
    raced: list[bool] = []

    def racing(*args: Any) -> Any:
        found = read(*args)
        if not raced:
            raced.append(True)
            board.call("claim_request", "sue", id=asked["id"])  # commits between read and write
        return found

    monkeypatch.setattr(store, "get_request", racing)
    refused = board.refused("claim_request", "pat", id=asked["id"])
    monkeypatch.undo()
    assert refused.code is ErrorCode.VERSION_CONFLICT
    assert board.get(asked["id"])["claim"]["by"] == board.ids["sue"]


@pytest.mark.parametrize("who", ["bob", "ann", "operator"])
def test_only_a_person_of_the_audience_claims(board: Board, who: str) -> None:
    asked = ask_people(board)
    refused = board.refused("claim_request", who, id=asked["id"])
    assert refused.code in (ErrorCode.FORBIDDEN, ErrorCode.NOT_FOUND)
    assert "claim" not in board.get(asked["id"])


def test_claims_are_bounded(board: Board) -> None:
    asked = ask_people(board)
    for _ in range(3):
        board.call("claim_request", "pat", id=asked["id"])
        board.call("claim_request", "pat", id=asked["id"], release=True)
    refused = board.refused("claim_request", "pat", id=asked["id"])
    assert refused.code is ErrorCode.LIMIT_EXCEEDED


def routing(board: Board, rules: list[dict[str, Any]]) -> dict[str, Any]:
    current = board.call("routing_rules", "operator")
    return board.call("routing_rules", "operator", rules=rules, version=current["version"])


def test_a_rule_assigns_to_the_first_of_its_people_in_the_audience(board: Board) -> None:
    outsider, _ = board.world.tenant.register(kind="person", name="ola")
    set_ = routing(board, [{"op": "pay", "to": [outsider, board.ids["sue"]], "minutes": 5}])
    assert set_["version"] == 1
    assert "with op 'pay'" in set_["rules"][0]["said"]
    asked = ask_people(board, action=PAY)
    assert (asked["claim"]["by"], asked["claim"]["rule"]) == (board.ids["sue"], 1)
    change = asked["history"][-1]
    assert (change["kind"], change["by"]) == ("assigned", None)
    assert asked["id"] not in waiting(board, "pat")
    # Another op, or a question, matches no rule.
    other = ask_people(board, action={**PAY, "op": "refund"})
    assert "claim" not in other
    events = board.call("list_audit_events", "operator")["events"]
    assert [e["action"] for e in events if e["target_kind"] == "routing"] == ["route"]


def test_least_recent_takes_turns_and_skips_the_revoked(board: Board) -> None:
    routing(board, [{"to": [board.ids["pat"], board.ids["sue"]], "least_recent": True}])
    holders = [ask_people(board)["claim"]["by"] for _ in range(4)]
    assert holders == [board.ids[p] for p in ("pat", "sue", "pat", "sue")]
    revoke(board, "pat")
    ask = {
        "kind": "approval",
        "conversation_id": board.get(waiting(board, "sue")[0])["conversation_id"],
    }
    assert board.call("ask", "ann", **ask)["claim"]["by"] == board.ids["sue"]


def test_two_routed_asks_at_once_take_two_people(
    board: Board, monkeypatch: pytest.MonkeyPatch
) -> None:
    routing(board, [{"to": [board.ids["pat"], board.ids["sue"]], "least_recent": True}])
    store = board.world.store
    read = store.get_assignments
    other: list[dict[str, Any]] = []

    def racing(*args: Any) -> Any:
        found = read(*args)
        if not other:
            other.append({})
            other[0] = ask_people(board)  # another routed ask commits between read and write
        return found

    monkeypatch.setattr(store, "get_assignments", racing)
    first = ask_people(board)
    monkeypatch.undo()
    assert {first["claim"]["by"], other[0]["claim"]["by"]} == {board.ids["pat"], board.ids["sue"]}


@pytest.mark.parametrize(
    ("who", "rules", "version", "code"),
    [
        ("pat", [], 0, ErrorCode.FORBIDDEN),
        ("operator", [{"to": ["per_aaaaaaaaaaaaaaaa"]}], 0, ErrorCode.INVALID_ARGUMENT),
        ("operator", [], 3, ErrorCode.VERSION_CONFLICT),
    ],
)
def test_bad_routing_is_refused_and_changes_nothing(
    board: Board, who: str, rules: list[dict[str, Any]], version: int, code: ErrorCode
) -> None:
    refused = board.refused("routing_rules", who, rules=rules, version=version)
    assert refused.code is code
    assert board.call("routing_rules", "operator") == {"rules": [], "version": 0}


def test_claiming_again_extends_but_a_retry_changes_nothing(
    board: Board, clock: ManualClock
) -> None:
    asked = ask_people(board)
    first = board.call("claim_request", "pat", id=asked["id"], minutes=30)
    clock.advance(20)
    assert board.call("claim_request", "pat", id=asked["id"], minutes=30) == first
    clock.advance(600)
    later = board.call("claim_request", "pat", id=asked["id"], minutes=30)
    assert later["version"] == first["version"] + 1
    assert later["claim"]["until"] > first["claim"]["until"]


def test_one_who_voted_neither_claims_nor_is_assigned(board: Board) -> None:
    # pat's standing approval votes at ask; the rule then passes over pat to sue.
    granted = ask_people(board, action=PAY)
    board.vote("pat", granted, "approved", standing={"hours": 1})
    routing(board, [{"op": "pay", "to": [board.ids["pat"], board.ids["sue"]]}])
    asked = ask_people(board, action=PAY, policy={"quorum": 2})
    assert [c["kind"] for c in asked["history"]] == ["asked", "voted", "assigned"]
    assert asked["claim"]["by"] == board.ids["sue"]
    assert asked["id"] in waiting(board, "sue")
    refused = board.refused("claim_request", "pat", id=asked["id"])
    assert refused.code is ErrorCode.VERSION_CONFLICT
    events = board.call("list_audit_events", "operator")["events"]
    assigned = [e for e in events if e["action"] == "assign"]
    assert [(e["actor"], e["target"]) for e in assigned] == [(None, asked["id"])]


def test_the_holder_can_always_release(board: Board, clock: ManualClock) -> None:
    asked = ask_people(board)
    for _ in range(2):
        board.call("claim_request", "pat", id=asked["id"])
        board.call("claim_request", "pat", id=asked["id"], release=True)
    board.call("claim_request", "pat", id=asked["id"], minutes=5)
    clock.advance(120)
    extend = board.refused("claim_request", "pat", id=asked["id"], minutes=30)
    assert extend.code is ErrorCode.LIMIT_EXCEEDED
    released = board.call("claim_request", "pat", id=asked["id"], release=True)
    assert released["claim"] is None
    assert asked["id"] in waiting(board, "sue")


def test_a_replacement_is_routed_as_a_new_ask_is(board: Board) -> None:
    routing(board, [{"to": [board.ids["sue"]]}])
    asked = ask_people(board)
    assert asked["claim"]["by"] == board.ids["sue"]
    replaced = board.call(
        "replace_request",
        "ann",
        id=asked["id"],
        version=asked["version"],
        body="again",
        idempotency_key="again",
    )
    assert replaced["replacement"]["claim"]["by"] == board.ids["sue"]
    assert replaced["replacement"]["id"] not in waiting(board, "pat")


def test_rules_set_at_once_by_two_operators_have_one_outcome(
    board: Board, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = board.world.store
    read = store.get_routing
    raced: list[bool] = []

    def racing(*args: Any) -> Any:
        found = read(*args)
        if not raced:
            raced.append(True)
            board.call("routing_rules", "operator", rules=[{"to": [board.ids["sue"]]}], version=0)
        return found

    monkeypatch.setattr(store, "get_routing", racing)
    refused = board.refused(
        "routing_rules", "operator", rules=[{"to": [board.ids["pat"]]}], version=0
    )
    monkeypatch.undo()
    assert refused.code is ErrorCode.VERSION_CONFLICT
    assert board.call("routing_rules", "operator")["rules"][0]["to"] == [board.ids["sue"]]
