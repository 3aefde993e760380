"""How an approval is decided when more than one person may decide it, and when nobody does: a
quorum of approvals frozen at ask time, votes recorded once each with their voter, reason and
the surface they came through, a denial that closes it unless the policy asks for more, a
reason required on a denial, a denial when the deadline passes for a request that asked for
one; and the audit of each vote."""

from __future__ import annotations

from typing import Any

import pytest

from tests.liveness_support import World
from tests.support import error_of
from vigil.clock import ManualClock
from vigil.errors import ErrorCode, VigilError
from vigil.kit.principals import Surface
from vigil.store import Store

DEPLOY = {"op": "deploy", "service": "checkout"}


class Board:
    """ann asks; bob, cat (agents) and pat (a person) decide, in one chat."""

    def __init__(self, clock: ManualClock, store: Store | None = None) -> None:
        self.world = World(clock, store)
        self.clock = clock
        self.secrets: dict[str, str] = {"operator": self.world.tenant.operator_secret}
        self.ids: dict[str, str] = {}
        for label, kind in (
            ("ann", "agent"),
            ("bob", "agent"),
            ("cat", "agent"),
            ("pat", "person"),
        ):
            self.ids[label], self.secrets[label] = self.world.tenant.register(kind=kind, name=label)

    def call(self, tool: str, who: str, via: Surface = "rest", **arguments: Any) -> dict[str, Any]:
        return self.world.app.call(tool, arguments, self.secrets[who], via=via)

    def refused(self, tool: str, who: str, **arguments: Any) -> VigilError:
        return error_of(self.call, tool, who, **arguments)

    def ask(self, **arguments: Any) -> dict[str, Any]:
        targets = [
            {"kind": "agent", "id": self.ids["bob"]},
            {"kind": "agent", "id": self.ids["cat"]},
            {"kind": "person", "id": self.ids["pat"]},
        ]
        chat = self.call("start_chat", "ann", targets=targets, body="hi")
        arguments.setdefault("kind", "approval")
        arguments.setdefault("body", "deploy?")
        return self.call("ask", "ann", conversation_id=chat["conversation_id"], **arguments)

    def vote(self, who: str, request: dict[str, Any], outcome: str, **more: Any) -> dict[str, Any]:
        return self.call(
            "reply", who, id=request["id"], version=request["version"], outcome=outcome, **more
        )

    def get(self, request_id: str) -> dict[str, Any]:
        return self.call("get_request", "ann", id=request_id)


@pytest.fixture
def board(clock: ManualClock) -> Board:
    return Board(clock)


# -- quorum -------------------------------------------------------------------------------------
def test_two_of_three_is_redeemable_only_at_the_second_approval(board: Board) -> None:
    asked = board.ask(action=DEPLOY, policy={"quorum": 2})
    first = board.vote("bob", asked, "approved", via="cli")
    assert first["state"] == "open"
    assert first["response"] is None
    assert [c["kind"] for c in first["history"]] == ["asked", "voted"]
    early = board.refused("redeem_approval", "ann", id=asked["id"], action=DEPLOY)
    assert early.code is ErrorCode.VERSION_CONFLICT
    assert early.details["state"] == "open"

    second = board.vote("pat", first, "approved", via="console", answer="looks fine")
    assert second["state"] == "approved"
    assert second["response"]["by"] == board.ids["pat"]
    assert second["response"]["via"] == "console"
    history = second["history"]
    assert [c["kind"] for c in history] == ["asked", "voted", "replied"]
    assert [c["by"] for c in history[1:]] == [board.ids["bob"], board.ids["pat"]]
    assert [c["outcome"] for c in history[1:]] == ["approved", "approved"]
    assert [c["via"] for c in history[1:]] == ["cli", "console"]
    assert history[2]["reason"] == "looks fine"

    intent = board.call("redeem_approval", "ann", id=asked["id"], action=DEPLOY)
    assert board.call("redeem_approval", "ann", id=asked["id"], action=DEPLOY) == intent
    detail = board.get(asked["id"])
    assert detail["policy"] == {
        "quorum": 2,
        "denials": 1,
        "deny_on_timeout": False,
        "reason_on_deny": False,
        "escalate_after_seconds": None,
        "escalate_to": None,
        "editable": None,
    }


