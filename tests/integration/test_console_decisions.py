"""Decisions with care, over HTTP on the in-memory app: Approve and Deny each lead to a page
that shows the exact action once more (its invisible characters made visible) and asks again,
and only the confirmed form decides; a denial can carry a reason; a request that changed
before the confirmation is not decided."""

from __future__ import annotations

import html
import re

import pytest

from tests.integration.test_console_http import Browser, field_of, location
from tests.integration.test_console_states import page, signed_in
from tests.liveness_support import World
from vigil.clock import ManualClock
from vigil.errors import ErrorCode, VigilError

DISGUISED = {"op": "deploy", "op\u200b": "drop-database"}


@pytest.fixture
def world(clock: ManualClock) -> World:
    return World(clock)


@pytest.fixture
def asked(world: World) -> dict[str, str]:
    pat, pat_secret = world.tenant.register(kind="person", name="Pat Doe")
    _, ann_secret = world.tenant.register(name="ann")
    request = world.call(
        "ask",
        ann_secret,
        target={"kind": "person", "id": pat},
        kind="approval",
        body="May I deploy?",
        action=DISGUISED,
    )
    return {"id": request["id"], "pat_secret": pat_secret, "ann_secret": ann_secret}


def decision_form(browser: Browser, request_id: str, outcome: str) -> dict[str, str]:
    """The request page's form as its Approve or Deny button submits it."""
    shown = browser.get("/console/request", id=request_id)
    return {
        "csrf": field_of(shown, "csrf"),
        "id": field_of(shown, "id"),
        "version": field_of(shown, "version"),
        "outcome": outcome,
    }


def state(world: World, asked: dict[str, str]) -> dict[str, object]:
    return world.call("get_request", asked["ann_secret"], id=asked["id"])


@pytest.mark.parametrize(("outcome", "verb"), [("approved", "approve"), ("denied", "deny")])
def test_approve_and_deny_ask_again_showing_the_exact_action(
    world: World, asked: dict[str, str], outcome: str, verb: str
) -> None:
    pat = signed_in(world, asked["pat_secret"])
    form = decision_form(pat, asked["id"], outcome)
    confirm = pat.post("/console/requests/reply", form)
    assert confirm.status == 200
    body = confirm.body.decode()
    assert f"Yes, {verb}" in body
    assert "U+200B ZERO WIDTH SPACE" in body
    assert html.escape('"op\\u200b": "drop-database"', quote=True) in body
    assert "\u200b" not in body
    assert field_of(confirm, "confirm") == "yes"
    assert field_of(confirm, "version") == form["version"]
    assert 'href="/console/request?id=' in body  # a way back without deciding
    assert state(world, asked)["state"] == "open"  # the first submission decides nothing
    # The confirmation decides.
    back = location(pat.post("/console/requests/reply", {**form, "confirm": "yes"}))
    assert back == f"/console/request?id={asked['id']}"
    assert state(world, asked)["state"] == outcome


def test_a_denial_carries_its_reason(world: World, asked: dict[str, str]) -> None:
    pat = signed_in(world, asked["pat_secret"])
    form = decision_form(pat, asked["id"], "denied")
    confirm = pat.post("/console/requests/reply", form).body.decode()
    assert re.search(r'<textarea id="answer" name="answer"', confirm)
    reason = "Not during the freeze."
    pat.post("/console/requests/reply", {**form, "confirm": "yes", "answer": reason})
    response = state(world, asked)["response"]
    assert isinstance(response, dict)
    assert (response["outcome"], response["answer"]) == ("denied", reason)


def test_a_request_that_changed_before_the_confirmation_is_not_decided(
    world: World, asked: dict[str, str]
) -> None:
    pat = signed_in(world, asked["pat_secret"])
    form = decision_form(pat, asked["id"], "approved")
    world.call(
        "replace_request",
        asked["ann_secret"],
        id=asked["id"],
        version=1,
        body="May I drop the database?",
        idempotency_key="replace-1",
    )
    confirm = pat.post("/console/requests/reply", form)
    assert confirm.status == 409
    assert "Yes, approve" not in confirm.body.decode()
    assert "This request is replaced already: nothing was decided." in confirm.body.decode()
    assert pat.post("/console/requests/reply", {**form, "confirm": "yes"}).status == 409
    assert state(world, asked)["state"] == "replaced"


