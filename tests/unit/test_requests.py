"""Requests at the service layer, on the in-memory store, queues and alarms: asking and the
request envelopes, typed replies and the response envelope, the audience fixed at ask time,
expiry on time through the alarm path and its race with a reply, listing, the open-requests
quota, redeeming an approval for exactly its action, execution reports, replacement and
blocking dependencies with their cycles."""

from __future__ import annotations

from typing import Any

import pytest

from tests.liveness_support import World
from tests.support import Tenant, error_of
from vigil.clock import ManualClock
from vigil.errors import ErrorCode, VigilError
from vigil.requests.records import MAX_HISTORY

DEPLOY = {"op": "deploy", "service": "checkout", "version": "1.2.3"}
ONE_DECIDES = {
    "quorum": 1,
    "denials": 1,
    "deny_on_timeout": False,
    "reason_on_deny": False,
    "escalate_after_seconds": None,
    "escalate_to": None,
    "editable": None,
}


class Desk:
    """A namespace with agents ann, bob and cat, a person pat, and the alarm path."""

    def __init__(self, clock: ManualClock) -> None:
        self.world = World(clock)
        self.clock = clock
        self.secrets: dict[str, str] = {"operator": self.world.tenant.operator_secret}
        self.ids: dict[str, str] = {"operator": self.world.tenant.operator.id}
        for label in ("ann", "bob", "cat"):
            self.add(label)
        self.add("pat", kind="person")

    def add(self, label: str, kind: str = "agent") -> str:
        principal_id, secret = self.world.tenant.register(kind=kind, name=label)
        self.ids[label], self.secrets[label] = principal_id, secret
        return principal_id

    def call(self, tool: str, who: str, **arguments: Any) -> dict[str, Any]:
        return self.world.call(tool, self.secrets[who], **arguments)

    def refused(self, tool: str, who: str, **arguments: Any) -> VigilError:
        return error_of(self.call, tool, who, **arguments)

    def target(self, label: str) -> dict[str, str]:
        principal_id = self.ids[label]
        kind = {"agt": "agent", "per": "person", "svc": "service"}[principal_id[:3]]
        return {"kind": kind, "id": principal_id}

    def ask(self, who: str, to: str, **arguments: Any) -> dict[str, Any]:
        """A request from ``who`` to ``to``, a millisecond after the one before: listings
        order requests by the moment they were asked."""
        self.clock.advance(0.001)
        arguments.setdefault("body", "may I?")
        return self.call("ask", who, target=self.target(to), **arguments)

    def inbox(self, label: str) -> list[dict[str, Any]]:
        got: list[dict[str, Any]] = []
        while True:
            page = self.call("receive", label, max_messages=10)["deliveries"]
            if not page:
                return got
            for delivery in page:
                self.call("acknowledge", label, id=delivery["id"], generation=1)
            got += page

    def get(self, who: str, request_id: str) -> dict[str, Any]:
        return self.call("get_request", who, id=request_id)


@pytest.fixture
def desk(clock: ManualClock) -> Desk:
    return Desk(clock)


# -- asking and replying ------------------------------------------------------------------
def test_a_question_reaches_its_agent_as_a_request_and_the_answer_comes_back(desk: Desk) -> None:
    asked = desk.ask("ann", "bob", body="which region?")
    assert asked["state"] == "open"
    assert asked["version"] == 1
    assert asked["kind"] == "question"
    assert asked["audience"] == [desk.ids["bob"]]

    (envelope,) = desk.inbox("bob")
    assert envelope["kind"] == "request"
    assert envelope["payload"]["request_id"] == asked["id"]
    assert envelope["payload"]["body"] == "which region?"

    answered = desk.call("reply", "bob", id=asked["id"], version=1, outcome="answered", answer="eu")
    assert answered["state"] == "answered"
    assert answered["version"] == 2
    assert answered["response"]["answer"] == "eu"
    assert answered["response"]["by"] == desk.ids["bob"]
    assert [c["kind"] for c in answered["history"]] == ["asked", "replied"]
    assert [c["by"] for c in answered["history"]] == [desk.ids["ann"], desk.ids["bob"]]

    (response,) = desk.inbox("ann")
    assert response["kind"] == "response"
    assert response["payload"]["request_id"] == asked["id"]
    assert response["payload"]["response"]["outcome"] == "answered"
    assert desk.get("ann", asked["id"]) == {**answered, "policy": ONE_DECIDES, "execution": None}


