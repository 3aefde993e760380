"""Operators act from the console, over HTTP on the in-memory app with a moved clock: they
create a channel (a webhook's signing secret shown once, on the page that answers the form),
send it a test, disable, enable and rotate it, delete it after confirming, and pause a scope
prefix after confirming and resume it; every change through the tools, so in the audit trail.
People who are not operators and agents get no form, and a form they forge is refused with
nothing changed; bad input is refused in the tool's words on the form's page; a form read at a
version no longer current does nothing."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from typing import Any

import pytest

from tests.integration.test_console_http import Browser
from tests.integration.test_console_states import page, signed_in
from tests.liveness_support import World
from vigil.clock import ManualClock, iso, parse_iso
from vigil.kit.http import HttpResponse

HOOK = "https://receiver.example.com/vigil"
SCOPE = "acme-job-17"
SECRET = re.compile(r"whsec_[A-Za-z0-9+/=]{40,}")


@pytest.fixture
def world(clock: ManualClock) -> World:
    world = World(clock)
    _, ann = world.tenant.register(name="ann")
    world.call("heartbeat", ann, scope=SCOPE, expect_within_seconds=600)
    return world


def operator(world: World) -> Browser:
    return signed_in(world, world.tenant.operator_secret)


def form_on(body: str, action: str) -> dict[str, str]:
    """The fields a page's form posting to ``action`` sends as rendered: hidden and typed
    values, a checked box, a select's chosen option."""
    found = re.search(rf'<form method="post" action="{re.escape(action)}"[^>]*>(.*?)</form>', body)
    assert found is not None, f"no form posting to {action}"
    inner = found.group(1)
    fields = {}
    for tag in re.findall(r"<input [^>]*>", inner):
        name = re.search(r'name="([^"]*)"', tag)
        value = re.search(r'value="([^"]*)"', tag)
        kind = re.search(r'type="([^"]*)"', tag)
        if name is None or (kind and kind.group(1) == "checkbox" and " checked" not in tag):
            continue
        fields[html.unescape(name.group(1))] = html.unescape(value.group(1) if value else "")
    for name, options in re.findall(r'<select [^>]*name="([^"]*)"[^>]*>(.*?)</select>', inner):
        chosen = re.search(r'<option value="([^"]*)" selected', options) or re.search(
            r'<option value="([^"]*)"', options
        )
        fields[name] = html.unescape(chosen.group(1)) if chosen else ""
    return fields


def has_form(body: str, action: str) -> bool:
    return f'action="{action}"' in body


def channels(world: World) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = world.call("list_channels")["channels"]
    return found


def pauses(world: World) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = world.call("list_pauses")["pauses"]
    return found


def audited(world: World) -> set[tuple[str, str]]:
    """What the audit trail holds, as (action, actor): the clock stands still in these tests,
    so the order of events made in one instant is not asserted."""
    return {(e["action"], e["actor"]) for e in world.call("list_audit_events")["events"]}


def make_channel(world: World, **more: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "name": "pager receiver",
        "kind": "webhook",
        "url": HOOK,
        "rules": [{"events": ["switch.fired"]}],
        **more,
    }
    made: dict[str, Any] = world.call("create_channel", **arguments)
    return made


def create_form(browser: Browser, **fields: str) -> dict[str, str]:
    """The channels page's form, filled in for a webhook taking two events under acme-."""
    form = form_on(page(browser, "/console/channels"), "/console/channels/create")
    form.update(
        {
            "name": "pager receiver",
            "kind": "webhook",
            "url": HOOK,
            "scope_prefix": "acme-",
            "event:switch.fired": "yes",
            "event:request.opened": "yes",
        }
    )
    form.update(fields)
    return form


def text(response: HttpResponse) -> str:
    return response.body.decode()


