"""Claims and routing from the console, over HTTP on the in-memory app: a person of a request's
audience claims it for some minutes and releases it from its page; the others see whose hands
it is in (by name, on the page and in the listing), it leaves their waiting list, and a claim
made meanwhile by someone else is refused by name, while a decision is never stopped by it.
The history says each claim in words. The operators' Routing page explains claims and routing,
lists the rules in words and replaces them from JSON at the version read: a request asked then
is assigned, and says by which rule; bad JSON, an unknown person or a stale version changes
nothing and says why. No one else is led to the page nor may use it."""

from __future__ import annotations

import html
import json
import re
from datetime import datetime, timedelta
from typing import Any

import pytest

from tests.integration.test_console_decisions import decision_form
from tests.integration.test_console_http import Browser, field_of, location
from tests.integration.test_console_states import page, signed_in
from tests.liveness_support import World
from vigil.clock import ManualClock

PAY = {"op": "pay", "vendor": "acme-hosting", "amount": 500}


@pytest.fixture
def world(clock: ManualClock) -> World:
    return World(clock)


@pytest.fixture
def people(world: World) -> dict[str, str]:
    """Pat and Sue (people) decide what ann (an agent) asks them."""
    found: dict[str, str] = {}
    for key, kind, name in (("pat", "person", "Pat Doe"), ("sue", "person", "Sue Roe")):
        found[key], found[f"{key}_secret"] = world.tenant.register(kind=kind, name=name)
    found["ann"], found["ann_secret"] = world.tenant.register(name="ann")
    chat = world.call(
        "start_chat",
        found["ann_secret"],
        targets=[{"kind": "person", "id": found["pat"]}, {"kind": "person", "id": found["sue"]}],
        body="Bills to pay",
    )
    found["conversation"] = chat["conversation_id"]
    return found


def ask(world: World, people: dict[str, str], **action: Any) -> dict[str, Any]:
    asked = world.call(
        "ask",
        people["ann_secret"],
        conversation_id=people["conversation"],
        kind="approval",
        body="May I pay the hosting bill?",
        action={**PAY, **action},
    )
    return get(world, people, asked["id"])


def get(world: World, people: dict[str, str], request_id: str) -> dict[str, Any]:
    return world.call("get_request", people["ann_secret"], id=request_id)


def at(clock: ManualClock, minutes: int) -> str:
    """The clock time ``minutes`` from now, as the console says it."""
    when = clock.now() + timedelta(minutes=minutes)
    assert when.date() == clock.now().date()
    return when.strftime("%H:%M UTC")


def claim_form(browser: Browser, request_id: str, **fields: str) -> dict[str, str]:
    shown = browser.get("/console/request", id=request_id)
    return {"csrf": field_of(shown, "csrf"), "id": request_id, **fields}


def facts(body: str) -> str:
    return body[body.index('<dl class="facts">') : body.index("</dl>")]


def history(body: str) -> str:
    return body[body.index('id="history"') :]


def waiting(browser: Browser) -> str:
    return page(browser, "/console/requests", show="waiting")