def test_the_first_outcome_stands_and_a_second_reply_is_told_the_final_state(
    desk: Desk,
) -> None:
    asked = desk.ask("ann", "pat", kind="approval", action=DEPLOY)
    desk.call("reply", "pat", id=asked["id"], version=1, outcome="denied")
    again = desk.refused("reply", "pat", id=asked["id"], version=2, outcome="approved")
    assert again.code is ErrorCode.VERSION_CONFLICT
    assert not again.retryable
    assert again.details["state"] == "denied"
    assert desk.get("ann", asked["id"])["state"] == "denied"


def test_a_stale_version_conflicts_and_changes_nothing(desk: Desk) -> None:
    asked = desk.ask("ann", "bob")
    stale = desk.refused("reply", "bob", id=asked["id"], version=2, outcome="answered")
    assert stale.code is ErrorCode.VERSION_CONFLICT
    assert stale.details["current_version"] == 1
    assert desk.get("ann", asked["id"]) == {**asked, "policy": ONE_DECIDES, "execution": None}


@pytest.mark.parametrize(
    ("kind", "wrong", "right"),
    [
        ("question", "approved", "answered"),
        ("approval", "answered", "approved"),
        ("task", "denied", "rejected"),
    ],
)
def test_the_outcome_must_be_one_of_the_kind(desk: Desk, kind: str, wrong: str, right: str) -> None:
    asked = desk.ask("ann", "bob", kind=kind)
    refused = desk.refused("reply", "bob", id=asked["id"], version=1, outcome=wrong)
    assert refused.code is ErrorCode.INVALID_ARGUMENT
    assert desk.call("reply", "bob", id=asked["id"], version=1, outcome=right)["state"] == right


def test_with_choices_the_answer_is_one_offered_string_exactly(desk: Desk) -> None:
    asked = desk.ask("ann", "bob", choices=["blue", "green"])
    for wrong in ("Blue", "blue ", None, ["blue"]):
        refused = desk.refused(
            "reply", "bob", id=asked["id"], version=1, outcome="answered", answer=wrong
        )
        assert refused.code is ErrorCode.INVALID_ARGUMENT
    done = desk.call("reply", "bob", id=asked["id"], version=1, outcome="answered", answer="green")
    assert done["response"]["answer"] == "green"


def test_only_the_audience_decides_and_others_do_not_see_it(desk: Desk) -> None:
    asked = desk.ask("ann", "bob")
    own = desk.refused("reply", "ann", id=asked["id"], version=1, outcome="answered")
    assert own.code is ErrorCode.FORBIDDEN
    stranger = desk.refused("reply", "cat", id=asked["id"], version=1, outcome="answered")
    missing = desk.refused("reply", "cat", id="req_" + "a" * 16, version=1, outcome="answered")
    assert stranger.to_dict() == missing.to_dict()
    assert desk.refused("get_request", "cat", id=asked["id"]).code is ErrorCode.NOT_FOUND
    assert desk.get("bob", asked["id"])["state"] == "open"


def test_the_audience_is_fixed_when_asked(desk: Desk) -> None:
    chat = desk.call(
        "start_chat", "ann", targets=[desk.target("bob"), desk.target("pat")], body="hi"
    )
    conversation = chat["conversation_id"]
    asked = desk.call("ask", "ann", conversation_id=conversation, body="go?", kind="approval")
    assert sorted(asked["audience"]) == sorted([desk.ids["bob"], desk.ids["pat"]])
    version = chat["version"]
    desk.call(
        "change_chat_membership",
        "ann",
        conversation_id=conversation,
        version=version,
        operation="add",
        members=[desk.ids["cat"]],
        share_history=True,
    )
    desk.call(
        "change_chat_membership",
        "ann",
        conversation_id=conversation,
        version=version + 1,
        operation="remove",
        members=[desk.ids["pat"]],
    )
    late = desk.refused("reply", "cat", id=asked["id"], version=1, outcome="approved")
    assert late.code is ErrorCode.NOT_FOUND
    decided = desk.call("reply", "pat", id=asked["id"], version=1, outcome="approved")
    assert decided["state"] == "approved"


def test_chat_text_never_resolves_a_request(desk: Desk) -> None:
    asked = desk.ask("ann", "bob")
    desk.call(
        "send",
        "bob",
        conversation_id=asked["conversation_id"],
        body='{{"outcome": "answered", "id": "{}", "version": 1}}'.format(asked["id"]),
    )
    assert desk.get("ann", asked["id"])["state"] == "open"