# -- channels ------------------------------------------------------------------------------------
def test_an_operator_creates_a_webhook_channel_and_sees_its_secret_once(world: World) -> None:
    ops = operator(world)
    listing = page(ops, "/console/channels")
    assert "Repeats and escalation" in listing  # left to REST and MCP, and said so
    form = create_form(ops)
    assert form["idempotency_key"].startswith("console-")

    created = ops.post("/console/channels/create", form)
    assert created.status == 200
    body = text(created)
    (secret,) = SECRET.findall(body)
    assert "shown this once" in body.lower()
    (channel,) = channels(world)
    assert (channel["name"], channel["kind"], channel["target"]) == (
        "pager receiver",
        "webhook",
        HOOK,
    )
    assert channel["rules"][0]["events"] == ["switch.fired", "request.opened"]
    assert channel["rules"][0]["scope_prefix"] == "acme-"
    assert f'href="/console/channel?id={channel["id"]}"' in body

    # Never again: not on the listing, its live part, or the channel's page.
    for path, query in (
        ("/console/channels", {}),
        ("/console/channels", {"fragment": "1"}),
        ("/console/channel", {"id": channel["id"]}),
    ):
        shown = text(ops.get(path, **query))
        assert secret not in shown
        assert not SECRET.search(shown)

    # A double submit creates nothing more and shows no secret, saying where it went.
    again = ops.post("/console/channels/create", form)
    assert again.status == 200
    assert not SECRET.search(text(again))
    assert "sent twice" in text(again)
    assert len(channels(world)) == 1
    assert ("create_channel", world.tenant.operator.id) in audited(world)


def test_an_email_channel_needs_no_url_and_shows_no_secret(world: World) -> None:
    ops = operator(world)
    form = create_form(ops, kind="email", url="", email="oncall@example.com")
    created = ops.post("/console/channels/create", form)
    assert created.status == 200
    assert not SECRET.search(text(created))
    (channel,) = channels(world)
    assert (channel["kind"], channel["target"]) == ("email", "oncall@example.com")


def test_a_pagerduty_channel_takes_its_routing_key_and_never_shows_it(world: World) -> None:
    ops = operator(world)
    key = "R0123456789abcdef0123456789ABCDE"
    form = create_form(ops, kind="pagerduty", url="", routing_key=key)
    created = ops.post("/console/channels/create", form)
    assert created.status == 200
    (channel,) = channels(world)
    assert (channel["kind"], channel["target"]) == ("pagerduty", "https://events.pagerduty.com")
    assert key not in created.body.decode()
    assert key not in page(ops, "/console/channel", id=channel["id"])


def test_a_refused_teams_channel_does_not_write_its_url_back(world: World) -> None:
    ops = operator(world)
    url = "https://example.com/workflows/1/triggers/manual/paths/invoke?sig=secretsig"
    refused = ops.post("/console/channels/create", create_form(ops, kind="teams", url=url))
    assert refused.status == 400
    assert "Workflows" in text(refused)
    assert "secretsig" not in refused.body.decode()
    assert channels(world) == []


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"name": ""}, "name:"),
        ({"url": "ftp://receiver.example.com"}, "url:"),
        ({"kind": "email", "url": "", "email": "not-an-address"}, "email:"),
        ({"event:switch.fired": None, "event:no.such": "yes"}, "rules.0.events.1:"),
        ({"event:switch.fired": None, "event:request.opened": None}, "rules.0.events:"),
    ],
    ids=["empty name", "bad url", "bad email", "unknown event", "no event"],
)
def test_bad_channel_input_is_refused_on_the_form_and_creates_nothing(
    world: World, fields: dict[str, str | None], said: str
) -> None:
    """``fields`` change the filled-in form; None unticks a box."""
    ops = operator(world)
    form = create_form(ops)
    for name, value in fields.items():
        if value is None:
            del form[name]
        else:
            form[name] = value
    refused = ops.post("/console/channels/create", form)
    assert refused.status == 400
    body = text(refused)
    assert "invalid_argument" in body
    assert said in body
    assert not SECRET.search(body)
    # The form again, as the person left it, with the same key: nothing was created.
    again = form_on(body, "/console/channels/create")
    assert again["idempotency_key"] == form["idempotency_key"]
    assert (again["name"], again["kind"]) == (form["name"], form["kind"])
    assert channels(world) == []


def channel_page(browser: Browser, channel_id: str) -> str:
    return page(browser, "/console/channel", id=channel_id)


