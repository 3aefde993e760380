"""Deciding from an email, over HTTP on the in-memory app: a request's email to an address a
person linked carries a link made for that person; opening it changes nothing (mail scanners
open links), and shows the exact action; only the form posted from that page decides, as that
person, once. A link made for someone outside the request's audience, changed, replayed after
use or opened after the request's deadline decides nothing."""

from __future__ import annotations

import html
import re
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.integration.test_console_http import ORIGIN, Browser, field_of
from tests.integration.test_console_states import signed_in
from tests.liveness_support import World
from tests.support import TEST_KEYS
from vigil.clock import ManualClock
from vigil.kit.http import HttpResponse
from vigil.kit.keys import Keys
from vigil.notifications.email_links import decision_url
from vigil.notifications.sending import Sender
from vigil.transports.router import Router

DISGUISED = {"op": "deploy", "op\u200b": "drop-database"}
ADDRESS = "pat@example.com"


class FakeSes:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send_email(self, **message: Any) -> dict[str, str]:
        self.sent.append(message)
        return {"MessageId": f"m{len(self.sent)}"}

    def texts(self) -> list[str]:
        return [m["Content"]["Simple"]["Body"]["Text"]["Data"] for m in self.sent]


class Scene:
    def __init__(self, world: World) -> None:
        self.world = world
        self.ses = FakeSes()
        world.use_sender(
            Sender(
                keys=TEST_KEYS,
                clock=world.clock,
                console_base=ORIGIN,
                email_sender="vigil@example.com",
                ses=self.ses,
            )
        )
        self.router = Router(world.app, frozenset())
        self.pat, self.pat_secret = world.tenant.register(kind="person", name="Pat Doe")
        self.bob, self.bob_secret = world.tenant.register(kind="person", name="Bob Roe")
        self.ann, self.ann_secret = world.tenant.register(name="ann")

    def channel(self, address: str) -> None:
        self.world.call(
            "create_channel",
            name=address,
            kind="email",
            email=address,
            rules=[{"events": ["request.opened"]}],
        )

    def ask(self) -> str:
        request = self.world.call(
            "ask",
            self.ann_secret,
            target={"kind": "person", "id": self.pat},
            kind="approval",
            body="May I deploy?",
            action=DISGUISED,
        )
        self.world.run_alarms()
        return str(request["id"])

    def state(self, request_id: str) -> dict[str, Any]:
        return self.world.call("get_request", self.ann_secret, id=request_id)

    def link_address(self, address: str, secret: str) -> None:
        """The address's first request email carries a link that claims it; its person
        opens it signed in, and confirms."""
        self.channel(address)
        self.ask()
        claim = links_in(self.ses.texts()[-1], "/console/link")[0]
        browser = signed_in(self.world, secret)
        path, query = split(claim)
        page = browser.get(path, **query)
        assert address in page.body.decode()
        form = {"csrf": field_of(page, "csrf"), "token": query["token"]}
        assert browser.post("/console/link", form).status == 200

    def stranger(self) -> Browser:
        """Whoever holds the link: no console session at all."""
        return Browser(self.router)


def links_in(text: str, path: str) -> list[str]:
    return re.findall(rf"{re.escape(ORIGIN + path)}\?\S+", text)


def split(url: str) -> tuple[str, dict[str, str]]:
    parts = urlsplit(url)
    return parts.path, {k: v[0] for k, v in parse_qs(parts.query).items()}


@pytest.fixture
def scene(clock: ManualClock) -> Scene:
    return Scene(World(clock))


def decide(browser: Browser, link: str, outcome: str) -> HttpResponse:
    """The link opened in ``browser`` and its form posted, as its page gives it."""
    path, query = split(link)
    page = browser.get(path, **query)
    form = {
        "token": query["token"],
        "csrf": field_of(page, "csrf"),
        "version": field_of(page, "version"),
        "outcome": outcome,
    }
    return browser.post(path, form)


def test_an_unclaimed_address_gets_a_link_to_claim_it_and_no_decision_link(scene: Scene) -> None:
    scene.channel(ADDRESS)
    scene.ask()
    [text] = scene.ses.texts()
    assert links_in(text, "/console/link")
    assert not links_in(text, "/console/decide")


def test_opening_the_link_changes_nothing_and_shows_the_exact_action(scene: Scene) -> None:
    scene.link_address(ADDRESS, scene.pat_secret)
    request_id = scene.ask()
    [link] = links_in(scene.ses.texts()[-1], "/console/decide")
    before = scene.state(request_id)
    path, query = split(link)
    for _ in range(3):  # a scanner, a preview, the person
        page = scene.stranger().get(path, **query)
        assert page.status == 200
        assert page.headers["referrer-policy"] == "no-referrer"
    body = page.body.decode()
    assert "U+200B ZERO WIDTH SPACE" in body
    assert html.escape('"op\\u200b": "drop-database"', quote=True) in body
    assert "Pat Doe" in body  # whom it decides as
    assert scene.state(request_id) == before