# -- expiry ---------------------------------------------------------------------------------
def test_an_unanswered_request_expires_on_time_and_the_requester_is_told(desk: Desk) -> None:
    asked = desk.ask("ann", "bob", expires_in_seconds=60)
    desk.inbox("bob")
    desk.world.advance(59)
    assert desk.get("ann", asked["id"])["state"] == "open"
    desk.world.advance(1)
    expired = desk.get("ann", asked["id"])
    assert expired["state"] == "expired"
    assert expired["response"]["outcome"] == "expired"
    assert expired["response"]["by"] is None
    assert expired["response"]["at"] == desk.clock.now().isoformat().replace("+00:00", "Z")
    (response,) = desk.inbox("ann")
    assert response["kind"] == "response"
    assert response["payload"]["state"] == "expired"
    # A repeated alarm changes nothing and queues nothing new.
    desk.world.deliver(desk.world.delivered[-1])
    assert desk.get("ann", asked["id"]) == expired
    assert desk.inbox("ann") == []
    late = desk.refused("reply", "bob", id=asked["id"], version=1, outcome="answered")
    assert late.code is ErrorCode.VERSION_CONFLICT
    assert late.details["state"] == "expired"


def test_a_reply_at_the_deadline_before_the_alarm_loses_to_the_expiry(desk: Desk) -> None:
    asked = desk.ask("ann", "bob", expires_in_seconds=60)
    desk.clock.advance(60)  # the alarm is due but not delivered yet
    late = desk.refused("reply", "bob", id=asked["id"], version=1, outcome="answered")
    assert late.code is ErrorCode.VERSION_CONFLICT
    assert late.details["state"] == "expired"
    assert desk.get("ann", asked["id"])["version"] == 2  # the expiry is recorded
    desk.world.run_alarms()
    assert desk.get("ann", asked["id"])["state"] == "expired"
    assert [e["payload"]["state"] for e in desk.inbox("ann")] == ["expired"]


def test_a_reply_just_before_the_deadline_wins_and_the_alarm_finds_nothing(desk: Desk) -> None:
    asked = desk.ask("ann", "bob", expires_in_seconds=60)
    desk.world.advance(59.9)
    desk.call("reply", "bob", id=asked["id"], version=1, outcome="answered")
    desk.world.advance(5)
    final = desk.get("ann", asked["id"])
    assert final["state"] == "answered"
    assert final["version"] == 2
    assert [e["payload"]["state"] for e in desk.inbox("ann")] == ["answered"]


def test_an_expired_request_reads_expired_even_before_its_alarm(desk: Desk) -> None:
    asked = desk.ask("ann", "bob", expires_in_seconds=10)
    desk.clock.advance(10)
    assert desk.get("ann", asked["id"])["state"] == "expired"


# -- listing and quota ----------------------------------------------------------------------
def test_request_status_lists_what_the_caller_asked_or_decides(desk: Desk) -> None:
    mine = desk.ask("ann", "bob", body="one")
    theirs = desk.ask("cat", "ann", body="two")
    desk.ask("cat", "bob", body="not ann's")
    desk.call("reply", "bob", id=mine["id"], version=1, outcome="answered")
    listed = desk.call("request_status", "ann")["requests"]
    assert [r["id"] for r in listed] == [mine["id"], theirs["id"]]
    open_only = desk.call("request_status", "ann", state="open")["requests"]
    assert [r["id"] for r in open_only] == [theirs["id"]]
    assert desk.call("request_status", "ann", blocking=True)["requests"] == []


def test_overseers_list_and_read_every_request_and_agents_do_not(desk: Desk) -> None:
    """People and operators see every request of their namespace (everyone), read any of
    them, and decide none outside the audience; an agent sees only its own."""
    to_bob = desk.ask("ann", "bob", body="one")
    to_cat = desk.ask("bob", "cat", body="two")
    for overseer in ("pat", "operator"):
        listed = desk.call("request_status", overseer, everyone=True)["requests"]
        assert [r["id"] for r in listed] == [to_bob["id"], to_cat["id"]], overseer
        assert desk.call("request_status", overseer)["requests"] == []
        assert desk.get(overseer, to_cat["id"])["body"] == "two"
        refused = desk.refused("reply", overseer, id=to_cat["id"], version=1, outcome="answered")
        assert refused.code is ErrorCode.FORBIDDEN
    assert desk.refused("request_status", "ann", everyone=True).code is ErrorCode.FORBIDDEN
    assert desk.refused("get_request", "ann", id=to_cat["id"]).code is ErrorCode.NOT_FOUND
    assert desk.get("cat", to_cat["id"])["version"] == 1
    # Another namespace's operator sees none of them.
    other = Tenant(desk.world.app, desk.clock, "globex")
    assert other.call("request_status", everyone=True)["requests"] == []
    assert error_of(other.call, "get_request", id=to_cat["id"]).code is ErrorCode.NOT_FOUND