def test_the_request_page_says_a_decision_is_confirmed_next(
    world: World, asked: dict[str, str]
) -> None:
    body = page(signed_in(world, asked["pat_secret"]), "/console/request", id=asked["id"])
    assert "You confirm on the next page" in body


# -- votes --------------------------------------------------------------------------------------
@pytest.fixture
def voted(world: World) -> dict[str, str]:
    """An approval two people must both approve, that denies without a reason refused."""
    pat, pat_secret = world.tenant.register(kind="person", name="Pat Doe")
    sam, sam_secret = world.tenant.register(kind="person", name="Sam Roe")
    _, ann_secret = world.tenant.register(name="ann")
    chat = world.call(
        "start_chat",
        ann_secret,
        targets=[{"kind": "person", "id": pat}, {"kind": "person", "id": sam}],
        body="hi",
    )
    request = world.call(
        "ask",
        ann_secret,
        conversation_id=chat["conversation_id"],
        kind="approval",
        body="May I deploy?",
        policy={"quorum": "all", "reason_on_deny": True},
    )
    return {
        "id": request["id"],
        "pat_secret": pat_secret,
        "sam_secret": sam_secret,
        "ann_secret": ann_secret,
    }


def test_a_vote_cast_meanwhile_does_not_void_a_confirmation_and_the_page_says_who_from_where(
    world: World, voted: dict[str, str]
) -> None:
    pat = signed_in(world, voted["pat_secret"])
    form = decision_form(pat, voted["id"], "approved")
    assert "Needs" in page(pat, "/console/request", id=voted["id"])
    # Sam approves from the CLI while Pat reads the confirmation page.
    world.app.call(
        "reply",
        {"id": voted["id"], "version": 1, "outcome": "approved"},
        voted["sam_secret"],
        via="cli",
    )
    confirm = pat.post("/console/requests/reply", form)
    assert confirm.status == 200
    pat.post("/console/requests/reply", {**form, "confirm": "yes"})
    decided = state(world, voted)
    assert decided["state"] == "approved"
    body = page(pat, "/console/request", id=voted["id"])
    history = body[body.index('id="history"') :]
    cells = re.findall(r'<td data-label="(Change|From)">([^<]*)', history)
    assert cells == [
        ("Change", "asked"),
        ("From", "rest"),
        ("Change", "voted: approved"),
        ("From", "cli"),
        ("Change", "replied: approved"),
        ("From", "console"),
    ]
    assert "2 of 2 approvals" in body


def test_a_denial_that_must_say_why_asks_for_its_reason(
    world: World, voted: dict[str, str]
) -> None:
    pat = signed_in(world, voted["pat_secret"])
    form = decision_form(pat, voted["id"], "denied")
    confirm = pat.post("/console/requests/reply", form).body.decode()
    assert re.search(r'<textarea id="answer" name="answer" rows="3" required>', confirm)
    assert "Reason (required" in confirm


def test_who_voted_is_shown_their_vote_instead_of_the_form(
    world: World, voted: dict[str, str]
) -> None:
    world.app.call(
        "reply",
        {"id": voted["id"], "version": 1, "outcome": "approved"},
        voted["sam_secret"],
        via="cli",
    )
    body = page(signed_in(world, voted["sam_secret"]), "/console/request", id=voted["id"])
    assert 'action="/console/requests/reply"' not in body
    assert "You voted approve (from cli); 1 of 2 approvals so far" in body


def test_an_operator_sees_every_request_and_decides_none_outside_the_audience(
    world: World, voted: dict[str, str]
) -> None:
    """Whoever oversees the namespace sees the requests people are asked, read-only: the
    listing, the request's page without a form, the overview's count."""
    operator = signed_in(world, world.tenant.operator_secret)
    listing = page(operator, "/console/requests")
    assert voted["id"] in listing
    assert "Open requests in the namespace" in listing
    shown = page(operator, "/console/request", id=voted["id"])
    assert "May I deploy?" in shown
    assert 'action="/console/requests/reply"' not in shown
    assert "Who decides" in shown
    assert voted["id"] not in page(operator, "/console/requests", show="waiting")
    overview = page(operator, "/console")
    assert re.search(r'id="count-open">1</span> request open', overview)
    assert re.search(r'id="count-waiting">0</span> requests waiting for you', overview)
    # A reply from outside the audience is refused and changes nothing.
    with pytest.raises(VigilError) as refused:
        world.app.call(
            "reply",
            {"id": voted["id"], "version": 1, "outcome": "approved"},
            world.tenant.operator_secret,
            via="rest",
        )
    assert refused.value.code is ErrorCode.FORBIDDEN
    assert state(world, voted)["version"] == 1