def revoke(board: Board, who: str) -> None:
    version = board.call("whoami", who)["principal"]["version"]
    board.call("revoke_principal", "operator", principal_id=board.ids[who], version=version)


def test_an_approval_by_a_voter_revoked_since_does_not_count(board: Board) -> None:
    """A voter's credential revoked after it approved (stolen, say): its approval no longer
    counts toward the quorum, and the request is decided by those who still stand."""
    asked = board.ask(action=DEPLOY, policy={"quorum": 2})
    first = board.vote("bob", asked, "approved")
    revoke(board, "bob")
    second = board.vote("cat", first, "approved")
    assert second["state"] == "open"  # bob's approval is withdrawn: one of two
    third = board.vote("pat", second, "approved")
    assert third["state"] == "approved"
    assert [c["by"] for c in third["history"][1:]] == [board.ids[w] for w in ("bob", "cat", "pat")]


def test_a_quorum_out_of_reach_once_voters_are_revoked_is_denied(board: Board) -> None:
    asked = board.ask(action=DEPLOY, policy={"quorum": "all"})
    first = board.vote("bob", asked, "approved")
    revoke(board, "cat")  # cannot vote now: "all" three can never approve
    second = board.vote("pat", first, "approved")
    assert second["state"] == "denied"
    refused = board.refused("redeem_approval", "ann", id=asked["id"], action=DEPLOY)
    assert refused.code is ErrorCode.VERSION_CONFLICT


def test_a_denial_by_a_voter_revoked_since_stands(board: Board) -> None:
    asked = board.ask(action=DEPLOY, policy={"quorum": 2, "denials": 2})
    first = board.vote("bob", asked, "denied")
    revoke(board, "bob")
    second = board.vote("cat", first, "denied")
    assert second["state"] == "denied"


def test_by_default_one_denial_closes_a_quorum_request(board: Board) -> None:
    asked = board.ask(action=DEPLOY, policy={"quorum": 2})
    first = board.vote("bob", asked, "approved")
    denied = board.vote("cat", first, "denied", answer="not today")
    assert denied["state"] == "denied"
    assert denied["response"]["answer"] == "not today"
    late = board.refused(
        "reply", "pat", id=asked["id"], version=denied["version"], outcome="approved"
    )
    assert late.details["state"] == "denied"


def test_a_policy_may_ask_for_more_denials_and_closes_when_the_quorum_cannot_be_met(
    board: Board,
) -> None:
    asked = board.ask(policy={"quorum": "all", "denials": 2})
    assert board.get(asked["id"])["policy"]["quorum"] == 3
    # With one denial of three, all three can no longer approve: it is denied at once.
    assert board.vote("bob", asked, "denied")["state"] == "denied"
    asked_two = board.ask(policy={"quorum": 2, "denials": 2})
    kept = board.vote("bob", asked_two, "denied")
    assert kept["state"] == "open"
    closed = board.vote("cat", kept, "denied")
    assert closed["state"] == "denied"


def test_all_is_closed_by_the_first_denial_that_makes_it_unreachable(board: Board) -> None:
    asked = board.ask(policy={"quorum": "all", "denials": 3})
    approved = board.vote("bob", asked, "approved")
    denied = board.vote("cat", approved, "denied")
    assert denied["state"] == "denied"


def test_a_voter_votes_once_the_same_vote_again_changes_nothing(board: Board) -> None:
    asked = board.ask(policy={"quorum": 2})
    first = board.vote("bob", asked, "approved")
    again = board.vote("bob", asked, "approved")
    assert again == first
    changed = board.refused("reply", "bob", id=asked["id"], version=2, outcome="denied")
    assert changed.code is ErrorCode.VERSION_CONFLICT
    assert changed.details["vote"] == "approved"
    assert board.get(asked["id"])["version"] == 2