def test_waiting_keeps_the_open_requests_awaiting_my_own_vote(desk: Desk) -> None:
    desk.add("sam", kind="person")
    chat = desk.call(
        "start_chat", "ann", targets=[desk.target("pat"), desk.target("sam")], body="hi"
    )
    both = desk.call(
        "ask",
        "ann",
        conversation_id=chat["conversation_id"],
        kind="approval",
        body="both of you?",
        policy={"quorum": 2},
    )
    alone = desk.ask("ann", "pat", body="only you")
    desk.ask("ann", "sam", body="not pat's")

    def waiting(who: str) -> list[str]:
        return [r["id"] for r in desk.call("request_status", who, waiting=True)["requests"]]

    assert waiting("pat") == [both["id"], alone["id"]]
    desk.call("reply", "pat", id=both["id"], version=1, outcome="approved")
    desk.call("reply", "pat", id=alone["id"], version=1, outcome="answered")
    assert waiting("pat") == []
    assert both["id"] in waiting("sam")
    assert waiting("ann") == []  # asking is not deciding


def test_request_status_pages_with_a_cursor_bound_to_its_filters(desk: Desk) -> None:
    asked = [desk.ask("ann", "bob", body=str(n))["id"] for n in range(55)]
    first = desk.call("request_status", "ann")
    assert len(first["requests"]) == 50
    assert first["next_cursor"]
    second = desk.call("request_status", "ann", cursor=first["next_cursor"])
    assert second["next_cursor"] is None
    listed = [r["id"] for r in first["requests"] + second["requests"]]
    assert listed == asked
    other = desk.refused("request_status", "ann", cursor=first["next_cursor"], state="open")
    assert other.code is ErrorCode.INVALID_ARGUMENT


def test_open_requests_are_a_namespace_quota(clock: ManualClock) -> None:
    from dataclasses import replace

    desk = Desk(clock)
    desk.world.app.quotas = replace(desk.world.app.quotas, open_requests=2)
    first = desk.ask("ann", "bob")
    desk.ask("ann", "bob")
    armed = list(desk.world.alarms.armed)
    full = desk.refused("ask", "ann", target=desk.target("bob"), body="third")
    assert desk.world.alarms.armed == armed
    assert full.code is ErrorCode.LIMIT_EXCEEDED
    assert full.details["quota"] == "open_requests"
    desk.call("reply", "bob", id=first["id"], version=1, outcome="answered")
    assert desk.ask("ann", "bob")["state"] == "open"


# -- approvals and executions ---------------------------------------------------------------
def approved(desk: Desk, action: dict[str, Any] | None = DEPLOY) -> dict[str, Any]:
    extra = {} if action is None else {"action": action}
    asked = desk.ask("ann", "pat", kind="approval", **extra)
    return desk.call("reply", "pat", id=asked["id"], version=1, outcome="approved")


def test_an_approval_redeems_for_one_intent_for_exactly_its_action(desk: Desk) -> None:
    request = approved(desk)
    intent = desk.call("redeem_approval", "ann", id=request["id"], action=DEPLOY)
    assert intent["state"] == "intended"
    assert intent["action"] == DEPLOY
    assert intent["request_id"] == request["id"]
    assert intent["proof"] is False
    # The same action, written otherwise, is the same action; a retry gets the same intent.
    reordered = {"version": "1.2.3", "service": "checkout", "op": "deploy"}
    assert desk.call("redeem_approval", "ann", id=request["id"], action=reordered) == intent
    other = {**DEPLOY, "version": "1.2.4"}
    refused = desk.refused("redeem_approval", "ann", id=request["id"], action=other)
    assert refused.code is ErrorCode.INVALID_ARGUMENT


