"""Standing approvals from the console, over HTTP on the in-memory app: a person approving an
approval may also approve the same for a while; the confirmation page says in words what
stands (how long, how many uses, who may ask, each free member's bound) and the confirmed form
grants exactly that, so a later ask of the same shape is approved at once, which its history
says. The Standing approvals page lists the live ones by name and revokes them; bad bounds
are refused with their reason, deciding nothing."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest

from tests.integration.test_console_decisions import decision_form
from tests.integration.test_console_http import Browser, field_of, location
from tests.integration.test_console_states import page, signed_in
from tests.liveness_support import World
from vigil.clock import ManualClock

PAY = {"op": "pay", "vendor": "acme-hosting", "amount": 500}
# The fields of a standing approval for two hours, three uses, amounts from 100 to 600 (each
# member's fields are numbered by its place in order: amount 0, op 1, vendor 2).
TERMS = {
    "standing-grant": "yes",
    "standing-hours": "2",
    "standing-uses": "3",
    "free-min-0": "100",
    "free-max-0": "600",
}


@pytest.fixture
def world(clock: ManualClock) -> World:
    return World(clock)


@pytest.fixture
def asked(world: World) -> dict[str, str]:
    pat, pat_secret = world.tenant.register(kind="person", name="Pat Doe")
    ann, ann_secret = world.tenant.register(name="ann")
    request = world.call(
        "ask",
        ann_secret,
        target={"kind": "person", "id": pat},
        kind="approval",
        body="May I pay the hosting bill?",
        action=PAY,
    )
    return {
        "id": request["id"],
        "pat": pat,
        "ann": ann,
        "pat_secret": pat_secret,
        "ann_secret": ann_secret,
    }


def ask(world: World, asked: dict[str, str], secret: str, **action: Any) -> dict[str, Any]:
    """An approval of ``PAY`` changed by ``action``, asked of Pat; as it is once asked."""
    request = world.call(
        "ask",
        secret,
        target={"kind": "person", "id": asked["pat"]},
        kind="approval",
        body="May I pay again?",
        action={**PAY, **action},
    )
    return world.call("get_request", secret, id=request["id"])


def standing_of(world: World, secret: str) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = world.call("list_standing_approvals", secret)["standing"]
    return listed


def confirmed(browser: Browser, request_id: str, terms: dict[str, str]) -> tuple[str, str]:
    """The confirmation page of an approval with ``terms``, and the standing approval its
    confirmed form grants (its hidden field): what is shown, and what is sent."""
    form = {**decision_form(browser, request_id, "approved"), **terms}
    confirm = browser.post("/console/requests/reply", form)
    assert confirm.status == 200, confirm.body.decode()
    decided = {
        **decision_form(browser, request_id, "approved"),
        "confirm": "yes",
        "standing": field_of(confirm, "standing"),
    }
    assert location(browser.post("/console/requests/reply", decided)) == (
        f"/console/request?id={request_id}"
    )
    return confirm.body.decode(), decided["standing"]


def test_the_approval_form_offers_a_standing_approval_folded_away(
    world: World, asked: dict[str, str]
) -> None:
    body = page(signed_in(world, asked["pat_secret"]), "/console/request", id=asked["id"])
    terms = body[body.index('<details class="standing"') :]
    assert "<summary>Also approve the same for a while</summary>" in terms
    assert 'name="standing-grant"' in terms
    assert 'name="standing-hours" value="24"' in terms
    assert "not only ann" in terms
    # A number gets a range and values, a text a prefix and values.
    for field in ("free-min-0", "free-max-0", "free-one-of-0", "free-prefix-2"):
        assert f'name="{field}"' in terms, field
    assert 'name="free-min-2"' not in terms
    # Inside the form, before its buttons.
    assert terms.index("</details>") < terms.index('value="approved"')


def test_a_grant_from_the_console_says_what_stands_and_approves_the_same_shape_at_once(
    world: World, asked: dict[str, str]
) -> None:
    pat = signed_in(world, asked["pat_secret"])
    form = {**decision_form(pat, asked["id"], "approved"), **TERMS}
    confirm = pat.post("/console/requests/reply", form)
    body = confirm.body.decode()
    # In words: how long, how many uses, who may ask, what shape.
    shown = body[body.index('id="standing-confirm"') :]
    assert "2 hours from when you confirm" in shown
    assert "at most 3 approvals" in shown
    assert re.search(r"only ann <small", shown)
    assert "this action, with amount a number from 100 to 600" in shown
    # The confirmed form sends exactly that.
    assert json.loads(field_of(confirm, "standing")) == {
        "hours": 2,
        "any_asker": False,
        "uses": 3,
        "free": {"amount": {"min": 100, "max": 600}},
    }
    # Nothing is decided nor granted yet.
    assert world.call("get_request", asked["ann_secret"], id=asked["id"])["state"] == "open"
    assert standing_of(world, asked["pat_secret"]) == []

    confirmed(pat, asked["id"], TERMS)
    granted = world.call("get_request", asked["ann_secret"], id=asked["id"])
    assert granted["state"] == "approved"
    [live] = standing_of(world, asked["pat_secret"])
    assert granted["history"][-1]["standing"] == live["id"]
    assert (live["uses"], live["free"]) == (3, {"amount": {"min": 100.0, "max": 600.0}})

    # The same shape is approved at once; outside its bounds, or another member, is not.
    again = ask(world, asked, asked["ann_secret"], amount=250)
    assert (again["state"], again["response"]["via"]) == ("approved", "standing")
    assert ask(world, asked, asked["ann_secret"], amount=900)["state"] == "open"
    assert ask(world, asked, asked["ann_secret"], vendor="evil-corp")["state"] == "open"
    # Only ann's asks: another agent's stays open.
    _, bob_secret = world.tenant.register(name="bob")
    assert ask(world, asked, bob_secret, amount=250)["state"] == "open"

    # Each request's history says it.
    used = page(pat, "/console/request", id=again["id"])
    history = used[used.index('id="history"') :]
    assert "Approved by Pat Doe through a standing approval" in history
    assert '<td data-label="From">standing approval</td>' in history
    assert re.search(
        r"<dt>Decided by</dt><dd>Pat Doe <small[^<]*</small> \(through a standing", used
    )
    granting = page(pat, "/console/request", id=asked["id"])
    assert re.search(
        r"replied: approved, and granted a <a href=\"/console/standing\">standing approval</a>",
        granting,
    )


def test_values_a_prefix_and_any_agent_are_said_and_granted_as_said(
    world: World, asked: dict[str, str]
) -> None:
    pat = signed_in(world, asked["pat_secret"])
    terms = {
        "standing-grant": "yes",
        "standing-hours": "1",
        "standing-any": "yes",
        "free-one-of-0": "500\n700\n",
        "free-prefix-2": "acme-",
    }
    body, sent = confirmed(pat, asked["id"], terms)
    shown = body[body.index('id="standing-confirm"') :]
    assert "1 hour from when you confirm" in shown
    assert "any number of approvals until it expires" in shown
    assert "any agent of the namespace" in shown
    assert html.escape('amount one of 500, 700; vendor text starting with "acme-"') in shown
    assert json.loads(sent)["free"] == {
        "amount": {"one_of": [500, 700]},
        "vendor": {"prefix": "acme-"},
    }
    _, bob_secret = world.tenant.register(name="bob")
    assert ask(world, asked, bob_secret, amount=700, vendor="acme-dns")["state"] == "approved"
    assert ask(world, asked, bob_secret, amount=600)["state"] == "open"


def test_the_listing_names_who_and_revoking_it_leaves_the_next_ask_open(
    world: World, asked: dict[str, str]
) -> None:
    pat = signed_in(world, asked["pat_secret"])
    confirmed(pat, asked["id"], TERMS)
    ask(world, asked, asked["ann_secret"], amount=300)
    [live] = standing_of(world, asked["pat_secret"])

    listing = page(pat, "/console/standing")
    assert "A standing approval is an approval that stands for the same action again" in listing
    row = listing[listing.index('<table id="standing"') :]
    assert f'Pat Doe <small class="meta id">{asked["pat"]}</small>' in row
    assert f'ann <small class="meta id">{asked["ann"]}</small>' in row
    assert "this action, with amount a number from 100 to 600" in row
    assert '<td data-label="Used">1 of 3</td>' in row
    assert 'class="countdown"' in row
    assert f'href="/console/request?id={asked["id"]}"' in row
    assert 'href="/console/standing" aria-current="page"' in listing  # in the navigation
    # An operator sees everyone's (not their own only), by the same names.
    operator = signed_in(world, world.tenant.operator_secret)
    assert f'Pat Doe <small class="meta id">{asked["pat"]}</small>' in page(
        operator, "/console/standing"
    )
    assert live["id"] not in page(operator, "/console/standing", show="mine")

    # Revoking needs the form's token, as every form does.
    refused = pat.post("/console/standing/revoke", {"id": live["id"], "show": "mine"})
    assert refused.status == 403
    assert len(standing_of(world, asked["pat_secret"])) == 1
    shown = pat.get("/console/standing")
    revoke = {"csrf": field_of(shown, "csrf"), "id": field_of(shown, "id"), "show": "mine"}
    assert revoke["id"] == live["id"]
    assert location(pat.post("/console/standing/revoke", revoke)) == "/console/standing?show=mine"
    assert standing_of(world, asked["pat_secret"]) == []
    assert "No standing approval is live." in page(pat, "/console/standing")
    assert ask(world, asked, asked["ann_secret"], amount=300)["state"] == "open"


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"free-min-0": "600", "free-max-0": "100"}, "a range's min is at most its max"),
        ({"free-min-0": "lots"}, "Lowest amount: 'lots' is not a number"),
        (
            {"free-min-0": "600", "free-max-0": "900"},
            "amount is not a number from 600 to 900",
        ),
        ({"free-one-of-2": "zeta-hosting"}, 'vendor is not one of "zeta-hosting"'),
        ({"standing-hours": "0"}, "standing.hours"),
        ({"free-prefix-2": "acme", "free-one-of-2": "acme-hosting"}, "not several"),
    ],
)
def test_bad_bounds_are_refused_with_their_reason_and_decide_nothing(
    world: World, asked: dict[str, str], fields: dict[str, str], said: str
) -> None:
    pat = signed_in(world, asked["pat_secret"])
    form = {**decision_form(pat, asked["id"], "approved"), "standing-grant": "yes", **fields}
    refused = pat.post("/console/requests/reply", form)
    body = refused.body.decode()
    assert refused.status == 400, body
    assert "Not done" in body
    assert html.escape(said) in body
    assert "Yes, approve" not in body
    assert world.call("get_request", asked["ann_secret"], id=asked["id"])["state"] == "open"
    assert standing_of(world, asked["pat_secret"]) == []


def test_a_confirmed_grant_the_service_refuses_decides_nothing(
    world: World, asked: dict[str, str]
) -> None:
    """The hidden field is checked again where it is used: one whose bound leaves out the
    value approved is refused, and the approval with it."""
    pat = signed_in(world, asked["pat_secret"])
    forged = json.dumps({"hours": 2, "free": {"amount": {"min": 600}}})
    decided = {**decision_form(pat, asked["id"], "approved"), "confirm": "yes", "standing": forged}
    refused = pat.post("/console/requests/reply", decided)
    assert refused.status == 400
    assert "amount is not a number of at least 600" in html.unescape(refused.body.decode())
    assert world.call("get_request", asked["ann_secret"], id=asked["id"])["state"] == "open"
    assert standing_of(world, asked["pat_secret"]) == []


def test_terms_filled_in_but_not_ticked_grant_nothing_and_the_confirmation_says_so(
    world: World, asked: dict[str, str]
) -> None:
    pat = signed_in(world, asked["pat_secret"])
    fields = {key: value for key, value in TERMS.items() if key != "standing-grant"}
    form = {**decision_form(pat, asked["id"], "approved"), **fields}
    body = pat.post("/console/requests/reply", form).body.decode()
    assert "You did not tick" in body
    assert 'name="standing"' not in body
    assert 'id="standing-confirm"' not in body
    pat.post("/console/requests/reply", {**form, "confirm": "yes"})
    assert world.call("get_request", asked["ann_secret"], id=asked["id"])["state"] == "approved"
    assert standing_of(world, asked["pat_secret"]) == []
    assert ask(world, asked, asked["ann_secret"], amount=300)["state"] == "open"


def test_hidden_characters_in_names_and_bounds_are_shown_escaped(world: World) -> None:
    pat, pat_secret = world.tenant.register(kind="person", name="Pat Doe")
    _, ann_secret = world.tenant.register(name="ann")
    disguised = {"op\u200b": "deploy", "file": "\u202egnp.hs"}
    request = world.call(
        "ask",
        ann_secret,
        target={"kind": "person", "id": pat},
        kind="approval",
        body="May I upload?",
        action=disguised,
    )
    browser = signed_in(world, pat_secret)
    body = page(browser, "/console/request", id=request["id"])
    assert "\u200b" not in body
    assert "\u202e" not in body
    assert "<summary>op\\u200b <small" in body
    # file is member 0, op\u200b member 1.
    terms = {"standing-grant": "yes", "free-prefix-0": "\u202egnp"}
    shown, sent = confirmed(browser, request["id"], terms)
    assert "\u202e" not in shown
    assert html.escape('this action, with file text starting with "\\u202egnp"') in shown
    assert json.loads(sent)["free"] == {"file": {"prefix": "\u202egnp"}}
    listing = page(browser, "/console/standing")
    assert "\u202e" not in listing
    assert "\u200b" not in listing


def test_an_agent_is_not_led_to_standing_approvals(world: World, asked: dict[str, str]) -> None:
    body = page(signed_in(world, asked["ann_secret"]), "/console/requests")
    assert 'href="/console/standing"' not in body
    assert 'href="/console/standing"' in page(signed_in(world, asked["pat_secret"]), "/console")
