"""The pictures on the console's pages, over HTTP on the in-memory app with a moved clock: a
fired switch's day, the overview's fire lateness and open requests by age, and a session's
progress; each says in words what it shows, beside the tables that hold the data."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from tests.integration.test_console_outcomes import section_of
from tests.integration.test_console_states import page, signed_in
from tests.liveness_support import World
from vigil.clock import ManualClock

SCOPE = "acme-job-17"
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def world(clock: ManualClock) -> World:
    return World(clock)


def picture(body: str, ident: str) -> ET.Element:
    found = re.search(
        rf'<svg [^>]*aria-labelledby="{ident}-title {ident}-desc".*?</svg>', body, re.S
    )
    assert found is not None, f"no picture {ident}"
    return ET.fromstring(found.group(0))


def description(root: ET.Element) -> str:
    return next(e.text or "" for e in root.iter(f"{SVG}desc"))


def kinds(root: ET.Element) -> list[str]:
    return [e.get("class") or "" for e in root.iter() if e.get("class")]


def fired(world: World) -> str:
    """A switch of a registered agent that beat, missed its 3 s window and fired; the secret
    of a person who reads it."""
    _, person_secret = world.tenant.register(kind="person", name="Pat")
    _, agent_secret = world.tenant.register(name="builder")
    world.call("heartbeat", agent_secret, scope=SCOPE, expect_within_seconds=3)
    world.advance(4)
    return person_secret


def test_a_fired_switchs_page_draws_its_day(world: World) -> None:
    body = page(signed_in(world, fired(world)), "/console/switch", scope=SCOPE)
    day = picture(section_of(body, "day"), "day")
    assert {"beat", "armed", "death", "now"} <= set(kinds(day))
    assert "1 death in the last 24 hours" in description(day)
    assert "Its last beat 4 s ago" in description(day)
    assert "<table" in section_of(body, "history"), "the deaths stay in their table"


def test_the_overview_draws_how_late_switches_fired(world: World) -> None:
    person_secret = fired(world)
    body = page(signed_in(world, person_secret), "/console")
    lateness = picture(section_of(body, "lateness"), "lateness")
    assert kinds(lateness).count("fire") == 1
    assert "1 fire in the last hour" in description(lateness)


def test_the_overview_draws_open_requests_by_age(world: World) -> None:
    pat, pat_secret = world.tenant.register(kind="person", name="Pat")
    _, ann_secret = world.tenant.register(name="ann")
    for body in ("Deploy <billing>?", "Rotate the keys?"):
        world.call(
            "ask", ann_secret, target={"kind": "person", "id": pat}, kind="question", body=body
        )
        world.advance(3600)
    body = page(signed_in(world, pat_secret), "/console")
    found = re.search(r'<figure class="bars".*?</figure>', section_of(body, "ages"), re.S)
    assert found is not None
    ages = ET.fromstring(found.group(0))
    assert kinds(ages).count("age") == 2
    (caption,) = ages.iter("figcaption")
    assert "2 open requests; longest waiting 2 h 0 min" in (caption.text or "")
    labels = [e.text or "" for e in ages.iter("span") if e.get("class") == "bar-label"]
    assert labels[0].startswith("Question: Deploy <billing>?")


def test_a_quiet_overview_says_nothing_fired_and_nothing_waits(world: World) -> None:
    _, person_secret = world.tenant.register(kind="person", name="Pat")
    body = page(signed_in(world, person_secret), "/console")
    assert "No switch fired in the last 24 hours." in section_of(body, "lateness")
    assert "No request is open." in section_of(body, "ages")


def test_a_sessions_page_draws_its_progress(world: World) -> None:
    _, person_secret = world.tenant.register(kind="person", name="Pat")
    _, agent_secret = world.tenant.register(name="builder")
    world.call(
        "session_heartbeat",
        agent_secret,
        sessionId="build-5",
        status="active",
        progressPercent=40,
        idempotencyKey="b1",
    )
    body = page(signed_in(world, person_secret), "/console/session", id="build-5")
    bar = picture(section_of(body, "status"), "progress")
    assert "40 % done" in description(bar)


def test_a_switchs_day_draws_a_beat_for_each_half_hour_it_was_beaten(world: World) -> None:
    _, person_secret = world.tenant.register(kind="person", name="Pat")
    _, agent_secret = world.tenant.register(name="builder")
    for _ in range(12):  # six hours of beats every 30 minutes, then three quiet hours
        world.call("heartbeat", agent_secret, scope=SCOPE, expect_within_seconds=7200)
        world.advance(1800)
    world.advance(3 * 3600)
    world.call("heartbeat", agent_secret, scope=SCOPE, expect_within_seconds=7200)
    body = page(signed_in(world, person_secret), "/console/switch", scope=SCOPE)
    day = picture(section_of(body, "day"), "day")
    assert kinds(day).count("beat") == 13
    assert "It beat in 13 of the last 48 half hours." in description(day)


def test_a_sessions_page_draws_its_progress_over_time(world: World) -> None:
    _, person_secret = world.tenant.register(kind="person", name="Pat")
    _, agent_secret = world.tenant.register(name="builder")
    for n, percent in enumerate((10, 10, 35, 60, 60, 90)):
        world.call(
            "session_heartbeat",
            agent_secret,
            sessionId="build-6",
            progressPercent=percent,
            idempotencyKey=f"b{n}",
        )
        world.advance(600)
    body = page(signed_in(world, person_secret), "/console/session", id="build-6")
    trend = picture(section_of(body, "status"), "progress-history")
    assert kinds(trend).count("change") == 4
    assert (
        "3 changes since 1 h 0 min ago: from 10 % to 90 %, the latest 10 min 0 s ago."
        in description(trend)
    )