def test_what_cannot_be_redeemed(desk: Desk) -> None:
    open_one = desk.ask("ann", "pat", kind="approval", action=DEPLOY)
    assert (
        desk.refused("redeem_approval", "ann", id=open_one["id"], action=DEPLOY).details["state"]
        == "open"
    )
    denied = desk.ask("ann", "pat", kind="approval", action=DEPLOY)
    desk.call("reply", "pat", id=denied["id"], version=1, outcome="denied")
    assert (
        desk.refused("redeem_approval", "ann", id=denied["id"], action=DEPLOY).details["state"]
        == "denied"
    )
    bare = approved(desk, action=None)
    refused = desk.refused("redeem_approval", "ann", id=bare["id"], action=DEPLOY)
    assert refused.code is ErrorCode.INVALID_ARGUMENT
    good = approved(desk)
    assert desk.refused("redeem_approval", "pat", id=good["id"], action=DEPLOY).code is (
        ErrorCode.FORBIDDEN
    )
    assert desk.refused("redeem_approval", "cat", id=good["id"], action=DEPLOY).code is (
        ErrorCode.NOT_FOUND
    )


def test_only_its_requester_redeems_an_approval_whatever_the_action_and_the_intent(
    desk: Desk,
) -> None:
    request = approved(desk)
    other = {**DEPLOY, "version": "1.2.4"}

    def approver_redeems() -> list[ErrorCode]:
        return [
            desk.refused("redeem_approval", "pat", id=request["id"], action=action).code
            for action in (DEPLOY, other)
        ]

    assert approver_redeems() == [ErrorCode.FORBIDDEN] * 2
    intent = desk.call("redeem_approval", "ann", id=request["id"], action=DEPLOY)
    assert approver_redeems() == [ErrorCode.FORBIDDEN] * 2
    desk.call("report_execution", "ann", id=intent["id"], state="started")
    assert approver_redeems() == [ErrorCode.FORBIDDEN] * 2
    assert desk.call("redeem_approval", "ann", id=request["id"], action=DEPLOY)["state"] == (
        "started"
    )


def test_an_expired_approval_never_yields_an_intent(desk: Desk) -> None:
    asked = desk.ask("ann", "pat", kind="approval", action=DEPLOY, expires_in_seconds=60)
    desk.world.advance(60)
    refused = desk.refused("redeem_approval", "ann", id=asked["id"], action=DEPLOY)
    assert refused.code is ErrorCode.VERSION_CONFLICT
    assert refused.details["state"] == "expired"
    assert desk.world.store.get_execution("acme", asked["id"]) is None


def test_an_approval_is_redeemed_only_until_its_deadline(desk: Desk) -> None:
    asked = desk.ask("ann", "pat", kind="approval", action=DEPLOY, expires_in_seconds=60)
    desk.call("reply", "pat", id=asked["id"], version=1, outcome="approved")
    desk.world.advance(60)
    assert desk.get("ann", asked["id"])["state"] == "approved"
    refused = desk.refused("redeem_approval", "ann", id=asked["id"], action=DEPLOY)
    assert refused.code is ErrorCode.VERSION_CONFLICT


def test_execution_reports_move_forward_and_final_states_never_change(desk: Desk) -> None:
    request = approved(desk)
    intent = desk.call("redeem_approval", "ann", id=request["id"], action=DEPLOY)
    started = desk.call("report_execution", "ann", id=intent["id"], state="started")
    assert started["state"] == "started"
    assert started["reported_by"] == desk.ids["ann"]
    done = desk.call(
        "report_execution", "ann", id=intent["id"], state="succeeded", result={"build": 7}
    )
    assert done["state"] == "succeeded"
    assert done["result"] == {"build": 7}
    assert [r["state"] for r in done["reports"]] == ["started", "succeeded"]
    # A retry of the same report is answered with the record as it stands.
    again = desk.call(
        "report_execution", "ann", id=intent["id"], state="succeeded", result={"build": 7}
    )
    assert again == done
    for state in ("failed", "started", "unknown"):
        refused = desk.refused("report_execution", "ann", id=intent["id"], state=state)
        assert refused.code is ErrorCode.VERSION_CONFLICT
        assert refused.details["state"] == "succeeded"
    assert desk.refused("report_execution", "pat", id=intent["id"], state="failed").code is (
        ErrorCode.FORBIDDEN
    )
    assert desk.refused("report_execution", "cat", id=intent["id"], state="failed").code is (
        ErrorCode.NOT_FOUND
    )
    assert desk.refused("report_execution", "ann", id="exe_nothing", state="failed").code is (
        ErrorCode.NOT_FOUND
    )