def test_waiting_for_me_keeps_what_awaits_my_vote(world: World, voted: dict[str, str]) -> None:
    pat = signed_in(world, voted["pat_secret"])
    assert voted["id"] in page(pat, "/console/requests", show="waiting")
    world.app.call(
        "reply",
        {"id": voted["id"], "version": 1, "outcome": "approved"},
        voted["pat_secret"],
        via="console",
    )
    assert voted["id"] not in page(pat, "/console/requests", show="waiting")
    listing = page(pat, "/console/requests")
    assert "you voted approve" in listing
    # Still waiting for Sam, whose overview says so.
    sam = signed_in(world, voted["sam_secret"])
    assert voted["id"] in page(sam, "/console/requests", show="waiting")
    assert re.search(r'id="count-waiting">1</span> request waiting for you', page(sam, "/console"))


def test_an_approver_edits_an_editable_member_and_confirms_the_action_shown(
    world: World,
) -> None:
    pat, pat_secret = world.tenant.register(kind="person", name="Pat Doe")
    _, ann_secret = world.tenant.register(name="ann")
    pay = {"op": "pay", "vendor": "acme-hosting", "amount": 500}
    request = world.call(
        "ask",
        ann_secret,
        target={"kind": "person", "id": pat},
        kind="approval",
        body="May I pay?",
        action=pay,
        editable=["amount"],
    )
    browser = signed_in(world, pat_secret)
    shown = browser.get("/console/request", id=request["id"])
    # The editable member's field holds its value, as JSON; the others have none.
    assert field_of(shown, "edit-amount") == "500"
    assert 'name="edit-vendor"' not in shown.body.decode()
    form = {**decision_form(browser, request["id"], "approved"), "edit-amount": "300"}
    confirm = browser.post("/console/requests/reply", form)
    body = confirm.body.decode()
    # The confirmation shows the edit in words and the edited action, whole.
    assert "Your edits: amount: 500 → 300" in body
    assert html.escape('"amount": 300', quote=True) in body
    assert world.call("get_request", ann_secret, id=request["id"])["state"] == "open"
    decided = {**form, "confirm": "yes", "edits": html.unescape(field_of(confirm, "edits"))}
    browser.post("/console/requests/reply", decided)
    after = world.call("get_request", ann_secret, id=request["id"])
    assert (after["state"], after["action"]) == ("approved", {**pay, "amount": 300})
    change = after["history"][-1]
    assert (change["via"], change["edits"], change["edited_from"]) == (
        "console",
        {"amount": 300},
        {"amount": 500},
    )
    # Its page says who changed what.
    page = browser.get("/console/request", id=request["id"]).body.decode()
    assert "replied: approved with edits: amount: 500 → 300" in page
    assert "Edited by Pat Doe" in page


@pytest.mark.parametrize("typed", ["NaN", "1e400", "12345678901234567891"])
def test_an_edit_no_reader_holds_exactly_is_refused_and_decides_nothing(
    world: World, typed: str
) -> None:
    pat, pat_secret = world.tenant.register(kind="person", name="Pat Doe")
    _, ann_secret = world.tenant.register(name="ann")
    request = world.call(
        "ask",
        ann_secret,
        target={"kind": "person", "id": pat},
        kind="approval",
        body="May I pay?",
        action={"op": "pay", "amount": 500},
        editable=["amount"],
    )
    browser = signed_in(world, pat_secret)
    form = {**decision_form(browser, request["id"], "approved"), "edit-amount": typed}
    confirm = browser.post("/console/requests/reply", form)
    assert confirm.status in (200, 409), confirm.status
    assert "nothing was decided" in confirm.body.decode()
    assert world.call("get_request", ann_secret, id=request["id"])["state"] == "open"