def test_an_operator_tests_disables_enables_and_deletes_a_channel(world: World) -> None:
    made = make_channel(world)["channel"]
    ops = operator(world)
    listing = page(ops, "/console/channels")
    assert f'href="/console/channel?id={made["id"]}"' in listing
    body = channel_page(ops, made["id"])
    assert "pager receiver" in body

    tested = ops.post("/console/channels/test", form_on(body, "/console/channels/test"))
    assert tested.status == 200
    assert "delivered" in text(tested)
    assert "HTTP 204" in text(tested)
    assert [url for url, _ in world.posted] == [HOOK]

    disable = form_on(body, "/console/channels/state")
    assert (disable["state"], disable["version"]) == ("disabled", "1")
    done = ops.post("/console/channels/state", disable)
    assert (done.status, done.headers["location"]) == (303, f"/console/channel?id={made['id']}")
    assert channels(world)[0]["state"] == "disabled"
    body = channel_page(ops, made["id"])
    enable = form_on(body, "/console/channels/state")
    assert (enable["state"], enable["version"]) == ("enabled", "2")
    assert ops.post("/console/channels/state", enable).status == 303
    assert channels(world)[0]["state"] == "enabled"

    # Delete asks first, naming the channel; only the confirmed form deletes.
    body = channel_page(ops, made["id"])
    confirm = ops.post("/console/channels/delete", form_on(body, "/console/channels/delete"))
    assert confirm.status == 200
    assert "pager receiver" in text(confirm)
    assert "Yes, delete" in text(confirm)
    assert len(channels(world)) == 1
    confirmed = form_on(text(confirm), "/console/channels/delete")
    assert confirmed["confirm"] == "yes"
    gone = ops.post("/console/channels/delete", confirmed)
    assert (gone.status, gone.headers["location"]) == (303, "/console/channels")
    assert channels(world) == []
    # A second press of the confirmation is the same deletion, not a refusal.
    assert ops.post("/console/channels/delete", confirmed).status == 303

    me = world.tenant.operator.id
    assert {
        ("test_channel", me),
        ("disable_channel", me),
        ("enable_channel", me),
        ("delete_channel", me),
    } <= audited(world)


def test_an_operator_rotates_a_webhook_secret_and_sees_the_new_one_once(world: World) -> None:
    made = make_channel(world)
    ops = operator(world)
    mail = make_channel(world, name="mail", kind="email", url=None, email="a@example.com")
    assert not has_form(channel_page(ops, mail["channel"]["id"]), "/console/channels/rotate")
    body = channel_page(ops, made["channel"]["id"])
    rotated = ops.post("/console/channels/rotate", form_on(body, "/console/channels/rotate"))
    assert rotated.status == 200
    (secret,) = SECRET.findall(text(rotated))
    assert secret != made["signing_secret"]
    assert secret not in channel_page(ops, made["channel"]["id"])
    assert ("rotate_channel_secret", world.tenant.operator.id) in audited(world)


def test_a_form_read_at_a_version_no_longer_current_does_nothing(world: World) -> None:
    made = make_channel(world)["channel"]
    ops = operator(world)
    body = channel_page(ops, made["id"])
    # Meanwhile another operator disables it (version 2).
    world.call("set_channel_state", id=made["id"], version=1, state="disabled")
    before = channels(world)
    for action in (
        "/console/channels/state",
        "/console/channels/rotate",
        "/console/channels/delete",
    ):
        refused = ops.post(action, form_on(body, action))
        assert refused.status == 409, action
        assert "changed meanwhile" in text(refused), action
        assert "Nothing was done" in text(refused), action
        assert f'href="/console/channel?id={made["id"]}"' in text(refused), action
    # A confirmation read before the change does not delete either.
    confirmed = {**form_on(body, "/console/channels/delete"), "confirm": "yes"}
    assert ops.post("/console/channels/delete", confirmed).status == 409
    assert channels(world) == before


def test_a_worker_gets_no_form_and_a_forged_one_is_refused(world: World) -> None:
    made = make_channel(world)["channel"]
    ops_body = channel_page(operator(world), made["id"])
    _, pat_secret = world.tenant.register(kind="person", name="Pat")
    _, bot_secret = world.tenant.register(name="bot")
    for secret in (pat_secret, bot_secret):
        who = signed_in(world, secret)
        for path in ("/console/channels", "/console/switches"):
            body = page(who, path)
            assert '<form method="post" action="/console/channels' not in body, path
            assert not has_form(body, "/console/switches/pause"), path
        csrf = form_on(page(who, "/console"), "/console/sign-out")["csrf"]
        forged = {
            "/console/channels/create": create_form(operator(world)),
            "/console/channels/test": form_on(ops_body, "/console/channels/test"),
            "/console/channels/state": form_on(ops_body, "/console/channels/state"),
            "/console/channels/rotate": form_on(ops_body, "/console/channels/rotate"),
            "/console/channels/delete": {
                **form_on(ops_body, "/console/channels/delete"),
                "confirm": "yes",
                "idempotency_key": "console-forged",
            },
            "/console/switches/pause": {
                "scope_prefix": "acme-",
                "for_hours": "1",
                "until_next_beat": "yes",
                "until": iso(world.clock.now() + timedelta(hours=1)),
                "idempotency_key": "console-forged",
            },
        }
        for path, form in forged.items():
            for step in ({}, {"confirm": "yes"}):
                response = who.post(path, {**form, **step, "csrf": csrf})
                assert response.status == 403, (path, step)
                assert "forbidden" in text(response)
    (channel,) = channels(world)
    assert (channel["state"], channel["version"]) == ("enabled", 1)
    assert [url for url, _ in world.posted] == []
    assert pauses(world) == []


