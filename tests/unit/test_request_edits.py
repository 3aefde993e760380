"""Edit before approve: an approval's asker names the members of its action an approver may
change (``editable``); an approver approves with ``edits``, and the action becomes the edited
one, which is what redeem_approval must present. The history says who changed what from what;
the asker's request.answered says it was edited. An edit is a new action: the votes cast on the
old one count no more, and a reply made against the version before the edit is stale. Races
are injected by replying at the same version, in either order."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.unit.test_request_decisions import Board
from vigil.clock import ManualClock
from vigil.errors import ErrorCode
from vigil.notifications.summary import summarise

PAY = {"op": "pay", "vendor": "acme-hosting", "amount": 500, "currency": "EUR"}


@pytest.fixture
def board(clock: ManualClock) -> Board:
    return Board(clock)


def redeem(board: Board, request_id: str, action: dict[str, Any]) -> dict[str, Any]:
    return board.call("redeem_approval", "ann", id=request_id, action=action)


def test_an_approver_edits_an_editable_member_and_the_edited_action_is_redeemed(
    board: Board,
) -> None:
    asked = board.ask(action=PAY, editable=["amount"])
    approved = board.vote("pat", asked, "approved", via="console", edits={"amount": 300})
    assert approved["state"] == "approved"
    assert approved["action"] == {**PAY, "amount": 300}
    change = approved["history"][-1]
    assert (change["kind"], change["by"], change["via"]) == ("replied", board.ids["pat"], "console")
    assert (change["edits"], change["edited_from"]) == ({"amount": 300}, {"amount": 500})
    detail = board.get(asked["id"])
    assert detail["policy"]["editable"] == ["amount"]
    # What was asked is not what was approved: only the edited action is redeemed.
    refused = board.refused("redeem_approval", "ann", id=asked["id"], action=PAY)
    assert refused.code is ErrorCode.INVALID_ARGUMENT
    assert "differs" in refused.message
    assert redeem(board, asked["id"], {**PAY, "amount": 300})["action"]["amount"] == 300


@pytest.mark.parametrize(
    ("asked_with", "outcome", "edits", "words"),
    [
        ({"editable": ["amount"]}, "approved", {"vendor": "evil"}, "not vendor"),
        ({}, "approved", {"amount": 1}, "none of its members"),
        ({"editable": ["amount"]}, "denied", {"amount": 1}, "edits go with an approval"),
        ({"editable": ["amount"]}, "approved", {"amount": "x" * 9000}, "out of bounds"),
    ],
)
def test_an_edit_the_asker_did_not_allow_is_refused_and_changes_nothing(
    board: Board, asked_with: dict[str, Any], outcome: str, edits: dict[str, Any], words: str
) -> None:
    asked = board.ask(action=PAY, **asked_with)
    refused = board.refused(
        "reply", "pat", id=asked["id"], version=asked["version"], outcome=outcome, edits=edits
    )
    assert refused.code is ErrorCode.INVALID_ARGUMENT
    assert words in refused.message, refused.message
    after = board.get(asked["id"])
    assert (after["state"], after["version"], after["action"]) == ("open", 1, PAY)


def test_editable_goes_with_an_action_and_may_let_a_member_be_added(board: Board) -> None:
    bare = board.refused("ask", "ann", **_ask_arguments(board, action=None, editable=["amount"]))
    assert bare.code is ErrorCode.INVALID_ARGUMENT
    asked = board.call("ask", "ann", **_ask_arguments(board, editable=["note"]))
    approved = board.vote("pat", asked, "approved", edits={"note": "net 30"})
    assert approved["action"] == {**PAY, "note": "net 30"}
    # The note was not there before: edited_from leaves it out, and people read "(none)".
    assert approved["history"][-1]["edited_from"] == {}
    from vigil.kit.canonical import edits_in_words

    said = edits_in_words(approved["history"][-1]["edited_from"], approved["history"][-1]["edits"])
    assert said == 'note: (none) → "net 30"'


def _ask_arguments(board: Board, **more: Any) -> dict[str, Any]:
    targets = [{"kind": "person", "id": board.ids["pat"]}]
    chat = board.call("start_chat", "ann", targets=targets, body="hi")
    arguments: dict[str, Any] = {
        "conversation_id": chat["conversation_id"],
        "kind": "approval",
        "body": "pay?",
        "action": PAY,
    }
    arguments.update(more)
    return {name: value for name, value in arguments.items() if value is not None}


def test_an_edit_sets_aside_the_votes_on_the_action_it_replaces(board: Board) -> None:
    asked = board.ask(action=PAY, editable=["amount"], policy={"quorum": 2})
    first = board.vote("bob", asked, "approved")
    edited = board.vote("pat", first, "approved", edits={"amount": 300})
    # bob approved 500, not 300: only pat's approval counts, and the request is still open.
    assert edited["state"] == "open"
    assert edited["action"]["amount"] == 300
    # bob's view was before the edit: stale, and bob learns what changed before voting again.
    stale = board.refused(
        "reply", "bob", id=asked["id"], version=first["version"], outcome="approved"
    )
    assert stale.code is ErrorCode.VERSION_CONFLICT
    again = board.vote("bob", edited, "approved")
    assert again["state"] == "approved"
    assert again["action"]["amount"] == 300


def test_an_edit_racing_a_vote_has_one_outcome_whichever_commits_first(board: Board) -> None:
    # The edit first: the vote made against the version before it is refused as stale.
    asked = board.ask(action=PAY, editable=["amount"], policy={"quorum": 2})
    board.vote("pat", asked, "approved", edits={"amount": 300})
    late = board.refused("reply", "bob", id=asked["id"], version=1, outcome="approved")
    assert late.code is ErrorCode.VERSION_CONFLICT
    assert board.get(asked["id"])["state"] == "open"

    # The vote first: the edit after it still holds (votes move no version a reply is
    # stale at), and the vote, cast on the old action, no longer counts.
    asked = board.ask(action=PAY, editable=["amount"], policy={"quorum": 2})
    board.vote("bob", asked, "approved")
    edited = board.vote("pat", asked, "approved", edits={"amount": 300})
    assert (edited["state"], edited["action"]["amount"]) == ("open", 300)


def test_a_retried_edit_is_answered_as_it_was(board: Board) -> None:
    asked = board.ask(action=PAY, editable=["amount", "currency"])
    edits = {"amount": 300, "currency": "EUR"}  # the currency unchanged
    first = board.vote("pat", asked, "approved", edits=edits)
    again = board.vote("pat", asked, "approved", edits=edits)
    assert again == first
    assert first["history"][-1]["edits"] == {"amount": 300}


def test_the_asker_and_the_channels_are_told_it_was_edited(board: Board) -> None:
    board.call(
        "create_channel",
        "operator",
        name="ops",
        url="https://receiver.example.com/hooks",
        rules=[{"events": ["request.answered"]}],
    )
    asked = board.ask(action=PAY, editable=["amount"])
    board.vote("pat", asked, "approved", edits={"amount": 300})
    from vigil.notifications.events import parse_event

    board.world.run_alarms()
    bodies = [body for url, body in board.world.posted if "receiver.example.com" in url]
    [answered] = [parse_event(body) for body in bodies]
    assert answered.data.asked_action == PAY  # type: ignore[union-attr]
    assert answered.data.action == {**PAY, "amount": 300}  # type: ignore[union-attr]
    summary = summarise(answered, None)
    assert summary.title.startswith("Approval approved with edits")
    assert ("Edited", "amount: 500 → 300") in summary.fields


def test_a_replacement_asks_the_action_as_its_asker_asked_it(board: Board) -> None:
    asked = board.ask(action=PAY, editable=["amount"], policy={"quorum": 2})
    edited = board.vote("pat", asked, "approved", edits={"amount": 300})
    replaced = board.call(
        "replace_request",
        "ann",
        id=asked["id"],
        version=edited["version"],
        body="pay, please?",
        idempotency_key="again",
    )
    assert replaced["replacement"]["action"] == PAY
    detail = board.get(replaced["replacement"]["id"])
    assert detail["policy"]["editable"] == ["amount"]


def test_the_next_approver_reads_who_edited_what_and_what_it_may_edit(board: Board) -> None:
    from vigil.people.render import request_text

    asked = board.ask(action=PAY, editable=["amount"], policy={"quorum": 2})
    board.vote("pat", asked, "approved", edits={"amount": 300})
    text = request_text(board.get(asked["id"]), board.clock.now(), names={board.ids["pat"]: "Pat"})
    pat = board.ids["pat"]
    assert f"Edited by Pat ({pat}) before approving: amount: 500 → 300" in text
    assert '"amount": 300' in text  # the action shown is the edited one, whole
    assert "You may change amount before approving" in text


def test_an_action_is_edited_a_bounded_number_of_times(board: Board) -> None:
    from vigil.requests.records import MAX_EDITS

    asked = board.ask(action=PAY, editable=["amount"], policy={"quorum": 2})
    current = asked
    for amount in range(1, MAX_EDITS + 1):
        current = board.vote("pat", current, "approved", edits={"amount": amount})
    # Edits that change nothing are a plain approval, limit or not.
    same = board.vote("cat", current, "approved", edits={"amount": MAX_EDITS})
    assert same["state"] == "approved"
    current = board.ask(action=PAY, editable=["amount"], policy={"quorum": 2})
    asked = current
    for amount in range(1, MAX_EDITS + 1):
        current = board.vote("pat", current, "approved", edits={"amount": amount})
    refused = board.refused(
        "reply",
        "bob",
        id=asked["id"],
        version=current["version"],
        outcome="approved",
        edits={"amount": 99},
    )
    assert refused.code is ErrorCode.LIMIT_EXCEEDED
    # The action as it stands can still be approved.
    assert board.vote("bob", current, "approved")["state"] == "approved"


def test_an_edit_is_told_apart_canonically_true_is_not_one(board: Board) -> None:
    action = {**PAY, "dry_run": True}
    asked = board.ask(action=action, editable=["dry_run"])
    approved = board.vote("pat", asked, "approved", edits={"dry_run": 1})
    # 1 is not true to a reader of the action: an edit, recorded and shown as one.
    assert approved["action"]["dry_run"] == 1
    assert approved["history"][-1]["edits"] == {"dry_run": 1}
    assert approved["history"][-1]["edited_from"] == {"dry_run": True}


def test_a_denial_stands_across_an_edit_and_a_denier_cannot_edit(board: Board) -> None:
    asked = board.ask(action=PAY, editable=["amount"], policy={"quorum": 2, "denials": 2})
    denied_once = board.vote("bob", asked, "denied")
    edited = board.vote("pat", denied_once, "approved", edits={"amount": 499})
    assert edited["state"] == "open"
    # bob's denial still counts: cat's is the second, and it denies the request.
    assert board.vote("cat", edited, "denied")["state"] == "denied"

    asked = board.ask(action=PAY, editable=["amount"], policy={"quorum": 2, "denials": 2})
    denied = board.vote("pat", asked, "denied")
    again = board.refused(
        "reply",
        "pat",
        id=asked["id"],
        version=denied["version"],
        outcome="approved",
        edits={"amount": 1},
    )
    assert again.code is ErrorCode.VERSION_CONFLICT
    assert board.get(asked["id"])["action"] == PAY


def test_an_empty_action_is_kept_as_asked_through_edits(board: Board) -> None:
    asked = board.ask(action={}, editable=["a"], policy={"quorum": 2})
    first = board.vote("pat", asked, "approved", edits={"a": 1})
    board.vote("bob", first, "approved", edits={"a": 2})
    replaced = board.call(
        "replace_request",
        "ann",
        id=asked["id"],
        version=board.get(asked["id"])["version"],
        body="again",
        idempotency_key="empty",
    )
    assert replaced["replacement"]["action"] == {}


def test_editable_names_are_bounded(board: Board) -> None:
    refused = board.refused("ask", "ann", **_ask_arguments(board, editable=["x" * 101]))
    assert refused.code is ErrorCode.INVALID_ARGUMENT


def test_an_action_over_its_size_is_refused_when_asked(board: Board) -> None:
    big = {f"k{n}": "x" * 1000 for n in range(10)}  # 10 KB of JSON, within the shape bounds
    refused = board.refused("ask", "ann", **_ask_arguments(board, action=big))
    assert refused.code is ErrorCode.INVALID_ARGUMENT
    assert "larger than 8192 bytes" in json.dumps(refused.details), refused.details


def test_the_asking_agent_is_told_the_action_was_edited(board: Board) -> None:
    asked = board.ask(action=PAY, editable=["amount"])
    board.vote("pat", asked, "approved", edits={"amount": 300})
    seen = board.get(asked["id"])
    assert (seen["asked_action"], seen["action"]["amount"]) == (PAY, 300)
    deliveries = board.call("inbox_poll", "ann", wait_seconds=0, max_messages=10)["deliveries"]
    [response] = [d for d in deliveries if d["kind"] == "response"]
    assert response["payload"]["asked_action"] == PAY
    assert response["payload"]["action"] == {**PAY, "amount": 300}
