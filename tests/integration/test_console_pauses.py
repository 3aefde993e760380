"""Pauses in the web console, over HTTP on DynamoDB (moto): the overview's "Pauses" section,
the paused mark on a held switch, the pauses over one switch on its page, and what another
namespace and a worker agent see of them."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from datetime import timedelta

import pytest

from tests.integration.test_console_http import Browser
from tests.support import Tenant, app_on
from vigil.clock import ManualClock, iso
from vigil.store import Store
from vigil.transports.router import Router

MARKUP = '<img src=x onerror="alert(1)">'
SCOPE = "acme-job-17"


@dataclass
class Scene:
    """Namespace acme (its operator; a person, pat; a worker agent, ann, beating a 600 s
    switch) and namespace globex (its operator), with one console in front of both."""

    clock: ManualClock
    router: Router
    acme: Tenant
    globex: Tenant
    pat: str
    ann: str

    def signed_in(self, secret: str) -> Browser:
        browser = Browser(self.router)
        assert browser.sign_in(secret).status == 303
        return browser


@pytest.fixture
def scene(dynamo_store: Store, clock: ManualClock) -> Scene:
    app = app_on(dynamo_store, clock)
    acme = Tenant(app, clock, "acme")
    globex = Tenant(app, clock, "globex")
    _, pat = acme.register(kind="person", name="pat")
    _, ann = acme.register(name="ann")
    acme.call("heartbeat", ann, scope=SCOPE, expect_within_seconds=600)
    router = Router(app, frozenset())
    return Scene(clock, router, acme, globex, pat, ann)


def section(body: str, ident: str) -> str:
    found = re.search(
        rf'<section aria-labelledby="{ident}-title" id="{ident}">(.*?)</section>', body
    )
    assert found is not None, f"no section {ident}"
    return found.group(1)


def pause(scene: Scene, prefix: str, **more: object) -> dict[str, object]:
    return scene.acme.call("pause_switches", scope_prefix=prefix, **more)


def test_the_overview_lists_the_pauses_and_marks_the_switches_they_hold(scene: Scene) -> None:
    until = scene.clock.now() + timedelta(hours=2)
    made = pause(scene, "acme-job", until=iso(until), reason=f"upgrade {MARKUP}")
    pause(scene, "nightly/", until_next_beat=True)
    scene.clock.advance(700)  # ann's 600 s switch is past its deadline: held, not fired
    browser = scene.signed_in(scene.pat)
    body = browser.get("/console").body.decode()

    assert re.search(r'<span class="count" id="count-paused">2</span>', body)
    pauses = section(body, "pauses")
    assert pauses.index("acme-job") < pauses.index("nightly/")
    assert f"upgrade {html.escape(MARKUP, quote=True)}" in pauses
    assert MARKUP not in body
    assert f'data-deadline="{made["until"]}"' in pauses
    assert "at each switch's next beat" in pauses
    assert scene.acme.operator.id in pauses

    armed = section(body, "armed")
    row = re.search(
        r'<tr><td data-label="Scope"><a href="/console/switch\?scope=acme-job-17">.*?</tr>', armed
    )
    assert row is not None
    assert "due 1 min 40 s ago" in row.group(0)
    assert '<span class="badge state-paused">paused</span>' in row.group(0)
    # Held, it is not "expiring soon": the pause keeps it from firing.
    assert re.search(r'<span class="count" id="count-soon">0</span>', body)


def test_a_switch_page_shows_the_pauses_over_it(scene: Scene) -> None:
    pause(scene, "acme-", until_next_beat=True, reason="moving racks")
    pause(scene, "other-", until_next_beat=True)
    browser = scene.signed_in(scene.pat)
    body = browser.get("/console/switch", scope=SCOPE).body.decode()
    over = section(body, "paused")
    assert "acme-" in over
    assert "moving racks" in over
    assert "other-" not in over
    assert '<span class="badge state-paused">paused</span> under acme-' in body

    # ann beats after the pause began: a pause until the next beat no longer covers it.
    scene.clock.advance(1)
    scene.acme.call("heartbeat", scene.ann, scope=SCOPE, expect_within_seconds=600)
    body = browser.get("/console/switch", scope=SCOPE).body.decode()
    assert "No pause covers this switch." in section(body, "paused")


def test_another_namespace_and_a_worker_agent_see_no_pause(scene: Scene) -> None:
    pause(scene, "acme-job", until_next_beat=True, reason="acme's secret maintenance")
    mallory = scene.signed_in(scene.globex.operator_secret)
    body = mallory.get("/console").body.decode()
    assert "No switch is paused." in section(body, "pauses")
    assert "acme" not in section(body, "pauses")
    assert "secret maintenance" not in body

    ann = scene.signed_in(scene.ann)
    body = ann.get("/console").body.decode()
    assert 'id="pauses"' not in body  # left out of what her role may see
    assert "secret maintenance" not in body