def test_a_person_claims_a_request_for_some_minutes_and_releases_it(
    world: World, people: dict[str, str], clock: ManualClock
) -> None:
    request = ask(world, people)
    pat = signed_in(world, people["pat_secret"])
    body = page(pat, "/console/request", id=request["id"])
    offered = body[body.index('id="claim"') :]
    assert 'action="/console/requests/claim"' in offered
    assert 'name="minutes" value="30"' in offered
    assert ">Claim</button>" in offered
    assert ">Release</button>" not in offered
    assert "In hand" not in facts(body)

    # Without the form's token, nothing is claimed.
    refused = pat.post("/console/requests/claim", {"id": request["id"], "minutes": "10"})
    assert refused.status == 403
    assert "claim" not in get(world, people, request["id"])

    claimed = pat.post("/console/requests/claim", claim_form(pat, request["id"], minutes="10"))
    assert location(claimed) == f"/console/request?id={request['id']}"
    held = get(world, people, request["id"])
    assert held["claim"]["by"] == people["pat"]
    until = datetime.fromisoformat(held["claim"]["until"])
    assert until == clock.now() + timedelta(minutes=10)
    body = page(pat, "/console/request", id=request["id"])
    assert re.search(rf"In your hands until <time [^>]*>{at(clock, 10)}</time>", facts(body))
    assert re.search(
        rf"<td data-label=\"Change\">Pat Doe claimed it until <time [^>]*>{at(clock, 10)}</time>",
        history(body),
    )
    assert ">Release</button>" in body[body.index('id="claim"') :]
    assert ">Keep it</button>" in body[body.index('id="claim"') :]
    # Still on the holder's waiting list.
    assert request["id"] in waiting(pat)

    released = pat.post("/console/requests/claim", claim_form(pat, request["id"], release="yes"))
    assert location(released) == f"/console/request?id={request['id']}"
    assert "claim" not in get(world, people, request["id"])
    body = page(pat, "/console/request", id=request["id"])
    assert "In hand" not in facts(body)
    assert '<td data-label="Change">Pat Doe released it</td>' in history(body)
    assert ">Claim</button>" in body[body.index('id="claim"') :]
    events = world.call("list_audit_events")["events"]
    # Both in the same millisecond of the test's clock: their order is the ids'.
    assert sorted((e["action"], e["via"]) for e in events if e["target"] == request["id"]) == [
        ("claim", "console"),
        ("release", "console"),
    ]


def test_another_person_sees_who_has_it_is_refused_by_name_and_may_still_decide(
    world: World, people: dict[str, str], clock: ManualClock
) -> None:
    request = ask(world, people)
    pat = signed_in(world, people["pat_secret"])
    sue = signed_in(world, people["sue_secret"])
    # Sue reads the page (its forms) before Pat claims it.
    stale_claim = claim_form(sue, request["id"], minutes="30")
    stale_decision = decision_form(sue, request["id"], "approved")
    assert request["id"] in waiting(sue)
    pat.post("/console/requests/claim", claim_form(pat, request["id"], minutes="20"))

    body = page(sue, "/console/request", id=request["id"])
    assert re.search(
        rf"In Pat Doe's hands until <time [^>]*>{at(clock, 20)}</time> "
        rf"<small class=\"meta id\">{people['pat']}</small>",
        html.unescape(facts(body)),
    )
    assert 'action="/console/requests/claim"' not in body  # no Claim button for Sue
    assert 'id="decide"' in body  # but her decision, still
    listing = page(sue, "/console/requests")
    row = listing[listing.index(request["id"]) :]
    assert re.match(
        rf"[^\n]*?<td data-label=\"In hand\">Pat Doe <small class=\"meta id\">{people['pat']}"
        rf"</small> until <time [^>]*>{at(clock, 20)}</time></td>",
        row,
    )
    assert request["id"] not in waiting(sue)

    refused = sue.post("/console/requests/claim", stale_claim)
    said = html.unescape(refused.body.decode())
    assert refused.status == 409
    assert "version_conflict: Pat Doe claimed this request first" in said
    assert f"until {at(clock, 20)}" in said
    assert "your claim was not made" in said
    assert get(world, people, request["id"])["claim"]["by"] == people["pat"]

    # A claim never stops a decision, nor makes the page Sue read stale.
    confirm = sue.post("/console/requests/reply", stale_decision)
    assert confirm.status == 200, confirm.body.decode()
    assert "Yes, approve" in confirm.body.decode()
    decided = sue.post("/console/requests/reply", {**stale_decision, "confirm": "yes"})
    assert location(decided) == f"/console/request?id={request['id']}"
    assert get(world, people, request["id"])["state"] == "approved"
    assert "In hand" not in facts(page(pat, "/console/request", id=request["id"]))


def test_a_claim_ends_by_itself(world: World, people: dict[str, str], clock: ManualClock) -> None:
    request = ask(world, people)
    pat = signed_in(world, people["pat_secret"])
    sue = signed_in(world, people["sue_secret"])
    pat.post("/console/requests/claim", claim_form(pat, request["id"], minutes="5"))
    assert request["id"] not in waiting(sue)
    clock.advance(5 * 60)
    assert request["id"] in waiting(sue)
    body = page(sue, "/console/request", id=request["id"])
    assert "In hand" not in facts(body)
    assert ">Claim</button>" in body


