"""Small things a person notices, over HTTP on the in-memory app: counts read "1 request",
not "1 requests"; an agent signed in sees what its role may see and one line about the rest,
never a section that only says it may not; and a page about one thing opened without its id
answers a page that says which id it needs, never a schema error."""

from __future__ import annotations

import re

import pytest

from tests.integration.test_console_states import page, signed_in
from tests.liveness_support import World
from vigil.clock import ManualClock


@pytest.fixture
def world(clock: ManualClock) -> World:
    return World(clock)


def counts(body: str) -> dict[str, str]:
    """The overview's counts, each with the words after it."""
    found = re.findall(r'<span class="count" id="count-(\w+)">([^<]*)</span> ([^<]*)</li>', body)
    return {key: f"{n} {label}" for key, n, label in found}


def test_a_count_of_one_is_singular_and_others_are_plural(world: World) -> None:
    pat, pat_secret = world.tenant.register(kind="person", name="Pat")
    _, ann = world.tenant.register(name="ann")
    world.call("session_heartbeat", ann, sessionId="build-1", idempotencyKey="b1")
    world.call("pause_switches", scope_prefix="job-", until_next_beat=True)
    world.call("ask", ann, target={"kind": "person", "id": pat}, kind="question", body="Now?")
    world.advance(3600)
    shown = counts(page(signed_in(world, pat_secret), "/console"))
    assert shown["waiting"] == "1 request waiting for you"
    assert shown["paused"] == "1 pause in force"
    assert shown["stale"] == "1 stale session"
    assert shown["armed"] == "0 armed"
    world.call("ask", ann, target={"kind": "person", "id": pat}, kind="question", body="Later?")
    shown = counts(page(signed_in(world, pat_secret), "/console"))
    assert shown["waiting"] == "2 requests waiting for you"


def test_an_agent_sees_no_section_it_may_not_see(world: World) -> None:
    pat, _ = world.tenant.register(kind="person", name="Pat")
    _, ann = world.tenant.register(name="ann")
    world.call("heartbeat", ann, scope="job-1", expect_within_seconds=600)
    world.call("ask", ann, target={"kind": "person", "id": pat}, kind="question", body="Now?")
    browser = signed_in(world, ann)
    body = page(browser, "/console")
    assert "Your role may not see this." not in body
    assert body.count('class="hint" id="narrowed"') == 1
    sections = re.findall(r'<section aria-labelledby="(\w+)-title"', body)
    assert sections == ["waiting", "ages"]
    # Its own open request is counted: an agent oversees nothing but what it asked.
    assert counts(body) == {"waiting": "0 requests waiting for you", "open": "1 request open"}
    # A page whose listing its role may not read says so once.
    for path in ("/console/switches", "/console/sessions", "/console/channels"):
        assert page(browser, path).count("Your role may not see") == 1, path
    runs = page(browser, "/console/runs")
    assert "Your role may not see this." not in runs
    assert 'id="holders"' not in runs


@pytest.mark.parametrize(
    ("path", "needs"),
    [
        ("/console/request", "Which request?"),
        ("/console/conversation", "Which conversation?"),
        ("/console/session", "Which session?"),
        ("/console/switch", "Which switch?"),
        ("/console/channel", "Which channel?"),
    ],
)
def test_a_page_opened_without_its_id_is_a_friendly_404(
    world: World, path: str, needs: str
) -> None:
    _, pat_secret = world.tenant.register(kind="person", name="Pat")
    browser = signed_in(world, pat_secret)
    for query in ({}, {"id": ""}, {"scope": ""}):
        response = browser.get(path, **query)
        assert response.status == 404
        body = response.body.decode()
        assert needs in body
        assert "schema" not in body
        assert "invalid_argument" not in body