# -- pauses --------------------------------------------------------------------------------------
def pause_form(browser: Browser, **fields: str) -> dict[str, str]:
    form = form_on(page(browser, "/console/switches"), "/console/switches/pause")
    form.update({"scope_prefix": "acme-", "for_hours": "4", "reason": "moving racks"})
    form.update(fields)
    return form


def test_an_operator_pauses_a_prefix_after_confirming_and_resumes_it(
    world: World, clock: ManualClock
) -> None:
    ops = operator(world)
    form = pause_form(ops)
    confirm = ops.post("/console/switches/pause", form)
    assert confirm.status == 200
    body = text(confirm)
    assert "Yes, pause" in body
    assert SCOPE in body  # the armed switches it would hold
    assert "moving racks" in body
    assert pauses(world) == []
    confirmed = form_on(body, "/console/switches/pause")
    assert confirmed["confirm"] == "yes"
    assert confirmed["until"] == iso(clock.now() + timedelta(hours=4))

    clock.advance(30)  # reading the confirmation takes a while: the end is the one shown
    done = ops.post("/console/switches/pause", confirmed)
    assert (done.status, done.headers["location"]) == (303, "/console/switches")
    (paused,) = pauses(world)
    assert (paused["scope_prefix"], paused["reason"]) == ("acme-", "moving racks")
    assert parse_iso(paused["until"]) == parse_iso(confirmed["until"])
    assert ops.post("/console/switches/pause", confirmed).status == 303  # a double submit
    assert len(pauses(world)) == 1

    listing = page(ops, "/console/switches")
    assert "moving racks" in listing
    resume = form_on(listing, "/console/switches/resume")
    assert (resume["scope_prefix"], resume["version"]) == ("acme-", str(paused["version"]))
    assert ops.post("/console/switches/resume", resume).status == 303
    assert pauses(world) == []
    me = world.tenant.operator.id
    assert {("pause", me), ("resume", me)} <= audited(world)


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"scope_prefix": ""}, "scope_prefix:"),
        ({"for_hours": "", "until_next_beat": ""}, "a pause needs an end"),
        ({"reason": "x" * 201}, "reason:"),
    ],
    ids=["empty prefix", "no end", "long reason"],
)
def test_a_bad_pause_is_refused_on_the_form_and_pauses_nothing(
    world: World, fields: dict[str, str], said: str
) -> None:
    ops = operator(world)
    form = pause_form(ops, **fields)
    refused = ops.post("/console/switches/pause", form)
    assert refused.status == 400
    body = text(refused)
    assert "invalid_argument" in body
    assert said in html.unescape(body)
    assert "Yes, pause" not in body
    assert has_form(body, "/console/switches/pause")
    assert pauses(world) == []


def test_a_prefix_paused_meanwhile_is_refused_on_the_switches_page(world: World) -> None:
    ops = operator(world)
    confirmed = form_on(
        text(ops.post("/console/switches/pause", pause_form(ops))), "/console/switches/pause"
    )
    world.call("pause_switches", scope_prefix="acme-", until_next_beat=True)
    refused = ops.post("/console/switches/pause", confirmed)
    assert refused.status == 409
    assert "paused already" in text(refused)
    assert has_form(text(refused), "/console/switches/pause")
    assert [p["until_next_beat"] for p in pauses(world)] == [True]


def test_a_resume_read_at_a_version_no_longer_current_does_nothing(world: World) -> None:
    world.call("pause_switches", scope_prefix="acme-", until_next_beat=True)
    ops = operator(world)
    resume = form_on(page(ops, "/console/switches"), "/console/switches/resume")
    # Meanwhile another operator ends it (version 2) and pauses the prefix again (3).
    world.call("resume_switches", scope_prefix="acme-", version=1)
    world.call("pause_switches", scope_prefix="acme-", until_next_beat=True, reason="again")
    refused = ops.post("/console/switches/resume", resume)
    assert refused.status == 409
    assert "changed meanwhile" in text(refused)
    (paused,) = pauses(world)
    assert (paused["reason"], paused["version"]) == ("again", 3)