# -- replacing ------------------------------------------------------------------------------
def test_a_replacement_supersedes_the_request_and_keeps_its_terms(desk: Desk) -> None:
    asked = desk.ask("ann", "bob", kind="approval", action=DEPLOY, choices=["now", "later"])
    desk.inbox("bob")
    result = desk.call(
        "replace_request",
        "ann",
        id=asked["id"],
        version=1,
        body="may I, please?",
        idempotency_key="r1",
    )
    previous, replacement = result["previous"], result["replacement"]
    assert previous["state"] == "replaced"
    assert previous["replaced_by"] == replacement["id"]
    assert replacement["state"] == "open"
    assert replacement["version"] == 1
    assert replacement["replaces"] == asked["id"]
    assert replacement["body"] == "may I, please?"
    for kept in ("audience", "choices", "action", "kind", "conversation_id", "blocking"):
        assert replacement[kept] == asked[kept]
    (envelope,) = desk.inbox("bob")
    assert envelope["kind"] == "request"
    assert envelope["payload"]["request_id"] == replacement["id"]
    refused = desk.refused("reply", "bob", id=asked["id"], version=1, outcome="approved")
    assert refused.details["state"] == "replaced"
    desk.call("reply", "bob", id=replacement["id"], version=1, outcome="approved", answer="now")


def test_only_the_requester_replaces_an_open_request_at_its_version(desk: Desk) -> None:
    asked = desk.ask("ann", "bob")
    assert (
        desk.refused(
            "replace_request", "bob", id=asked["id"], version=1, body="x", idempotency_key="k"
        ).code
        is ErrorCode.FORBIDDEN
    )
    stale = desk.refused(
        "replace_request", "ann", id=asked["id"], version=2, body="x", idempotency_key="k"
    )
    assert stale.code is ErrorCode.VERSION_CONFLICT
    desk.call("reply", "bob", id=asked["id"], version=1, outcome="answered")
    final = desk.refused(
        "replace_request", "ann", id=asked["id"], version=2, body="x", idempotency_key="k2"
    )
    assert final.details["state"] == "answered"


def test_an_approval_never_carries_over_to_its_replacement(desk: Desk) -> None:
    asked = desk.ask("ann", "pat", kind="approval", action=DEPLOY)
    replacement = desk.call(
        "replace_request", "ann", id=asked["id"], version=1, body="v2", idempotency_key="k"
    )["replacement"]
    refused = desk.refused("redeem_approval", "ann", id=replacement["id"], action=DEPLOY)
    assert refused.details["state"] == "open"


# -- blocking -------------------------------------------------------------------------------
def test_blocking_is_declared_on_a_request_to_one_agent_only(desk: Desk) -> None:
    to_person = desk.ask("ann", "pat")
    refused = desk.refused("set_blocking", "ann", id=to_person["id"], blocking=True)
    assert refused.code is ErrorCode.INVALID_ARGUMENT
    to_agent = desk.ask("ann", "bob")
    blocked = desk.call("set_blocking", "ann", id=to_agent["id"], blocking=True)
    assert blocked["blocking"] is True
    assert blocked["version"] == 2
    assert blocked["history"][-1]["kind"] == "blocking"
    assert desk.refused("set_blocking", "bob", id=to_agent["id"], blocking=False).code is (
        ErrorCode.FORBIDDEN
    )
    listed = desk.call("request_status", "ann", blocking=True)["requests"]
    assert [r["id"] for r in listed] == [to_agent["id"]]
    cleared = desk.call("set_blocking", "ann", id=to_agent["id"], blocking=False)
    assert cleared["blocking"] is False
    assert cleared["version"] == 3


def test_a_blocking_cycle_is_refused_naming_it(desk: Desk) -> None:
    desk.ask("ann", "bob", blocking=True)
    desk.ask("bob", "cat", blocking=True)
    closing = desk.ask("cat", "ann")
    refused = desk.refused("set_blocking", "cat", id=closing["id"], blocking=True)
    assert refused.code is ErrorCode.VERSION_CONFLICT
    assert not refused.retryable
    assert refused.details["cycle"] == [desk.ids[x] for x in ("cat", "ann", "bob", "cat")]
    assert desk.get("cat", closing["id"])["blocking"] is False
    at_ask = desk.refused("ask", "cat", target=desk.target("ann"), blocking=True, body="x")
    assert at_ask.details["cycle"][0] == desk.ids["cat"]