def test_the_post_from_the_page_decides_as_the_person_once(scene: Scene) -> None:
    scene.link_address(ADDRESS, scene.pat_secret)
    request_id = scene.ask()
    [link] = links_in(scene.ses.texts()[-1], "/console/decide")
    done = decide(signed_in(scene.world, scene.pat_secret), link, "approved")
    assert done.status == 200
    decided = scene.state(request_id)
    assert decided["state"] == "approved"
    assert decided["response"]["by"] == scene.pat
    # The same link, used again, by Pat herself: it decides nothing more.
    path, query = split(link)
    page = scene.stranger().get(path, **query)
    assert "approved by Pat Doe" in page.body.decode()
    pat = signed_in(scene.world, scene.pat_secret)
    form = {"token": query["token"], "version": str(decided["version"]), "outcome": "denied"}
    again = pat.post(path, {**form, "csrf": field_of(pat.get("/console"), "csrf")})
    assert again.status == 409
    assert scene.state(request_id) == decided


def test_a_link_for_someone_outside_the_audience_decides_nothing(scene: Scene) -> None:
    scene.link_address("bob@example.com", scene.bob_secret)
    request_id = scene.ask()
    text = scene.ses.texts()[-1]
    assert not links_in(text, "/console/decide")  # none is made for Bob
    # Nor would one decide, were it made: Bob is not among those who may decide.
    request = scene.state(request_id)
    link = decision_url(TEST_KEYS, ORIGIN, "acme", request_id, scene.bob, expires_at(request))
    path, query = split(link)
    assert scene.stranger().get(path, **query).status == 403
    refused = scene.stranger().post(
        path, {"token": query["token"], "version": str(request["version"]), "outcome": "approved"}
    )
    assert refused.status == 403
    assert scene.state(request_id)["state"] == "open"


def expires_at(request: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(request["expires_at"])


@pytest.mark.parametrize("how", ["another deployment's key", "another person swapped in"])
def test_a_link_not_made_here_decides_nothing(scene: Scene, how: str) -> None:
    scene.link_address(ADDRESS, scene.pat_secret)
    request_id = scene.ask()
    request = scene.state(request_id)
    [link] = links_in(scene.ses.texts()[-1], "/console/decide")
    if how == "another deployment's key":
        link = decision_url(
            Keys.fixed("not this deployment's"),
            ORIGIN,
            "acme",
            request_id,
            scene.pat,
            expires_at(request),
        )
    else:
        mac = split(link)[1]["token"].partition(".")[2]
        other = split(
            decision_url(TEST_KEYS, ORIGIN, "acme", request_id, scene.bob, expires_at(request))
        )[1]["token"]
        link = f"{ORIGIN}/console/decide?token={other.partition('.')[0]}.{mac}"
    path, query = split(link)
    assert scene.stranger().get(path, **query).status == 404
    refused = scene.stranger().post(
        path, {"token": query["token"], "version": str(request["version"]), "outcome": "approved"}
    )
    assert refused.status == 404
    assert scene.state(request_id)["state"] == "open"


def test_a_link_after_the_requests_deadline_decides_nothing(scene: Scene) -> None:
    scene.link_address(ADDRESS, scene.pat_secret)
    request_id = scene.ask()
    [link] = links_in(scene.ses.texts()[-1], "/console/decide")
    version = scene.state(request_id)["version"]
    scene.world.advance(24 * 3600 + 1)
    path, query = split(link)
    assert scene.stranger().get(path, **query).status == 404
    refused = scene.stranger().post(
        path, {"token": query["token"], "version": str(version), "outcome": "approved"}
    )
    assert refused.status == 404
    assert scene.state(request_id)["state"] == "expired"


def test_a_post_from_another_site_decides_nothing(scene: Scene) -> None:
    scene.link_address(ADDRESS, scene.pat_secret)
    request_id = scene.ask()
    [link] = links_in(scene.ses.texts()[-1], "/console/decide")
    path, query = split(link)
    version = str(scene.state(request_id)["version"])
    form = {"token": query["token"], "version": version, "outcome": "approved"}
    refused = scene.stranger().post(path, form, headers={"sec-fetch-site": "cross-site"})
    assert refused.status == 403
    assert scene.state(request_id)["state"] == "open"


def test_a_forwarded_link_decides_nothing(scene: Scene) -> None:
    """Whoever holds Pat's link sees the request, but only Pat, signed in, decides with it:
    not a stranger, not another person signed in, whether or not they may decide it."""
    scene.link_address(ADDRESS, scene.pat_secret)
    request_id = scene.ask()
    [link] = links_in(scene.ses.texts()[-1], "/console/decide")
    path, query = split(link)
    request = scene.state(request_id)
    form = {"token": query["token"], "version": str(request["version"]), "outcome": "approved"}
    page = scene.stranger().get(path, **query)
    assert page.status == 200
    assert "sign in as Pat Doe" in page.body.decode()
    assert 'name="outcome"' not in page.body.decode()
    assert scene.stranger().post(path, form).status == 403
    bob = signed_in(scene.world, scene.bob_secret)
    shown = bob.get(path, **query)
    assert 'name="outcome"' not in shown.body.decode()
    assert bob.post(path, {**form, "csrf": field_of(bob.get("/console"), "csrf")}).status == 403
    assert scene.state(request_id) == request


def test_signing_in_from_the_link_comes_back_to_it(scene: Scene) -> None:
    scene.link_address(ADDRESS, scene.pat_secret)
    scene.ask()
    [link] = links_in(scene.ses.texts()[-1], "/console/decide")
    path, query = split(link)
    page = scene.stranger().get(path, **query).body.decode()
    sign_in = html.unescape(re.search(r'href="(/console/sign-in\?[^"]+)"', page).group(1))
    assert parse_qs(urlsplit(sign_in).query)["next"] == [f"{path}?token={query['token']}"]
