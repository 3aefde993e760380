"""What the console says of times and states, over HTTP on the in-memory app with a moved
clock: a time ahead reads "in …" and one behind "… ago"; an ended session is shown ended and
never stale; a switch that fired before any channel has an alert a person can acknowledge; a
pause shows on the runs page too; holders and owners are shown by name; the instruction form
says its limit; and the README's refresh interval is the one the pages use."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.integration.test_console_http import Browser, location
from tests.liveness_support import World
from vigil.clock import ManualClock
from vigil.console.components import countdown, relative
from vigil.console.frame import REFRESH_LISTINGS_MS, REFRESH_MS
from vigil.console.pages.switches import SWITCH_HEADERS
from vigil.sessions.records import MAX_BODY_BYTES, STALE_AFTER_SECONDS
from vigil.transports.router import Router

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SCOPE = "acme-job-17"


@pytest.fixture
def world(clock: ManualClock) -> World:
    return World(clock)


def signed_in(world: World, secret: str) -> Browser:
    browser = Browser(Router(world.app, frozenset()))
    assert browser.sign_in(secret).status == 303
    return browser


def page(browser: Browser, path: str, **query: str) -> str:
    response = browser.get(path, **query)
    assert response.status == 200
    return response.body.decode()


# -- times ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(52 * 60 + 12, "in 52 min 12 s"), (-(52 * 60 + 12), "52 min 12 s ago"), (0, "0 s ago")],
)
def test_a_time_ahead_reads_in_and_one_behind_reads_ago(seconds: int, shown: str) -> None:
    at = (NOW + timedelta(seconds=seconds)).isoformat()
    assert f">{shown}</time>" in relative(at, NOW)
    expected = shown if seconds > 0 else f"due {shown}"
    assert f">{expected}</span>" in countdown(at, NOW)


def test_a_request_answered_before_its_expiry_shows_the_expiry_ahead(world: World) -> None:
    person, person_secret = world.tenant.register(kind="person", name="Pat")
    _, agent = world.tenant.register(name="builder")
    asked = world.call("ask", agent, target={"kind": "person", "id": person}, body="Which region?")
    world.advance(60)
    world.call("reply", person_secret, id=asked["id"], version=1, outcome="answered", answer="eu")
    world.advance(12)
    body = page(signed_in(world, person_secret), "/console/requests", show="all")
    row = re.search(
        rf'<tr><td data-label="Request"><a href="/console/request\?id={asked["id"]}">.*?</tr>', body
    )
    assert row is not None
    assert ">in 23 h 58 min</time>" in row.group(0)
    assert " ago" not in row.group(0)


def test_the_readme_states_the_refresh_intervals_the_pages_use() -> None:
    text = " ".join(README.read_text().split())
    assert (
        f"The pages refresh themselves every {REFRESH_MS // 1000} seconds; the overview and a "
        f"switch's page, which read the whole namespace, every {REFRESH_LISTINGS_MS // 1000} "
        "seconds; and every 2 seconds around a deadline on the page." in text
    )
    script = (
        Path(__file__).resolve().parents[2] / "src/vigil/console/assets/console.js"
    ).read_text()
    assert "Math.min(every, 2000)" in script  # the 2 seconds around a deadline


# -- sessions -------------------------------------------------------------------------------------
def test_an_ended_session_is_listed_as_ended_and_never_as_stale(world: World) -> None:
    _, person_secret = world.tenant.register(kind="person", name="Pat")
    agent_id, agent = world.tenant.register(name="builder")
    world.call(
        "session_heartbeat",
        agent,
        sessionId="build-5",
        progressPercent=100,
        stepIndex=5,
        stepCount=5,
        idempotencyKey="b",
    )
    world.call("end_session", agent, sessionId="build-5", outcome="completed")
    world.advance(STALE_AFTER_SECONDS * 3)
    browser = signed_in(world, person_secret)
    listing = page(browser, "/console/sessions")
    assert '<span class="badge state-ended">ended</span> completed, <time' in listing
    assert "state-stale" not in listing
    # Its status is that it ended, not the "active" it last reported, here and on its page.
    assert "state-active" not in listing
    assert "state-active" not in page(browser, "/console/session", id="build-5")
    assert f'builder <small class="meta id">{agent_id}</small>' in listing
    overview = page(browser, "/console")
    assert re.search(r'<span class="count" id="count-stale">0</span>', overview)


def test_the_instruction_form_says_its_limit_and_cuts_nothing(world: World) -> None:
    _, person_secret = world.tenant.register(kind="person", name="Pat")
    _, agent = world.tenant.register(name="builder")
    world.call("session_heartbeat", agent, sessionId="s-1", idempotencyKey="b")
    browser = signed_in(world, person_secret)
    form = page(browser, "/console/session", id="s-1")
    assert "maxlength" not in form
    assert f'data-limit="{MAX_BODY_BYTES}"' in form
    assert f"Up to {MAX_BODY_BYTES} bytes of UTF-8" in form

    key = re.search(r'name="idempotency_key" value="([^"]+)"', form)
    assert key is not None
    refused = browser.post(
        "/console/sessions/instructions",
        {
            "csrf": browser.csrf(),
            "session_id": "s-1",
            "idempotency_key": key.group(1),
            "body": "y" * 9000,
        },
    )
    assert refused.status == 400
    said = refused.body.decode()
    assert "invalid_argument" in said
    assert f"body: String should have at most {MAX_BODY_BYTES} characters" in said
    assert world.call("list_instructions", person_secret, sessionId="s-1")["instructions"] == []


# -- switches -------------------------------------------------------------------------------------
def test_a_switch_that_fired_before_any_channel_has_its_alert_acknowledged(
    world: World,
) -> None:
    person, person_secret = world.tenant.register(kind="person", name="Pat")
    _, agent = world.tenant.register(name="builder")
    world.call("heartbeat", agent, scope=SCOPE, expect_within_seconds=10)
    world.advance(11)  # fired; the namespace has no channel
    [death] = world.call("list_deaths")["deaths"]
    alert = death["alert_id"]

    browser = signed_in(world, person_secret)
    assert "Acknowledge the alert" in page(browser, "/console/switch", scope=SCOPE)
    done = browser.post(
        "/console/alerts/acknowledge", {"csrf": browser.csrf(), "event_id": alert, "scope": SCOPE}
    )
    assert done.status == 303
    assert location(done) == f"/console/switch?scope={SCOPE}"
    assert world.call("acknowledge_alert", event_id=alert)["acknowledged_by"] == person


def test_the_runs_page_marks_a_paused_switch_and_names_its_holder(world: World) -> None:
    _, person_secret = world.tenant.register(kind="person", name="Pat")
    agent_id, agent = world.tenant.register(name="builder")
    world.call("heartbeat", agent, scope=SCOPE, expect_within_seconds=600, agent_id="worker-3")
    world.call("pause_switches", scope_prefix="acme-", until_next_beat=True)
    browser = signed_in(world, person_secret)
    for path in ("/console/runs", "/console/switches", "/console"):
        body = page(browser, path)
        row = re.search(
            rf'<tr><td data-label="Scope"><a href="/console/switch\?scope={SCOPE}">.*?</tr>', body
        )
        assert row is not None, path
        assert '<span class="badge state-paused">paused</span>' in row.group(0), path
        assert f'builder (worker-3) <small class="meta id">{agent_id}</small>' in row.group(0), path
    switch = page(browser, "/console/switch", scope=SCOPE)
    assert f'builder (worker-3) <small class="meta id">{agent_id}</small>' in switch


def test_every_cell_is_labelled_by_its_columns_header_for_a_narrow_screen(world: World) -> None:
    """On a phone a table's rows become cards and each cell is shown under its column's name,
    which the stylesheet reads from the cell itself."""
    _, person_secret = world.tenant.register(kind="person", name="Pat")
    _, agent = world.tenant.register(name="builder")
    world.call("heartbeat", agent, scope=SCOPE, expect_within_seconds=600)
    body = page(signed_in(world, person_secret), "/console/switches")
    (row,) = re.findall(r"<tr><td.*?</tr>", body)
    labels = re.findall(r'<td data-label="([^"]*)">', row)
    assert labels == list(SWITCH_HEADERS)
    assert row.count("<td") == len(SWITCH_HEADERS)