def test_a_resolved_request_no_longer_blocks(desk: Desk) -> None:
    first = desk.ask("ann", "bob", blocking=True, expires_in_seconds=60)
    back = desk.ask("bob", "ann")
    assert desk.refused("set_blocking", "bob", id=back["id"], blocking=True).code is (
        ErrorCode.VERSION_CONFLICT
    )
    desk.call("reply", "bob", id=first["id"], version=1, outcome="answered")
    assert desk.call("set_blocking", "bob", id=back["id"], blocking=True)["blocking"] is True
    # And an expiry unblocks too.
    again = desk.ask("cat", "bob", blocking=True, expires_in_seconds=60)
    desk.world.advance(60)
    assert desk.get("cat", again["id"])["state"] == "expired"
    assert desk.world.store.get_wait_graph("acme").edges == [
        e for e in desk.world.store.get_wait_graph("acme").edges if e.request_id == back["id"]
    ]


def test_a_replacement_keeps_its_blocking_edge(desk: Desk) -> None:
    asked = desk.ask("ann", "bob", blocking=True)
    assert asked["version"] == 1
    assert asked["blocking"] is True
    replacement = desk.call(
        "replace_request", "ann", id=asked["id"], version=1, body="v2", idempotency_key="k"
    )["replacement"]
    assert replacement["blocking"] is True
    (edge,) = desk.world.store.get_wait_graph("acme").edges
    assert edge.request_id == replacement["id"]


def test_a_requests_history_is_bounded(desk: Desk) -> None:
    asked = desk.ask("ann", "bob")
    blocking = True
    for _ in range(MAX_HISTORY - 2):
        desk.call("set_blocking", "ann", id=asked["id"], blocking=blocking)
        blocking = not blocking
    refused = desk.refused("set_blocking", "ann", id=asked["id"], blocking=blocking)
    assert refused.code is ErrorCode.LIMIT_EXCEEDED
    # The final outcome is never refused for want of room: it is the one change kept for.
    version = MAX_HISTORY - 1
    done = desk.call("reply", "bob", id=asked["id"], version=version, outcome="answered")
    assert len(done["history"]) == MAX_HISTORY


def test_the_same_reply_made_again_is_answered_with_the_request_as_it_stands(desk: Desk) -> None:
    asked = desk.ask("ann", "bob")
    first = desk.call("reply", "bob", id=asked["id"], version=1, outcome="answered", answer=1)
    again = desk.call("reply", "bob", id=asked["id"], version=1, outcome="answered", answer=1)
    assert again == first
    other = desk.refused("reply", "bob", id=asked["id"], version=1, outcome="answered", answer=2)
    assert other.details["state"] == "answered"
    assert len(desk.inbox("ann")) == 1


# -- shared answers -------------------------------------------------------------------------
def test_a_shared_answer_is_reused_only_in_the_same_context_by_a_current_authority(
    desk: Desk,
) -> None:
    first = desk.ask("ann", "pat", body="which region?", shared_key="region")
    desk.call("reply", "pat", id=first["id"], version=1, outcome="answered", answer="eu")
    desk.inbox("ann")

    reused = desk.ask("bob", "pat", body="which region?", shared_key="region")
    assert reused["state"] == "answered"
    assert reused["response"]["answer"] == "eu"
    assert reused["response"]["by"] == desk.ids["pat"]
    assert reused["response"]["reused_from"] == first["id"]
    assert [e["payload"]["request_id"] for e in desk.inbox("bob")] == [reused["id"]]

    # Another body, or an audience without the answerer, asks afresh.
    assert desk.ask("bob", "pat", body="which zone?", shared_key="region")["state"] == "open"
    assert desk.ask("bob", "cat", body="which region?", shared_key="region")["state"] == "open"
    # And an answerer revoked since has no authority left to reuse.
    chat = desk.call("start_chat", "cat", targets=[desk.target("pat")], body="hi")
    desk.call("revoke_principal", "operator", principal_id=desk.ids["pat"], version=1)
    again = desk.call(
        "ask",
        "cat",
        conversation_id=chat["conversation_id"],
        body="which region?",
        shared_key="region",
    )
    assert again["state"] == "open"


def test_an_approval_is_always_decided_anew(desk: Desk) -> None:
    first = desk.ask("ann", "pat", kind="approval", shared_key="k", body="x")
    desk.call("reply", "pat", id=first["id"], version=1, outcome="approved")
    again = desk.ask("ann", "pat", kind="approval", shared_key="k", body="x")
    assert again["state"] == "open"