def test_a_vote_at_a_version_only_other_votes_moved_still_counts(board: Board) -> None:
    asked = board.ask(policy={"quorum": 2})
    board.vote("bob", asked, "approved")
    # pat read version 1, before bob's vote: what pat decides on has not changed.
    decided = board.vote("pat", asked, "approved")
    assert decided["state"] == "approved"


def test_a_policy_that_cannot_be_met_or_is_not_an_approvals_is_refused(board: Board) -> None:
    for policy, kind in (({"quorum": 4}, "approval"), ({"denials": 4}, "approval")):
        refused = board.refused(
            "ask", "ann", target={"kind": "agent", "id": board.ids["bob"]}, kind=kind, policy=policy
        )
        assert refused.code is ErrorCode.INVALID_ARGUMENT
    question = board.refused(
        "ask",
        "ann",
        target={"kind": "agent", "id": board.ids["bob"]},
        policy={"deny_on_timeout": True},
    )
    assert question.code is ErrorCode.INVALID_ARGUMENT


# -- a reason on denial -------------------------------------------------------------------------
def test_a_denial_without_its_reason_is_refused_when_the_policy_asks_for_one(board: Board) -> None:
    asked = board.ask(policy={"reason_on_deny": True})
    for answer in (None, "  ", {"why": "x"}):
        more = {} if answer is None else {"answer": answer}
        refused = board.refused("reply", "bob", id=asked["id"], version=1, outcome="denied", **more)
        assert refused.code is ErrorCode.INVALID_ARGUMENT
    assert board.get(asked["id"])["version"] == 1
    denied = board.vote("bob", asked, "denied", answer="the freeze")
    assert denied["state"] == "denied"
    assert denied["response"]["answer"] == "the freeze"


# -- when nobody answers ------------------------------------------------------------------------
def test_deny_on_timeout_ends_denied_for_timeout_made_by_the_timer(board: Board) -> None:
    asked = board.ask(action=DEPLOY, expires_in_seconds=60, policy={"deny_on_timeout": True})
    board.clock.advance(60)
    assert board.get(asked["id"])["state"] == "denied"
    board.world.run_alarms()
    final = board.get(asked["id"])
    assert final["state"] == "denied"
    assert final["response"]["outcome"] == "denied"
    assert final["response"]["answer"] == "timeout"
    assert final["response"]["by"] is None
    last = final["history"][-1]
    assert (last["kind"], last["by"], last["outcome"], last["reason"]) == (
        "timed_out",
        None,
        "denied",
        "timeout",
    )
    refused = board.refused("redeem_approval", "ann", id=asked["id"], action=DEPLOY)
    assert refused.details["state"] == "denied"


def test_without_deny_on_timeout_an_unanswered_request_stays_expired(board: Board) -> None:
    asked = board.ask(expires_in_seconds=60, policy={"quorum": 2})
    board.vote("bob", asked, "approved")
    board.clock.advance(60)
    board.world.run_alarms()
    assert board.get(asked["id"])["state"] == "expired"


# -- who decided, from where --------------------------------------------------------------------
def test_every_vote_is_audited_with_the_surface_it_came_through(board: Board) -> None:
    asked = board.ask(policy={"quorum": 2})
    first = board.vote("bob", asked, "approved", via="mcp")
    board.vote("pat", first, "approved", via="console")
    events = board.call("list_audit_events", "operator")["events"]
    votes = sorted((e for e in events if e["action"] == "reply"), key=lambda e: e["after_version"])
    assert [(e["actor"], e["via"], e["target"], e["after_version"]) for e in votes] == [
        (board.ids["bob"], "mcp", asked["id"], 2),
        (board.ids["pat"], "console", asked["id"], 3),
    ]
    assert all(e["target_kind"] == "request" for e in votes)


def test_a_single_decision_says_its_surface(board: Board) -> None:
    asked = board.ask()
    decided = board.vote("pat", asked, "approved", via="cli")
    assert decided["response"]["via"] == "cli"
    assert decided["history"][-1]["via"] == "cli"
    assert decided["history"][0]["via"] == "rest"