def test_only_a_person_of_the_audience_is_offered_the_claim(
    world: World, people: dict[str, str]
) -> None:
    request = ask(world, people)
    _, outsider_secret = world.tenant.register(kind="person", name="Ola")
    for secret in (outsider_secret, people["ann_secret"], world.tenant.operator_secret):
        assert 'action="/console/requests/claim"' not in page(
            signed_in(world, secret), "/console/request", id=request["id"]
        )
    ola = signed_in(world, outsider_secret)
    refused = ola.post("/console/requests/claim", claim_form(ola, request["id"], minutes="5"))
    assert refused.status in (403, 404)
    assert "Not done" in refused.body.decode()
    assert "claim" not in get(world, people, request["id"])
    # Nor on a decided request.
    pat = signed_in(world, people["pat_secret"])
    world.call(
        "reply",
        people["sue_secret"],
        id=request["id"],
        version=request["version"],
        outcome="denied",
    )
    assert 'action="/console/requests/claim"' not in page(pat, "/console/request", id=request["id"])


def routing_form(browser: Browser, rules: str, **fields: str) -> dict[str, str]:
    shown = browser.get("/console/routing")
    assert shown.status == 200
    return {
        "csrf": field_of(shown, "csrf"),
        "version": field_of(shown, "version"),
        "rules": rules,
        **fields,
    }


def routing_of(world: World) -> dict[str, Any]:
    return world.call("routing_rules")


def test_the_routing_page_sets_rules_and_a_new_request_is_assigned_by_one(
    world: World, people: dict[str, str], clock: ManualClock
) -> None:
    operator = signed_in(world, world.tenant.operator_secret)
    body = page(operator, "/console/routing")
    assert 'href="/console/routing" aria-current="page"' in body  # in the navigation
    assert "A claim says who is handling a request." in body
    assert "Routing claims each new request for someone as it is asked." in body
    assert "No rules" in body
    assert field_of(operator.get("/console/routing"), "version") == "0"
    assert re.search(r'<textarea id="rules-json" name="rules"[^>]*>\[\]</textarea>', body)

    rules = [
        {"asker": people["ann"], "op": "pay", "to": [people["sue"], people["pat"]], "minutes": 45},
        {"kind": "question", "to": [people["pat"], people["sue"]], "least_recent": True},
    ]
    done = operator.post("/console/routing/set", routing_form(operator, json.dumps(rules)))
    assert location(done) == "/console/routing"
    assert routing_of(world)["version"] == 1
    assert [r["to"] for r in routing_of(world)["rules"]] == [r["to"] for r in rules]

    shown = operator.get("/console/routing")
    body = html.unescape(shown.body.decode())
    listed = body[body.index('<table id="rules"') :]
    assert re.search(
        rf"<td data-label=\"Which requests\">requests from ann <small[^>]*>{people['ann']}"
        r"</small> whose action's op is <code>\"pay\"</code></td>",
        listed,
    )
    assert re.search(
        r"<td data-label=\"Who takes them\">the first of Sue Roe <small[^>]*>[^<]*</small>, "
        r"Pat Doe <small[^>]*>[^<]*</small> who may decide it</td>",
        listed,
    )
    assert '<td data-label="For">45 minutes</td>' in listed
    assert re.search(r"questions</td><td[^>]*>whichever of Pat Doe .* was assigned longest", listed)
    # The form holds the rules as they are now, at their version.
    assert json.loads(field_text(shown, "rules")) == [
        {**rules[0]},
        {**rules[1], "minutes": 60},
    ]
    assert field_of(shown, "version") == "1"

    # A request asked now is Sue's, by rule 1; Pat's page and listing say so.
    request = ask(world, people)
    assert (request["claim"]["by"], request["claim"]["rule"]) == (people["sue"], 1)
    pat = signed_in(world, people["pat_secret"])
    body = html.unescape(page(pat, "/console/request", id=request["id"]))
    assert re.search(
        rf"In Sue Roe's hands until <time [^>]*>{at(clock, 45)}</time>, assigned by routing "
        r"rule 1 <small",
        facts(body),
    )
    assert re.search(
        rf"<td data-label=\"Change\">Assigned to Sue Roe by routing rule 1, until <time [^>]*>"
        rf"{at(clock, 45)}</time></td><td data-label=\"By\">\(routing\)</td>",
        history(body),
    )
    assert request["id"] not in waiting(pat)
    listing = html.unescape(page(pat, "/console/requests"))
    assert re.search(
        rf"{request['id']}.*?<td data-label=\"In hand\">Sue Roe <small[^>]*>[^<]*</small> until "
        r"<time [^>]*>[^<]*</time>, by routing rule 1</td>",
        listing,
    )
    # Another op matches no rule: no one's.
    assert "claim" not in ask(world, people, op="refund")