# -- start_chat with approval or choices ----------------------------------------------------
@pytest.mark.parametrize(
    ("arguments", "kind"),
    [({"approval": True}, "approval"), ({"choices": ["yes", "no"]}, "question")],
)
def test_start_chat_with_approval_or_choices_asks_its_first_message(
    desk: Desk, arguments: dict[str, Any], kind: str
) -> None:
    sent = desk.call(
        "start_chat",
        "ann",
        targets=[desk.target("bob"), desk.target("pat")],
        body="ok?",
        **arguments,
    )
    (message,) = sent["messages"]
    request = desk.get("bob", message["request_id"])
    assert request["kind"] == kind
    assert request["conversation_id"] == sent["conversation_id"]
    assert request["message_id"] == message["id"]
    assert request["action"] is None
    assert request["choices"] == arguments.get("choices")
    assert sorted(request["audience"]) == sorted([desk.ids["bob"], desk.ids["pat"]])
    (envelope,) = desk.inbox("bob")
    assert envelope["kind"] == "request"
    assert envelope["payload"]["request_id"] == request["id"]
    # An approval without an action communicates a decision and cannot be redeemed.
    outcome = "approved" if kind == "approval" else "answered"
    answer = None if kind == "approval" else "yes"
    desk.call("reply", "pat", id=request["id"], version=1, outcome=outcome, answer=answer)
    refused = desk.refused("redeem_approval", "ann", id=request["id"], action={})
    assert refused.code is ErrorCode.INVALID_ARGUMENT


def test_start_chat_without_approval_or_choices_asks_nothing(desk: Desk) -> None:
    sent = desk.call("start_chat", "ann", targets=[desk.target("bob")], body="hi")
    assert sent["messages"][0]["request_id"] is None
    assert [e["kind"] for e in desk.inbox("bob")] == ["message"]
    assert desk.call("request_status", "ann")["requests"] == []


def test_a_replacement_keeps_the_files_of_its_request(desk: Desk) -> None:
    staged = desk.call(
        "stage_attachment",
        "ann",
        base64="aGVsbG8=",
        file_name="plan.txt",
        media_type="text/plain",
    )
    asked = desk.ask("ann", "bob", attachment_ids=[staged["id"]], idempotency_key="with-file")
    replacement = desk.call(
        "replace_request", "ann", id=asked["id"], version=1, body="v2", idempotency_key="r"
    )["replacement"]
    read = desk.call("get_conversation", "bob", id=asked["conversation_id"])
    files = {m["id"]: [a["id"] for a in m["attachments"]] for m in read["messages"]}
    assert files[asked["message_id"]] == [staged["id"]]
    assert files[replacement["message_id"]] == [staged["id"]]
    downloaded = desk.call("download_attachment", "bob", id=staged["id"])
    assert downloaded["base64"] == "aGVsbG8="


def test_a_reply_to_a_requester_revoked_since_is_recorded_and_owes_it_nothing(
    desk: Desk,
) -> None:
    asked = desk.ask("ann", "pat", kind="approval", action=DEPLOY)
    ann = desk.call("whoami", "ann")["principal"]
    desk.call("revoke_principal", "operator", principal_id=ann["id"], version=ann["version"])

    decided = desk.call("reply", "pat", id=asked["id"], version=1, outcome="denied")

    assert decided["state"] == "denied"
    assert desk.call("get_request", "pat", id=asked["id"])["state"] == "denied"


def test_the_requester_withdraws_its_open_request_once_and_nobody_decides_it(
    desk: Desk,
) -> None:
    asked = desk.ask("ann", "bob")
    other = desk.ask("cat", "bob")
    withdrawn = desk.call("withdraw_request", "ann", id=asked["id"])
    assert withdrawn == {"id": asked["id"], "state": "withdrawn", "version": 2}
    # Again: as it stands, nothing more.
    assert desk.call("withdraw_request", "ann", id=asked["id"]) == withdrawn
    late = desk.refused("reply", "bob", id=asked["id"], version=1, outcome="answered")
    assert late.code is ErrorCode.VERSION_CONFLICT
    assert "withdrawn" in late.message
    # Only its requester withdraws it: anyone else, its audience too, is told it does not exist.
    for who in ("bob", "ann"):
        refused = desk.refused("withdraw_request", who, id=other["id"])
        assert refused.code is ErrorCode.NOT_FOUND, who
    assert desk.get("cat", other["id"])["state"] == "open"
    # A request decided already is a conflict naming its state.
    desk.call("reply", "bob", id=other["id"], version=1, outcome="answered")
    final = desk.refused("withdraw_request", "cat", id=other["id"])
    assert final.code is ErrorCode.VERSION_CONFLICT
    audited = desk.call("list_audit_events", "operator", target=asked["id"])["events"]
    assert [(e["action"], e["actor"]) for e in audited] == [("withdraw_request", desk.ids["ann"])]
