"""Adding people and agents, and reading the audit trail, on the console, over HTTP on the
in-memory app: an operator adds an agent and is shown its secret once with what to paste to
connect it; a form sent twice adds one; the trail is filtered by who, kind and target, each
principal by name; neither page nor form is anyone else's."""

from __future__ import annotations

import html
import json
import re

import pytest

from tests.integration.test_console_http import Browser, field_of
from tests.integration.test_console_states import page, signed_in
from tests.liveness_support import World
from vigil.clock import ManualClock


@pytest.fixture
def world(clock: ManualClock) -> World:
    return World(clock)


def add_form(world: World, secret: str, kind: str, name: str) -> tuple[Browser, dict[str, str]]:
    browser = signed_in(world, secret)
    shown = browser.get("/console/people")
    form = {
        "csrf": field_of(shown, "csrf"),
        "idempotency_key": field_of(shown, "idempotency_key"),
        "kind": kind,
        "name": name,
    }
    return browser, form


def test_an_operator_adds_an_agent_and_sees_its_secret_once_with_its_snippet(
    world: World,
) -> None:
    browser, form = add_form(world, world.tenant.operator_secret, "agent", "night-builder")
    added = browser.post("/console/people/add", form)
    assert added.status == 200
    body = added.body.decode()
    secret = re.search(r'<code class="secret" id="new-secret">([^<]+)</code>', body)
    assert secret is not None
    issued = html.unescape(secret.group(1))
    config = re.search(r'<pre class="snippet" id="mcp-config">(.*?)</pre>', body, re.S)
    assert config is not None
    server = json.loads(html.unescape(config.group(1)))["mcpServers"]["vigil"]
    assert server["headers"]["Authorization"] == f"Bearer {issued}"
    assert server["url"].endswith("/mcp")
    me = world.call("whoami", issued)["principal"]
    assert (me["name"], me["kind"], me["role"]) == ("night-builder", "agent", "worker")
    # Sent twice, the form adds one, and its second answer holds no secret.
    again = browser.post("/console/people/add", form).body.decode()
    assert "sent twice" in again
    assert issued not in again
    agents = world.call("list_directory", kind="agent")["items"]
    assert [a["name"] for a in agents].count("night-builder") == 1
    listing = page(browser, "/console/people")
    assert "night-builder" in listing
    assert issued not in listing


def test_a_bad_name_is_refused_on_the_form_as_it_was_sent(world: World) -> None:
    browser, form = add_form(world, world.tenant.operator_secret, "person", "Dana\u202eLead")
    refused = browser.post("/console/people/add", form)
    assert refused.status == 400
    body = refused.body.decode()
    assert 'role="alert"' in body
    assert 'action="/console/people/add"' in body
    people = world.call("list_directory", kind="person")["items"]
    assert [p["name"] for p in people] == ["Ops"]


def test_only_operators_are_offered_the_form_and_the_audit_trail(world: World) -> None:
    _, pat_secret = world.tenant.register(kind="person", name="Pat")
    pat = signed_in(world, pat_secret)
    people = page(pat, "/console/people")
    assert "Pat" in people
    assert 'action="/console/people/add"' not in people
    assert 'href="/console/audit"' not in people
    assert "Your role may not see this." in page(pat, "/console/audit")
    _, form = add_form(world, world.tenant.operator_secret, "agent", "x")
    form["csrf"] = field_of(pat.get("/console"), "csrf")
    refused = pat.post("/console/people/add", form)
    assert refused.status == 403
    assert [a["name"] for a in world.call("list_directory", kind="agent")["items"]] == []


def rows(body: str) -> list[str]:
    """The trail's rows, each as its cells' text."""
    table = re.search(r"<table.*?</table>", body, re.S)
    if table is None:
        return []
    found = re.findall(r"<tr>(.*?)</tr>", table.group(0), re.S)[1:]
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S) for row in found]
    return [" | ".join(" ".join(re.sub(r"<[^>]+>", " ", c).split()) for c in row) for row in cells]


def test_the_audit_trail_names_who_did_what_and_filters(world: World) -> None:
    operator = signed_in(world, world.tenant.operator_secret)
    world.clock.advance(1)
    agent, _ = world.tenant.register(name="worker-7")
    world.clock.advance(1)
    world.call("pause_switches", scope_prefix="nightly-", until_next_beat=True)
    whole = page(operator, "/console/audit")
    assert 'href="/console/audit" aria-current="page"' in whole
    listed = rows(whole)
    assert len(listed) == 3, listed  # the pause, the registration, the bootstrap
    assert "pause" in listed[0]
    assert "nightly-" in listed[0]
    assert "Ops" in listed[1]
    assert "worker-7" in listed[1]
    assert "the deployer" in listed[2]
    pauses = rows(page(operator, "/console/audit", target_kind="pause"))
    assert len(pauses) == 1
    assert "nightly-" in pauses[0]
    about = rows(page(operator, "/console/audit", target=agent))
    assert len(about) == 1
    assert "register" in about[0]
    assert "No change matches." in page(operator, "/console/audit", actor=agent)


def test_an_operator_unlinks_a_departed_persons_slack_user_after_seeing_whose_it_is(
    world: World,
) -> None:
    from vigil.kit.uow import UnitOfWork
    from vigil.notifications.records import AccountLink

    pat, pat_secret = world.tenant.register(kind="person", name="Pat Gone")
    link = AccountLink(
        namespace="acme",
        surface="slack",
        account="T0ACME/U0PAT",
        principal_id=pat,
        linked_at=world.clock.now(),
    )
    UnitOfWork(world.app.store).commit(world.app.store.link_account(link))
    operator = signed_in(world, world.tenant.operator_secret)
    csrf = field_of(operator.get("/console/people"), "csrf")
    asked = operator.post("/console/people/unlink", {"csrf": csrf, "account": "slack:T0ACME/U0PAT"})
    shown = asked.body.decode()
    assert asked.status == 200
    assert "Pat Gone" in shown
    assert "Yes, unlink" in shown
    assert world.app.store.linked_account("acme", "slack", "T0ACME/U0PAT") == pat
    # Someone else's form cannot end it: only an operator's.
    person = signed_in(world, pat_secret)
    form = {
        "csrf": field_of(person.get("/console"), "csrf"),
        "account": "slack:T0ACME/U0PAT",
        "principal_id": pat,
        "confirm": "yes",
    }
    assert person.post("/console/people/unlink", form).status == 403
    # Bound to whom the operator was shown: another person's id changes nothing.
    form["csrf"] = csrf
    stale = operator.post("/console/people/unlink", {**form, "principal_id": "per_" + "b" * 16})
    assert stale.status == 409
    done = operator.post("/console/people/unlink", form)
    assert done.status == 200
    assert "no longer decides as Pat Gone" in done.body.decode()
    assert world.app.store.linked_account("acme", "slack", "T0ACME/U0PAT") is None
    events = world.call("list_audit_events", target="slack:T0ACME/U0PAT")["events"]
    assert [(e["action"], e["actor"]) for e in events] == [
        ("unlink_account", world.tenant.operator.id)
    ]
    gone = operator.post("/console/people/unlink", {"csrf": csrf, "account": "slack:T0ACME/U0PAT"})
    assert gone.status == 404
    bad = operator.post("/console/people/unlink", {"csrf": csrf, "account": "U0PAT"})
    assert bad.status == 400