def field_text(response: Any, name: str) -> str:
    found = re.search(
        rf'<textarea [^>]*name="{name}"[^>]*>(.*?)</textarea>', response.body.decode(), re.S
    )
    assert found is not None, f"no textarea {name}"
    return html.unescape(found.group(1))


@pytest.mark.parametrize(
    ("rules", "status", "said"),
    [
        ('[{"to": [', 400, "invalid_argument: the rules are not JSON (line 1, column 10"),
        ('{"to": []}', 400, "the rules are a JSON list"),
        (
            '[{"to": ["per_aaaaaaaaaaaaaaaa"]}]',
            400,
            "invalid_argument: a rule routes to active people of this namespace: not "
            "per_aaaaaaaaaaaaaaaa",
        ),
        ('[{"to": ["PAT"], "minutes": 0}]', 400, "rules.0.minutes"),
        ('[{"to": ["PAT"], "colour": "red"}]', 400, "rules.0.colour"),
    ],
)
def test_bad_rules_are_refused_with_their_reason_and_change_nothing(
    world: World, people: dict[str, str], rules: str, status: int, said: str
) -> None:
    operator = signed_in(world, world.tenant.operator_secret)
    rules = rules.replace("PAT", people["pat"])
    refused = operator.post("/console/routing/set", routing_form(operator, rules))
    body = html.unescape(refused.body.decode())
    assert refused.status == status, body
    problem = re.search(r'<p class="problem" role="alert">(.*?)</p>', body, re.S)
    assert problem is not None
    assert said in problem.group(1)
    assert "Nothing was changed." in problem.group(1)
    assert field_text(refused, "rules") == rules  # kept, to be fixed
    assert routing_of(world) == {"rules": [], "version": 0}
    assert "claim" not in ask(world, people)


def test_rules_changed_since_they_were_read_are_not_replaced(
    world: World, people: dict[str, str]
) -> None:
    operator = signed_in(world, world.tenant.operator_secret)
    form = routing_form(operator, json.dumps([{"to": [people["pat"]]}]))
    world.call("routing_rules", rules=[{"to": [people["sue"]]}], version=0)
    refused = operator.post("/console/routing/set", form)
    body = html.unescape(refused.body.decode())
    assert refused.status == 409
    assert "version_conflict" in body
    assert "The rules changed since you read them: nothing was changed." in body
    assert [r["to"] for r in routing_of(world)["rules"]] == [[people["sue"]]]
    assert field_of(refused, "version") == "1"  # the rules as they are now are listed


def test_only_operators_are_led_to_routing_and_may_use_it(
    world: World, people: dict[str, str]
) -> None:
    operator = signed_in(world, world.tenant.operator_secret)
    form = routing_form(operator, json.dumps([{"to": [people["pat"]]}]))
    _, agent_operator = world.tenant.register(kind="agent", role="operator", name="bot-ops")
    for secret in (people["pat_secret"], people["ann_secret"]):
        browser = signed_in(world, secret)
        assert 'href="/console/routing"' not in page(browser, "/console")
        shown = browser.get("/console/routing")
        assert shown.status == 403
        assert "Only operators route requests." in shown.body.decode()
        assert 'name="rules"' not in shown.body.decode()
        posted = browser.post("/console/routing/set", {**form, "csrf": browser.csrf()})
        assert posted.status == 403
    assert routing_of(world) == {"rules": [], "version": 0}
    # An agent that is an operator reads the rules (the tool's callers), yet decides nothing.
    assert signed_in(world, agent_operator).get("/console/routing").status == 200
    assert 'href="/console/routing"' in page(operator, "/console")
