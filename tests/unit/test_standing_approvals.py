"""Standing approvals: a person approving an action may grant, with that approval, a standing
approval of the same shape (its free members within bounds the person sets) for a time and a
number of uses. A later ask of that shape by the same agent (or any, if so granted) has the
person's vote cast at once, recorded as theirs via "standing" in the history and the audit, and
is redeemed once like any approval. Never wider than what the person could approve: only where
they are of the audience and still active, never across namespaces or other askers. Races are
injected between an ask's read of a standing approval and its commit. On the in-memory store
and on DynamoDB (moto)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.unit.test_request_decisions import Board, revoke
from vigil.clock import ManualClock
from vigil.errors import ErrorCode
from vigil.store import Store

PAY = {"op": "pay", "vendor": "acme-hosting", "amount": 500, "currency": "EUR"}
UP_TO_A_THOUSAND = {"hours": 8, "uses": 3, "free": {"amount": {"min": 0, "max": 1000}}}


@pytest.fixture
def board(clock: ManualClock, store: Store) -> Board:
    return Board(clock, store)


def grant(board: Board, terms: dict[str, Any], action: dict[str, Any] = PAY) -> dict[str, Any]:
    asked = board.ask(action=action)
    approved = board.vote("pat", asked, "approved", via="console", standing=terms)
    assert approved["state"] == "approved"
    return approved


def standing_of(board: Board, who: str = "pat", **more: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = board.call("list_standing_approvals", who, **more)["standing"]
    return found


def test_a_matching_ask_is_approved_at_once_by_the_grantor_and_redeemed_once(
    board: Board,
) -> None:
    granted = grant(board, UP_TO_A_THOUSAND)
    standing_id = granted["history"][-1]["standing"]
    assert standing_id.startswith("sta_")
    (listed,) = standing_of(board)
    assert (listed["id"], listed["asker"], listed["uses"], listed["used"]) == (
        standing_id,
        board.ids["ann"],
        3,
        0,
    )
    assert listed["shape"] == "this action, with amount a number from 0 to 1000"

    action = {**PAY, "amount": 750}
    asked = board.ask(action=action)
    assert asked["state"] == "approved"
    vote = asked["history"][-1]
    assert (vote["kind"], vote["by"], vote["via"], vote["standing"]) == (
        "replied",
        board.ids["pat"],
        "standing",
        standing_id,
    )
    assert asked["response"]["via"] == "standing"
    intent = board.call("redeem_approval", "ann", id=asked["id"], action=action)
    assert intent["state"] == "intended"
    other = board.refused("redeem_approval", "ann", id=asked["id"], action=PAY)
    assert other.code is ErrorCode.INVALID_ARGUMENT
    (listed,) = standing_of(board)
    assert listed["used"] == 1

    events = board.call("list_audit_events", "operator")["events"]
    said = {(e["action"], e["target_kind"], e["actor"], e["via"], e["target"]) for e in events}
    assert ("grant_standing", "standing", board.ids["pat"], "console", standing_id) in said
    assert ("reply", "request", board.ids["pat"], "standing", asked["id"]) in said


@pytest.mark.parametrize(
    "action",
    [
        {**PAY, "amount": 1500},  # a free member out of its bound
        {**PAY, "vendor": "evil-hosting"},  # a fixed member changed
        {**PAY, "note": "extra"},  # a member added
        {k: v for k, v in PAY.items() if k != "currency"},  # a member missing
        {**PAY, "amount": "500"},  # text where a number is bound
    ],
)
def test_an_ask_of_another_shape_stays_open(board: Board, action: dict[str, Any]) -> None:
    grant(board, UP_TO_A_THOUSAND)
    asked = board.ask(action=action)
    assert (asked["state"], len(asked["history"])) == ("open", 1)
    assert standing_of(board)[0]["used"] == 0


def test_it_answers_only_its_asker_unless_granted_for_any(board: Board) -> None:
    grant(board, {"hours": 1})
    # bob asks pat the same action: pat's standing approval was for ann's asks.
    targets = [{"kind": "person", "id": board.ids["pat"]}]
    chat = board.call("start_chat", "bob", targets=targets, body="hi")
    ask = {"conversation_id": chat["conversation_id"], "kind": "approval", "action": PAY}
    assert board.call("ask", "bob", **ask)["state"] == "open"
    deploy = {"op": "deploy", "service": "checkout"}
    grant(board, {"hours": 1, "any_asker": True}, action=deploy)
    assert board.call("ask", "bob", **{**ask, "action": deploy})["state"] == "approved"


def test_uses_and_hours_run_out(board: Board, clock: ManualClock) -> None:
    grant(board, {"hours": 2, "uses": 2})
    assert [board.ask(action=PAY)["state"] for _ in range(3)] == ["approved", "approved", "open"]
    assert standing_of(board) == []
    grant(board, {"hours": 2})
    assert board.ask(action=PAY)["state"] == "approved"
    clock.advance(2 * 3600)
    assert board.ask(action=PAY)["state"] == "open"
    assert standing_of(board) == []


def test_revoked_it_answers_no_ask_and_only_its_grantor_or_an_operator_revokes(
    board: Board,
) -> None:
    standing_id = grant(board, {"hours": 8})["history"][-1]["standing"]
    # Another person of the namespace neither sees nor revokes it.
    board.ids["sue"], board.secrets["sue"] = board.world.tenant.register(kind="person", name="sue")
    assert standing_of(board, "sue") == []
    hidden = board.refused("revoke_standing_approval", "sue", id=standing_id)
    assert hidden.code is ErrorCode.NOT_FOUND
    # Agents have no such tool; operators see every one.
    refused = board.refused("list_standing_approvals", "ann")
    assert refused.code is ErrorCode.FORBIDDEN
    assert [s["id"] for s in standing_of(board, "operator", everyone=True)] == [standing_id]
    revoked = board.call("revoke_standing_approval", "pat", id=standing_id)
    assert revoked["state"] == "revoked"
    # Revoking again answers it as it stands.
    assert board.call("revoke_standing_approval", "pat", id=standing_id) == revoked
    assert board.ask(action=PAY)["state"] == "open"
    events = board.call("list_audit_events", "operator")["events"]
    revocations = [e for e in events if e["action"] == "revoke_standing"]
    assert [(e["actor"], e["target"]) for e in revocations] == [(board.ids["pat"], standing_id)]


def test_a_grantor_no_longer_active_approves_nothing(board: Board) -> None:
    granted = grant(board, {"hours": 8})
    revoke(board, "pat")
    ask = {"conversation_id": granted["conversation_id"], "kind": "approval", "action": PAY}
    asked = board.call("ask", "ann", **ask)
    assert board.ids["pat"] in asked["audience"]
    assert (asked["state"], len(asked["history"])) == ("open", 1)


def test_a_standing_approval_is_one_vote_toward_a_quorum(board: Board) -> None:
    grant(board, {"hours": 8})
    asked = board.ask(action=PAY, policy={"quorum": 2})
    assert asked["state"] == "open"
    assert [(c["kind"], c["via"]) for c in asked["history"]] == [
        ("asked", "rest"),
        ("voted", "standing"),
    ]
    # pat voted already, through the standing approval: the same vote again changes nothing.
    again = board.vote("pat", asked, "approved")
    assert (again["state"], again["version"]) == ("open", asked["version"])
    decided = board.vote("bob", asked, "approved")
    assert decided["state"] == "approved"


@pytest.mark.parametrize(
    ("who", "terms", "outcome", "code", "words"),
    [
        ("bob", {"hours": 1}, "approved", ErrorCode.FORBIDDEN, "only a person"),
        ("pat", {"hours": 1}, "denied", ErrorCode.INVALID_ARGUMENT, "approval of an action"),
        ("pat", {"free": {"nope": {"min": 1}}}, "approved", ErrorCode.INVALID_ARGUMENT, "no nope"),
        ("pat", {"free": {"amount": {"max": 10}}}, "approved", ErrorCode.INVALID_ARGUMENT, "admit"),
        ("pat", {"free": {"amount": {"min": 5, "max": 1}}}, "approved", None, "min"),
        ("pat", {"free": {"amount": {"min": 1, "prefix": "a"}}}, "approved", None, "exactly one"),
        ("pat", {"hours": 0}, "approved", None, "hours"),
        ("pat", {"uses": 0}, "approved", None, "uses"),
    ],
)
def test_a_bad_grant_is_refused_and_changes_nothing(
    board: Board,
    who: str,
    terms: dict[str, Any],
    outcome: str,
    code: ErrorCode | None,
    words: str,
) -> None:
    asked = board.ask(action=PAY)
    refused = board.refused(
        "reply", who, id=asked["id"], version=asked["version"], outcome=outcome, standing=terms
    )
    assert refused.code is (code or ErrorCode.INVALID_ARGUMENT)
    assert words in str(refused.message) + str(refused.details), refused.message
    after = board.get(asked["id"])
    assert (after["state"], after["version"]) == ("open", 1)
    assert standing_of(board) == []


def test_one_of_and_prefix_bounds(board: Board) -> None:
    deploy = {"op": "deploy", "env": "staging", "ref": "release/1.2"}
    terms = {
        "hours": 1,
        "free": {"env": {"one_of": ["staging", "dev"]}, "ref": {"prefix": "release/"}},
    }
    grant(board, terms, action=deploy)
    assert board.ask(action={**deploy, "env": "dev", "ref": "release/1.3"})["state"] == "approved"
    assert board.ask(action={**deploy, "env": "prod"})["state"] == "open"
    assert board.ask(action={**deploy, "ref": "main"})["state"] == "open"


def _revoking_after_the_read(board: Board, standing_id: str) -> Callable[..., Any]:
    """The store's read of standing approvals, then a revocation of ``standing_id`` committed
    before the ask that read it commits: once."""
    store = board.world.store
    read = store.standing_for
    done: list[bool] = []

    def racing(*args: Any) -> Any:
        found = read(*args)
        if not done:
            done.append(True)
            board.call("revoke_standing_approval", "pat", id=standing_id)
        return found

    return racing


def test_a_revocation_racing_an_ask_that_matches_it_has_one_outcome(
    board: Board, monkeypatch: pytest.MonkeyPatch
) -> None:
    standing_id = grant(board, {"hours": 8})["history"][-1]["standing"]
    monkeypatch.setattr(
        board.world.store, "standing_for", _revoking_after_the_read(board, standing_id)
    )
    # The ask read the standing approval live; the revocation committed first: the ask's use
    # of it fails its condition, and the ask, tried again, finds it revoked and stays open.
    asked = board.ask(action=PAY)
    assert (asked["state"], len(asked["history"])) == ("open", 1)
    monkeypatch.undo()
    assert standing_of(board) == []
    events = board.call("list_audit_events", "operator")["events"]
    assert not [e for e in events if e["via"] == "standing"]


def test_two_asks_racing_for_the_last_use_approve_one(
    board: Board, monkeypatch: pytest.MonkeyPatch
) -> None:
    grant(board, {"hours": 8, "uses": 1})
    store = board.world.store
    read = store.standing_for
    second: list[dict[str, Any]] = []

    def racing(*args: Any) -> Any:
        found = read(*args)
        if not second:
            second.append({})
            second[0] = board.ask(action=PAY)  # another ask uses it between read and commit
        return found

    monkeypatch.setattr(store, "standing_for", racing)
    first = board.ask(action=PAY)
    monkeypatch.undo()
    assert sorted([first["state"], second[0]["state"]]) == ["approved", "open"]
    assert standing_of(board) == []


def test_any_asker_means_any_agent_not_a_person_or_a_service(board: Board) -> None:
    grant(board, {"hours": 1, "any_asker": True})
    for kind in ("person", "service"):
        board.ids[kind], board.secrets[kind] = board.world.tenant.register(kind=kind, name=kind)
        targets = [{"kind": "person", "id": board.ids["pat"]}]
        chat = board.call("start_chat", kind, targets=targets, body="hi")
        asked = board.call("ask", kind, conversation_id=chat["conversation_id"], action=PAY)
        assert (asked["kind"], asked["state"]) == ("approval", "open")


def test_a_retried_grant_is_answered_only_with_the_terms_it_granted(board: Board) -> None:
    asked = board.ask(action=PAY)
    first = board.vote("pat", asked, "approved", standing={"hours": 1})
    # The same reply again, granting the same: answered as it stands.
    assert board.vote("pat", asked, "approved", standing={"hours": 1}) == first
    # The same approval, claiming wider terms it did not grant: refused, nothing changes.
    for wider in ({"hours": 700}, {"hours": 1, "any_asker": True}, {"hours": 1, "uses": 2}):
        refused = board.refused(
            "reply", "pat", id=asked["id"], version=1, outcome="approved", standing=wider
        )
        assert refused.code is ErrorCode.VERSION_CONFLICT
    (kept,) = standing_of(board)
    assert (kept["asker"], kept["uses"]) == (board.ids["ann"], None)
    # An approval made without one is not made to have granted one by a retry.
    plain = board.ask(action={**PAY, "vendor": "other"})
    board.vote("pat", plain, "approved")
    refused = board.refused(
        "reply", "pat", id=plain["id"], version=1, outcome="approved", standing={"hours": 1}
    )
    assert refused.code is ErrorCode.VERSION_CONFLICT
    assert len(standing_of(board)) == 1


def test_bounds_larger_than_their_limit_are_refused(board: Board) -> None:
    asked = board.ask(action={f"m{i}": "x" for i in range(20)})
    free = {f"m{i}": {"one_of": ["x", "y" * 150]} for i in range(20)}
    refused = board.refused(
        "reply", "pat", id=asked["id"], version=1, outcome="approved", standing={"free": free}
    )
    assert refused.code is ErrorCode.INVALID_ARGUMENT
    assert "2048 bytes" in refused.message
    assert board.get(asked["id"])["state"] == "open"


def test_an_ask_approved_at_once_tells_the_channels_it_was_answered(board: Board) -> None:
    board.call(
        "create_channel",
        "operator",
        name="ops",
        url="https://receiver.example.com/hooks",
        rules=[{"events": ["request.answered"]}],
    )
    grant(board, {"hours": 1})
    asked = board.ask(action=PAY)
    from vigil.notifications.events import parse_event

    board.world.run_alarms()
    bodies = [body for url, body in board.world.posted if "receiver.example.com" in url]
    told = [parse_event(body).data for body in bodies]
    assert [(d.request_id, d.state, d.answered_by) for d in told][-1] == (  # type: ignore[union-attr]
        asked["id"],
        "approved",
        board.ids["pat"],
    )
