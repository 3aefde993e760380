"""The web console over HTTP, as a browser meets it, on DynamoDB (moto) with a moved clock:
sign-in and its cookies, no way in without a valid session, CSRF and same-origin forms, the
headers of every page and asset, isolation between namespaces and roles, escaping, and the
forms a person uses."""

from __future__ import annotations

import hashlib
import html
import ipaddress
import itertools
import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import boto3
import pytest

from tests.integration import test_api_handler
from tests.support import TEST_KEYS, Tenant, app_on
from vigil.clock import ManualClock
from vigil.console.responder import MAX_FORM_BYTES
from vigil.console.session import COOKIE, IDLE_SECONDS, MAX_SECONDS, SIGN_IN_COOKIE, Signer
from vigil.entrypoints import api
from vigil.errors import ErrorCode, VigilError, unavailable
from vigil.identity.records import ATTEMPT_WINDOW_SECONDS
from vigil.identity.sign_ins import ATTEMPTS_PER_ADDRESS, ATTEMPTS_PER_PRINCIPAL
from vigil.kit.http import HttpRequest, HttpResponse
from vigil.kit.uow import UnitOfWork
from vigil.observability import JsonFormatter
from vigil.store import Store
from vigil.transports.router import Router

# The API function's environment on moto, with acme's operator, as its own tests set it up.
operator_secret = test_api_handler.operator_secret

KEY = TEST_KEYS.for_purpose("console-session")
HOST = "vigil.example"
ORIGIN = f"https://{HOST}"

SCRIPT = "<script>alert(1)</script>"
BREAKOUT = '"><img src=x onerror=alert(1)>'

PAGES = (
    "/console",
    "/console/switches",
    "/console/sessions",
    "/console/runs",
    "/console/requests",
    "/console/conversations",
    "/console/channels",
)


def field_of(response: HttpResponse, name: str) -> str:
    """The value of the first form field ``name`` on a page."""
    found = re.search(rf'name="{name}" value="([^"]*)"', response.body.decode())
    assert found is not None, f"no field {name}"
    return html.unescape(found.group(1))


def cookie_attributes(set_cookie: str) -> tuple[str, str, dict[str, str]]:
    """A Set-Cookie value's name, value and attributes (names in lower case)."""
    pair, *attributes = (part.strip() for part in set_cookie.split(";"))
    name, _, value = pair.partition("=")
    parsed = {}
    for attribute in attributes:
        key, _, setting = attribute.partition("=")
        parsed[key.lower()] = setting
    return name, value, parsed


def set_cookie(response: HttpResponse, name: str) -> dict[str, str] | None:
    for value in response.cookies:
        found, _, attributes = cookie_attributes(value)
        if found == name:
            return attributes
    return None


def location(response: HttpResponse) -> str:
    assert response.status == 303
    return response.headers["location"]


_addresses = itertools.count(1)


def another_address() -> str:
    """A source address no other browser of the run has: each browser's attempts to sign in
    are counted apart, as a browser on its own machine's are."""
    return str(ipaddress.ip_address("198.51.100.0") + next(_addresses) % 65536)


@dataclass
class Browser:
    """One browser: its cookie jar, its source address, and requests made as this console's
    own pages make them (Sec-Fetch-Site: same-origin) unless told otherwise."""

    router: Router
    jar: dict[str, str] = field(default_factory=dict)
    address: str = field(default_factory=another_address)

    def send(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, str] | None = None,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
    ) -> HttpResponse:
        sent = {"host": HOST, "x-forwarded-proto": "https", **(headers or {})}
        request = HttpRequest(
            method,
            path,
            sent,
            body,
            query=dict(query or {}),
            cookies=dict(self.jar),
            source_ip=self.address,
        )
        response = self.router.handle(request)
        for value in response.cookies:
            name, kept, attributes = cookie_attributes(value)
            if attributes.get("max-age") == "0":
                self.jar.pop(name, None)
            else:
                self.jar[name] = kept
        return response

    def get(self, path: str, **query: str) -> HttpResponse:
        return self.send("GET", path, query=query)

    def post(
        self, path: str, form: dict[str, str], headers: dict[str, str] | None = None
    ) -> HttpResponse:
        """``form`` posted from one of this console's pages; ``headers`` replace the fetch
        metadata a browser would send with it (Sec-Fetch-Site, Origin)."""
        sent = {
            "content-type": "application/x-www-form-urlencoded",
            "sec-fetch-site": "same-origin",
        }
        if headers is not None:
            sent = {"content-type": sent["content-type"], **headers}
        return self.send("POST", path, body=urlencode(form).encode(), headers=sent)

    def sign_in(self, secret: str, target: str | None = None) -> HttpResponse:
        page = self.get("/console/sign-in")
        form = {"csrf": field_of(page, "csrf"), "secret": secret}
        if target is not None:
            form["next"] = target
        return self.post("/console/sign-in", form)

    def csrf(self) -> str:
        return field_of(self.get("/console"), "csrf")


@dataclass
class Scene:
    """Namespace acme (its operator; a person, pat; a worker agent, ann, holding a switch and a
    session and asking pat for an approval) and namespace globex (its operator, Mallory), with
    one console in front of both."""

    clock: ManualClock
    router: Router
    acme: Tenant
    globex: Tenant
    pat: str
    pat_id: str
    ann: str
    ann_id: str
    scope: str
    session_id: str
    request_id: str
    conversation_id: str

    def browser(self) -> Browser:
        return Browser(self.router)

    def signed_in(self, secret: str) -> Browser:
        browser = self.browser()
        assert browser.sign_in(secret).status == 303
        return browser

    def instructions(self, session_id: str | None = None) -> list[dict[str, Any]]:
        page = self.acme.call("list_instructions", sessionId=session_id or self.session_id)
        found: list[dict[str, Any]] = page["instructions"]
        return found

    def request(self, request_id: str | None = None) -> dict[str, Any]:
        return self.acme.call("get_request", self.ann, id=request_id or self.request_id)

    def ask(self, **arguments: Any) -> dict[str, Any]:
        arguments.setdefault("body", "May I deploy?")
        target = {"kind": "person", "id": self.pat_id}
        return self.acme.call("ask", self.ann, target=target, kind="approval", **arguments)


DEPLOY = {"op": "deploy", "service": "checkout", "version": "1.2.3"}


def beat_session(tenant: Tenant, secret: str, session_id: str) -> None:
    tenant.call("session_heartbeat", secret, sessionId=session_id, idempotencyKey=session_id)


@pytest.fixture
def scene(dynamo_store: Store, clock: ManualClock) -> Scene:
    app = app_on(dynamo_store, clock)
    acme = Tenant(app, clock, "acme")
    globex = Tenant(app, clock, "globex")
    pat_id, pat = acme.register(kind="person", name="pat")
    ann_id, ann = acme.register(name="ann")
    acme.call("heartbeat", ann, scope="acme-job-17", expect_within_seconds=600)
    beat_session(acme, ann, "acme-session-4")
    asked = acme.call(
        "ask",
        ann,
        target={"kind": "person", "id": pat_id},
        kind="approval",
        body="May I deploy checkout?",
        action=DEPLOY,
    )
    router = Router(app, frozenset())
    return Scene(
        clock,
        router,
        acme,
        globex,
        pat,
        pat_id,
        ann,
        ann_id,
        "acme-job-17",
        "acme-session-4",
        asked["id"],
        asked["conversation_id"],
    )


# -- no way in without a valid session ------------------------------------------------------
def every_page(scene: Scene) -> list[tuple[str, dict[str, str]]]:
    return [
        *((path, {}) for path in PAGES),
        ("/console/switch", {"scope": scene.scope}),
        ("/console/session", {"id": scene.session_id}),
        ("/console/request", {"id": scene.request_id}),
        ("/console/conversation", {"id": scene.conversation_id}),
    ]


def test_every_page_redirects_to_sign_in_with_its_own_path_as_next(scene: Scene) -> None:
    browser = scene.browser()
    for path, query in every_page(scene):
        response = browser.get(path, **query)
        target = urlsplit(location(response))
        assert target.path == "/console/sign-in"
        (back,) = parse_qs(target.query)["next"]
        assert back == path + (f"?{urlencode(query)}" if query else "")
        assert response.body == b""
        assert set_cookie(response, COOKIE) is None


def test_fragments_and_head_requests_without_a_session_are_401_and_show_nothing(
    scene: Scene,
) -> None:
    browser = scene.browser()
    for path, query in every_page(scene):
        for method in ("GET", "HEAD"):
            response = browser.send(method, path, query={**query, "fragment": "1"})
            assert response.status == 401, (method, path)
            body = response.body.decode()
            assert "Sign in first" in body
            for private in (scene.scope, scene.session_id, scene.request_id, "checkout"):
                assert private not in body


def forms(scene: Scene, csrf: str) -> dict[str, dict[str, str]]:
    """Every form of the console, filled in as its page fills it."""
    return {
        "/console/sessions/instructions": {
            "csrf": csrf,
            "session_id": scene.session_id,
            "body": "stop now",
            "idempotency_key": "console-1",
        },
        "/console/requests/reply": {
            "csrf": csrf,
            "id": scene.request_id,
            "version": "1",
            "outcome": "approved",
            "confirm": "yes",
        },
        "/console/conversations/send": {
            "csrf": csrf,
            "conversation_id": scene.conversation_id,
            "body": "hello",
            "idempotency_key": "console-2",
        },
        "/console/sign-out": {"csrf": csrf},
    }


def conversation_bodies(scene: Scene) -> list[str]:
    found = scene.acme.call("get_conversation", scene.ann, id=scene.conversation_id)
    return [m["body"] for m in found["messages"]]


def assert_nothing_changed(scene: Scene) -> None:
    assert scene.instructions() == []
    request = scene.request()
    assert (request["state"], request["version"], request["response"]) == ("open", 1, None)
    assert conversation_bodies(scene) == ["May I deploy checkout?"]


def test_forms_without_a_session_are_401_and_change_nothing(scene: Scene) -> None:
    someone = scene.signed_in(scene.pat)
    csrf = someone.csrf()
    stranger = scene.browser()
    for path, form in forms(scene, csrf).items():
        response = stranger.post(path, form)
        assert response.status == 401, path
        assert response.cookies == []
    assert_nothing_changed(scene)


@pytest.mark.parametrize(
    "target",
    [
        "//evil.example",
        "//evil.example/console",
        "https://evil.example",
        "https://evil.example/console",
        "/\\evil.example",
        "javascript:alert(1)",
        "evil.example/console",
        "/console\r\nSet-Cookie: planted=1",
        "/console/\\evil.example",
        "/console/caf\u00e9",
        "/console/requests\nx",
        "/consolation",
        "/console.evil.example",
        "",
        # Dot-segments and their encodings, which a browser resolves out of /console.
        "/console/..//evil.example",
        "/console/../evil.example",
        "/console/..",
        "/console/./../..//evil.example",
        "/console/%2e%2e//evil.example",
        "/console/%2E%2E/%2Fevil.example",
        "/console/.%2e//evil.example",
        "/console/%2e./",
        "/console/..%2f..%2fevil.example",
        "/console/..%5c..%5cevil.example",
        "/console/..\\evil.example",
        "/console\\..\\evil.example",
        "/console/%2f%2fevil.example",
        "/console//evil.example",
        "/console/requests/../../evil.example",
        "/console/requests?x=1#/../..//evil.example",
        "/console/\t/evil.example",
        "/console/%09",
    ],
)
def test_sign_in_goes_to_the_console_whatever_next_says(scene: Scene, target: str) -> None:
    response = scene.browser().sign_in(scene.pat, target)
    assert location(response) == "/console"


@pytest.mark.parametrize(
    "target",
    [
        "/console",
        "/console/requests",
        "/console/request?id=req_1",
        "/console/switches?state=",
        "/console/switch?scope=acme%2F..%2F%2Fjob",  # in the query: no path of the page's
    ],
)
def test_sign_in_goes_back_to_the_console_page_it_was_asked_from(scene: Scene, target: str) -> None:
    assert location(scene.browser().sign_in(scene.pat, target)) == target


def test_the_whole_way_back_from_a_page_to_sign_in_and_to_the_page(scene: Scene) -> None:
    browser = scene.browser()
    asked = browser.get("/console/request", id=scene.request_id)
    sign_in = urlsplit(location(asked))
    page = browser.get(sign_in.path, **{k: v[0] for k, v in parse_qs(sign_in.query).items()})
    form = {
        "csrf": field_of(page, "csrf"),
        "next": field_of(page, "next"),
        "secret": scene.pat,
    }
    back = location(browser.post("/console/sign-in", form))
    assert back == f"/console/request?id={scene.request_id}"
    shown = browser.get("/console/request", id=scene.request_id)
    assert shown.status == 200
    assert "May I deploy checkout?" in shown.body.decode()


def forged_cookies(scene: Scene) -> Iterator[tuple[str, str]]:
    real = scene.signed_in(scene.pat).jar[COOKIE]
    payload, _, mac = real.partition(".")
    yield "garbage", "not-a-session"
    yield "empty", ""
    yield "tampered payload", ("A" if payload[0] != "A" else "B") + payload[1:] + "." + mac
    yield "tampered mac", payload + "." + ("A" if mac[0] != "A" else "B") + mac[1:]
    yield "non-ascii mac", payload + "." + "é" * len(mac)
    yield "no mac", payload
    session = Signer(KEY).decode(real, scene.clock.now())
    assert session is not None
    yield "another key", Signer(b"o" * 32).encode(session)


def test_a_forged_or_tampered_cookie_is_no_session(scene: Scene) -> None:
    for label, value in forged_cookies(scene):
        browser = scene.browser()
        browser.jar[COOKIE] = value
        page = browser.get("/console/requests")
        assert location(page).startswith("/console/sign-in?"), label
        assert browser.send("GET", "/console", query={"fragment": "1"}).status == 401, label
        form = forms(scene, "x")["/console/sessions/instructions"]
        assert browser.post("/console/sessions/instructions", form).status == 401, label
    assert scene.instructions() == []


def signed_out(browser: Browser) -> bool:
    """Whether ``browser`` is treated as having no session, by a page and by a fragment."""
    page = browser.get("/console/requests")
    fragment = browser.get("/console/requests", fragment="1")
    if page.status == 200 and fragment.status == 200:
        return False
    assert location(page).startswith("/console/sign-in?")
    assert fragment.status == 401
    return True


def test_an_idle_session_ends_and_one_in_use_is_renewed(scene: Scene) -> None:
    idle = scene.signed_in(scene.pat)
    busy = scene.signed_in(scene.pat)
    renewals = []
    for _ in range(IDLE_SECONDS // 600 + 2):  # past the idle time, a click every 10 minutes
        scene.clock.advance(600)
        response = busy.get("/console/requests")
        assert response.status == 200
        attributes = set_cookie(response, COOKIE)
        if attributes is not None:
            renewals.append(int(attributes["max-age"]))
    assert renewals
    assert all(0 < max_age <= IDLE_SECONDS for max_age in renewals)
    assert signed_out(idle)
    assert not signed_out(busy)


def test_a_session_in_use_ends_max_seconds_after_sign_in(scene: Scene) -> None:
    busy = scene.signed_in(scene.pat)
    for _ in range(MAX_SECONDS // 1800 - 1):
        scene.clock.advance(1800)
        assert not signed_out(busy)
    scene.clock.advance(1799)
    assert not signed_out(busy)
    scene.clock.advance(1)
    assert signed_out(busy)
    # Signing in again starts a new session.
    assert busy.sign_in(scene.pat).status == 303
    assert not signed_out(busy)


@pytest.mark.parametrize("ending", ["rotate_secret", "revoke_principal"])
def test_rotating_or_revoking_the_secret_ends_its_sessions_at_once(
    scene: Scene, ending: str
) -> None:
    browsers = [scene.signed_in(scene.pat), scene.signed_in(scene.pat)]
    assert not any(signed_out(browser) for browser in browsers)
    form = forms(scene, browsers[1].csrf())["/console/sessions/instructions"]
    scene.acme.call(ending, principal_id=scene.pat_id, version=1)
    assert all(signed_out(browser) for browser in browsers)
    # A form its page rendered before is refused too.
    assert browsers[1].post("/console/sessions/instructions", form).status == 401
    assert scene.instructions() == []
    # The old secret signs in no more.
    assert browsers[0].sign_in(scene.pat).status == 401


def test_a_rotated_secret_signs_in_again_with_the_new_secret(scene: Scene) -> None:
    old = scene.signed_in(scene.pat)
    new_secret = scene.acme.call("rotate_secret", scene.pat, version=1)["secret"]
    assert location(old.get("/console")).startswith("/console/sign-in?")
    assert scene.signed_in(new_secret).get("/console").status == 200


def test_signing_out_clears_the_cookie(scene: Scene) -> None:
    browser = scene.signed_in(scene.pat)
    response = browser.post("/console/sign-out", {"csrf": browser.csrf()})
    assert location(response) == "/console/sign-in"
    attributes = set_cookie(response, COOKIE)
    assert attributes is not None
    assert attributes["max-age"] == "0"
    assert COOKIE not in browser.jar
    assert location(browser.get("/console")).startswith("/console/sign-in?")


def test_a_copy_of_the_cookie_holds_no_more_once_its_session_signed_out(scene: Scene) -> None:
    browser = scene.signed_in(scene.pat)
    thief = scene.browser()  # another client, elsewhere, holding a copy of the cookie
    thief.jar[COOKIE] = browser.jar[COOKIE]
    form = forms(scene, thief.csrf())["/console/sessions/instructions"]
    assert not signed_out(thief)
    assert browser.post("/console/sign-out", {"csrf": browser.csrf()}).status == 303
    assert signed_out(thief)
    assert thief.post("/console/sessions/instructions", form).status == 401
    assert scene.instructions() == []
    # Only that session ended: the person's others, and a new sign-in, hold.
    other = scene.signed_in(scene.pat)
    assert not signed_out(other)
    assert browser.sign_in(scene.pat).status == 303
    assert not signed_out(browser)


def test_a_copy_of_a_renewed_cookie_ends_with_it(scene: Scene) -> None:
    browser = scene.signed_in(scene.pat)
    first = browser.jar[COOKIE]
    scene.clock.advance(IDLE_SECONDS - 60)
    assert not signed_out(browser)
    assert browser.jar[COOKIE] != first  # renewed
    thief = scene.browser()
    thief.jar[COOKIE] = browser.jar[COOKIE]
    browser.post("/console/sign-out", {"csrf": browser.csrf()})
    assert signed_out(thief)


# -- the limit on attempts to sign in ---------------------------------------------------------
def attempt(browser: Browser, secret: str) -> HttpResponse:
    return browser.sign_in(secret)


def wrong(secret: str) -> str:
    """A secret of the same principal that is not its secret."""
    return secret[: secret.rindex(".") + 1] + "A" * 43


def refused_for_a_while(response: HttpResponse) -> int:
    """The seconds a 429 says to wait."""
    assert response.status == 429
    assert "Too many attempts" in response.body.decode()
    assert set_cookie(response, COOKIE) is None
    return int(response.headers["retry-after"])


def test_an_address_gets_ten_attempts_in_fifteen_minutes_right_or_wrong(scene: Scene) -> None:
    browser = scene.browser()
    for _ in range(ATTEMPTS_PER_ADDRESS):
        assert attempt(browser, wrong(scene.pat)).status == 401
    wait = refused_for_a_while(attempt(browser, wrong(scene.pat)))
    assert 0 < wait <= ATTEMPT_WINDOW_SECONDS
    # The right secret is refused alike: what is refused is not looked at.
    assert refused_for_a_while(attempt(browser, scene.pat)) <= wait
    # Another address is not held back.
    assert attempt(scene.browser(), scene.pat).status == 303
    scene.clock.advance(wait)
    assert attempt(browser, scene.pat).status == 303


def test_the_limit_answers_alike_whether_a_secret_names_someone_or_no_one(scene: Scene) -> None:
    answers = []
    nobody = f"vgl.acme.per_{'q' * 16}.{'A' * 43}"
    for secret in (nobody, wrong(scene.pat), "not a secret at all"):
        browser = scene.browser()
        seen = [attempt(browser, secret) for _ in range(ATTEMPTS_PER_ADDRESS + 1)]
        answers.append([(r.status, r.headers.get("retry-after"), problem_text(r)) for r in seen])
    assert answers[0] == answers[1] == answers[2]


def problem_text(response: HttpResponse) -> str:
    found = re.search(r'<p class="problem"[^>]*>(.*?)</p>', response.body.decode(), re.S)
    return found.group(1) if found else ""


def test_a_principal_gets_thirty_attempts_in_fifteen_minutes_from_anywhere(scene: Scene) -> None:
    for _ in range(ATTEMPTS_PER_PRINCIPAL):
        assert attempt(scene.browser(), wrong(scene.pat)).status == 401
    wait = refused_for_a_while(attempt(scene.browser(), scene.pat))
    # Another principal is not held back, from the same addresses or others.
    assert attempt(scene.browser(), scene.ann).status == 303
    scene.clock.advance(wait)
    assert attempt(scene.browser(), scene.pat).status == 303


def test_a_store_failing_to_count_an_attempt_fails_the_sign_in_as_any_store_failure(
    scene: Scene, dynamo_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(*_: Any) -> bool:
        raise unavailable()

    monkeypatch.setattr(dynamo_store, "count_sign_in_attempt", failing)
    with pytest.raises(VigilError) as failed:
        scene.browser().sign_in(scene.pat)
    assert failed.value.code is ErrorCode.UNAVAILABLE


def test_the_limit_holds_across_instances_of_the_function(
    scene: Scene, dynamo_store: Store
) -> None:
    """Two routers, as two Lambda instances would be, over one table."""
    second = Router(app_on(dynamo_store, scene.clock), frozenset())
    address = another_address()
    here, there = Browser(scene.router, address=address), Browser(second, address=address)
    for n in range(ATTEMPTS_PER_ADDRESS):
        assert attempt(here if n % 2 else there, wrong(scene.pat)).status == 401
    refused_for_a_while(attempt(here, scene.pat))
    refused_for_a_while(attempt(there, scene.pat))


# -- CSRF and same-origin forms ---------------------------------------------------------------
def test_a_form_with_the_session_token_from_this_origin_is_taken(scene: Scene) -> None:
    """The control for the refusals below: the same form, done right, is taken."""
    browser = scene.signed_in(scene.pat)
    form = forms(scene, browser.csrf())["/console/sessions/instructions"]
    response = browser.post("/console/sessions/instructions", form)
    assert location(response) == f"/console/session?{urlencode({'id': scene.session_id})}"
    assert [i["body"] for i in scene.instructions()] == ["stop now"]


def test_an_origin_header_of_this_host_is_same_origin_too(scene: Scene) -> None:
    browser = scene.signed_in(scene.pat)
    form = forms(scene, browser.csrf())["/console/sessions/instructions"]
    response = browser.post("/console/sessions/instructions", form, headers={"origin": ORIGIN})
    assert response.status == 303
    assert len(scene.instructions()) == 1


@pytest.mark.parametrize(
    "headers",
    [
        {"sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "same-site"},
        {"sec-fetch-site": "none"},
        {"sec-fetch-site": "cross-site", "origin": ORIGIN},
        {"origin": "https://evil.example"},
        {"origin": f"http://{HOST}"},
        {"origin": "null"},
        {},
    ],
    ids=[
        "cross-site",
        "same-site",
        "none",
        "cross-site-with-our-origin",
        "foreign-origin",
        "plain-http-origin",
        "null-origin",
        "no-origin",
    ],
)
def test_a_form_from_another_site_is_refused_and_changes_nothing(
    scene: Scene, headers: dict[str, str]
) -> None:
    browser = scene.signed_in(scene.pat)
    csrf = browser.csrf()
    for path, form in forms(scene, csrf).items():
        response = browser.post(path, form, headers=headers)
        assert response.status == 403, path
        assert "not sent from this console" in response.body.decode()
    assert_nothing_changed(scene)
    assert browser.get("/console").status == 200  # not signed out either


@pytest.mark.parametrize("token", ["missing", "empty", "other session", "other key", "non-ascii"])
def test_a_form_without_its_sessions_token_is_refused_and_changes_nothing(
    scene: Scene, token: str
) -> None:
    browser = scene.signed_in(scene.pat)
    other = scene.signed_in(scene.pat)
    session = Signer(KEY).decode(browser.jar[COOKIE], scene.clock.now())
    assert session is not None
    tokens = {
        "missing": None,
        "empty": "",
        "other session": other.csrf(),
        "other key": Signer(b"o" * 32).csrf_token(session.session_id),
        "non-ascii": "é" * len(other.csrf()),
    }
    assert tokens["other session"] != browser.csrf()
    for path, form in forms(scene, "").items():
        filled = {k: v for k, v in form.items() if k != "csrf"}
        if tokens[token] is not None:
            filled["csrf"] = str(tokens[token])
        response = browser.post(path, filled)
        assert response.status == 403, path
        assert "This form has expired" in response.body.decode()
    assert_nothing_changed(scene)
    assert browser.get("/console").status == 200


def test_sign_in_without_its_cookie_token_is_refused(scene: Scene) -> None:
    browser = scene.browser()
    csrf = field_of(browser.get("/console/sign-in"), "csrf")
    other = field_of(scene.browser().get("/console/sign-in"), "csrf")
    attempts: list[tuple[dict[str, str | None], str]] = [
        ({SIGN_IN_COOKIE: None}, csrf),  # the cookie is gone
        ({}, other),  # another page's token
        ({}, ""),
        ({}, "é" * len(csrf)),
        ({SIGN_IN_COOKIE: ""}, ""),  # an empty cookie and an empty field agree on nothing
    ]
    for cookies, token in attempts:
        attempt = Browser(scene.router, dict(browser.jar))
        for name, value in cookies.items():
            if value is None:
                attempt.jar.pop(name, None)
            else:
                attempt.jar[name] = value
        form = {"csrf": token, "secret": scene.pat}
        response = attempt.post("/console/sign-in", form)
        assert response.status == 403, (cookies, token)
        assert set_cookie(response, COOKIE) is None
        assert COOKIE not in attempt.jar
    # The control: the page's own token with its cookie signs in.
    signed_in = browser.post("/console/sign-in", {"csrf": csrf, "secret": scene.pat})
    assert location(signed_in) == "/console"


def test_sign_in_from_another_site_is_refused(scene: Scene) -> None:
    browser = scene.browser()
    csrf = field_of(browser.get("/console/sign-in"), "csrf")
    form = {"csrf": csrf, "secret": scene.pat}
    response = browser.post("/console/sign-in", form, headers={"sec-fetch-site": "cross-site"})
    assert response.status == 403
    assert COOKIE not in browser.jar


# -- cookies and secrets ----------------------------------------------------------------------
def test_the_session_cookie_is_host_only_secure_http_only_strict_and_short_lived(
    scene: Scene,
) -> None:
    browser = scene.browser()
    page = browser.get("/console/sign-in")
    response = browser.sign_in(scene.pat)
    assert location(response) == "/console"
    for name, sent in ((COOKIE, response), (SIGN_IN_COOKIE, page)):
        assert name.startswith("__Host-")
        attributes = set_cookie(sent, name)
        assert attributes is not None, name
        assert attributes.keys() >= {"httponly", "secure", "samesite", "path", "max-age"}
        assert attributes["samesite"] == "Strict"
        assert attributes["path"] == "/"
        assert "domain" not in attributes
        assert 0 < int(attributes["max-age"]) <= 3600
    # The sign-in cookie has done its work.
    cleared = set_cookie(response, SIGN_IN_COOKIE)
    assert cleared is not None
    assert cleared["max-age"] == "0"


def everything_sent(response: HttpResponse) -> str:
    return "\n".join(
        [response.body.decode(errors="replace"), json.dumps(response.headers), *response.cookies]
    )


@pytest.fixture
def vigil_logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """caplog, receiving every record of the vigil loggers from DEBUG up: they do not
    propagate to the root logger, where caplog listens, so its handler is put on them unless
    it is there already."""
    logger = logging.getLogger("vigil")
    added = caplog.handler not in logger.handlers
    if added:
        logger.addHandler(caplog.handler)
    with caplog.at_level(logging.DEBUG, logger="vigil"):
        yield caplog
    if added:
        logger.removeHandler(caplog.handler)


def test_the_secret_appears_in_no_response_and_no_log(
    scene: Scene, vigil_logs: pytest.LogCaptureFixture
) -> None:
    secret = scene.pat
    random_part = secret.rsplit(".", 1)[1]
    browser = scene.browser()
    responses = [browser.get("/console/sign-in")]
    csrf = field_of(responses[0], "csrf")
    responses.append(browser.post("/console/sign-in", {"csrf": csrf, "secret": secret + "x"}))
    responses.append(browser.post("/console/sign-in", {"csrf": "wrong", "secret": secret}))
    csrf = field_of(browser.get("/console/sign-in"), "csrf")
    responses.append(browser.post("/console/sign-in", {"csrf": csrf, "secret": secret}))
    assert responses[-1].status == 303
    for path, query in every_page(scene):
        responses.append(browser.get(path, **query))
        responses.append(browser.get(path, fragment="1", **query))
    form = forms(scene, browser.csrf())
    responses.append(browser.post("/console/requests/reply", form["/console/requests/reply"]))
    responses.append(browser.post("/console/sign-out", form["/console/sign-out"]))
    assert [r.status for r in responses[1:3]] == [401, 403]
    for response in responses:
        sent = everything_sent(response)
        assert random_part not in sent
        assert secret not in sent

    formatter = JsonFormatter("vigil")
    records = vigil_logs.records
    messages = [record.getMessage() for record in records]
    assert "console sign-in" in messages
    assert "console sign-in refused" in messages
    assert "tool call" in messages
    for record in records:
        written = formatter.format(record) + repr(record.__dict__)
        assert random_part not in written
    assert random_part not in vigil_logs.text


# -- headers, assets, methods, sizes -----------------------------------------------------------
def assert_page_headers(response: HttpResponse) -> None:
    headers = response.headers
    policy = headers["content-security-policy"]
    directives = {d.strip().split(" ")[0]: d.strip() for d in policy.split(";")}
    assert directives["default-src"] == "default-src 'none'"
    assert directives["frame-ancestors"] == "frame-ancestors 'none'"
    assert directives["script-src"] == "script-src 'self'"
    assert directives["style-src"] == "style-src 'self'"
    assert "unsafe-inline" not in policy
    assert "unsafe-eval" not in policy
    assert headers["cache-control"] == "no-store"
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["content-type"] == "text/html; charset=utf-8"


def test_every_page_fragment_and_refusal_has_the_strict_headers(scene: Scene) -> None:
    stranger = scene.browser()
    browser = scene.signed_in(scene.pat)
    seen = [stranger.get("/console/sign-in"), stranger.get("/console", fragment="1")]
    for path, query in every_page(scene):
        seen += [browser.get(path, **query), browser.get(path, fragment="1", **query)]
    seen += [
        browser.get("/console/nowhere"),
        browser.post("/console/sign-out", {}),
        browser.post("/console/sign-out", {"csrf": "x"}, headers={"sec-fetch-site": "cross-site"}),
        browser.get("/console/request", id="req_missing"),
    ]
    statuses = {response.status for response in seen}
    assert statuses == {200, 401, 403, 404}
    for response in seen:
        assert_page_headers(response)
        assert b"<script>" not in response.body  # scripts come only from the asset


def test_no_page_carries_inline_script_or_style(scene: Scene) -> None:
    browser = scene.signed_in(scene.pat)
    for path, query in every_page(scene):
        body = browser.get(path, **query).body.decode()
        assert re.findall(r"<script[^>]*>", body) == [
            f'<script src="{scene.router.console().assets["console.js"].path}" defer>'
        ]
        assert "<style" not in body
        assert " style=" not in body
        assert not re.search(r"\son[a-z]+=", body)


def test_assets_are_served_under_their_digest_for_a_year(scene: Scene) -> None:
    browser = scene.signed_in(scene.pat)
    body = browser.get("/console").body.decode()
    linked = {
        "css": re.search(r'<link rel="stylesheet" href="([^"]+)"', body),
        "js": re.search(r'<script src="([^"]+)"', body),
    }
    types = {"css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8"}
    for ext, found in linked.items():
        assert found is not None
        path = found.group(1)
        served = scene.browser().get(path)  # assets need no session
        assert served.status == 200
        digest = hashlib.sha256(served.body).hexdigest()[:12]
        assert path == f"/console/assets/console.{digest}.{ext}"
        assert served.headers["content-type"] == types[ext]
        assert served.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert served.headers["x-content-type-options"] == "nosniff"
        assert scene.browser().send("HEAD", path).status == 200
        assert scene.browser().send("POST", path).status == 405


@pytest.mark.parametrize(
    "path",
    [
        "/console/assets/console.000000000000.css",
        "/console/assets/console.css",
        "/console/assets/console.js",
        "/console/assets/../app.py",
        "/console/assets/",
    ],
)
def test_an_unknown_asset_is_404(scene: Scene, path: str) -> None:
    assert scene.browser().get(path).status == 404


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS", "TRACE"])
def test_methods_other_than_get_head_and_post_are_405(scene: Scene, method: str) -> None:
    browser = scene.signed_in(scene.pat)
    for path in ("/console", "/console/sign-in", "/console/sessions/instructions"):
        response = browser.send(method, path, headers={"sec-fetch-site": "same-origin"})
        assert response.status == 405, path
        assert response.headers["allow"] == "GET, HEAD, POST"


def test_a_form_over_64_kib_is_413_and_changes_nothing(scene: Scene) -> None:
    browser = scene.signed_in(scene.pat)
    form = forms(scene, browser.csrf())["/console/sessions/instructions"]
    form["padding"] = "x" * MAX_FORM_BYTES
    assert browser.post("/console/sessions/instructions", form).status == 413
    assert scene.instructions() == []
    # At the limit, the same form is read (and the padding field ignored).
    del form["padding"]
    form["padding"] = "x" * (MAX_FORM_BYTES - len(urlencode(form)) - len("&padding="))
    assert len(urlencode(form)) == MAX_FORM_BYTES
    assert browser.post("/console/sessions/instructions", form).status == 303
    assert len(scene.instructions()) == 1


def test_a_sign_in_form_over_64_kib_is_413(scene: Scene) -> None:
    browser = scene.browser()
    csrf = field_of(browser.get("/console/sign-in"), "csrf")
    form = {"csrf": csrf, "secret": scene.pat, "padding": "x" * MAX_FORM_BYTES}
    response = browser.post("/console/sign-in", form)
    assert response.status == 413
    assert COOKIE not in browser.jar


# -- isolation ---------------------------------------------------------------------------------
def acme_ids(scene: Scene) -> list[str]:
    return [scene.scope, scene.session_id, scene.request_id, scene.conversation_id, scene.ann_id]


def test_the_first_namespace_sees_its_own_things(scene: Scene) -> None:
    """The control for the isolation tests: these pages do show these ids to acme."""
    operator = scene.signed_in(scene.acme.operator_secret)
    shown = "".join(operator.get(path).body.decode() for path in PAGES)
    for ident in (scene.scope, scene.session_id, scene.ann_id):
        assert ident in shown
    pat = scene.signed_in(scene.pat)
    assert scene.request_id in pat.get("/console/requests").body.decode()


def test_a_person_of_another_namespace_sees_none_of_the_first(scene: Scene) -> None:
    mallory = scene.signed_in(scene.globex.operator_secret)
    for path in PAGES:
        for query in ({}, {"fragment": "1"}, {"state": ""}):
            response = mallory.get(path, **query)
            assert response.status == 200, path
            body = response.body.decode()
            for ident in acme_ids(scene):
                assert ident not in body, (path, ident)
            assert "May I deploy checkout?" not in body
    assert "globex" in mallory.get("/console").body.decode()


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("/console/request", "request_id"),
        ("/console/conversation", "conversation_id"),
        ("/console/session", "session_id"),
        ("/console/switch", "scope"),
    ],
)
def test_another_namespaces_ids_are_not_found(scene: Scene, path: str, key: str) -> None:
    mallory = scene.signed_in(scene.globex.operator_secret)
    ident = getattr(scene, key)
    response = mallory.get(path, id=ident, scope=ident)
    assert response.status == 404
    assert "does not exist or is not visible to the caller" in response.body.decode()
    assert "May I deploy checkout?" not in response.body.decode()
    # The same page shows it to pat.
    assert scene.signed_in(scene.pat).get(path, id=ident, scope=ident).status == 200


def test_another_namespace_cannot_act_on_the_first(scene: Scene) -> None:
    mallory = scene.signed_in(scene.globex.operator_secret)
    for path, form in forms(scene, mallory.csrf()).items():
        if path == "/console/sign-out":
            continue
        response = mallory.post(path, form)
        assert response.status == 404, path
        assert "not_found" in response.body.decode()
    assert_nothing_changed(scene)


def test_a_worker_agent_sees_only_what_its_tools_show_it(scene: Scene) -> None:
    ann = scene.signed_in(scene.ann)
    for path in ("/console", "/console/switches", "/console/sessions", "/console/runs"):
        body = ann.get(path).body.decode()
        # Left out, or said once where the page's only listing is refused.
        assert body.count("Your role may not see this.") <= 1, path
        assert scene.scope not in body, path
        assert scene.session_id not in body, path
    # Her own request is hers to see: the role is narrowed, not the whole console.
    assert scene.request_id in ann.get("/console/requests").body.decode()
    # She is not its audience: no decision form for her.
    assert 'action="/console/requests/reply"' not in (
        ann.get("/console/request", id=scene.request_id).body.decode()
    )


def test_a_worker_agent_cannot_post_instructions_through_the_console(scene: Scene) -> None:
    ann = scene.signed_in(scene.ann)
    form = forms(scene, ann.csrf())["/console/sessions/instructions"]
    response = ann.post("/console/sessions/instructions", form)
    assert response.status == 403
    assert "forbidden" in response.body.decode()
    assert scene.instructions() == []


# -- escaping ----------------------------------------------------------------------------------
@pytest.mark.parametrize("markup", [SCRIPT, BREAKOUT], ids=["script", "breakout"])
def test_stored_markup_is_shown_escaped_everywhere(scene: Scene, markup: str) -> None:
    acme = scene.acme
    _, agent = acme.register(name=f"agent {markup}")
    acme.call("heartbeat", agent, scope=markup, expect_within_seconds=600)
    beat_session(acme, agent, markup)
    acme.call("post_instruction", scene.pat, sessionId=markup, body=markup)
    acme.call(
        "create_channel",
        name=markup,
        kind="email",
        email="ops@example.com",
        rules=[{"events": ["switch.fired"], "scope_prefix": markup}],
    )
    asked = scene.ask(body=markup, action={"op": markup, "note": markup})
    browser = scene.signed_in(scene.acme.operator_secret)
    pat = scene.signed_in(scene.pat)
    pages = [
        browser.get("/console"),
        browser.get("/console/switches"),
        browser.get("/console/switch", scope=markup),
        browser.get("/console/sessions"),
        browser.get("/console/session", id=markup),
        browser.get("/console/runs", scope=markup),
        pat.get("/console/requests"),
        pat.get("/console/request", id=asked["id"]),
        pat.get("/console/conversation", id=asked["conversation_id"]),
        browser.get("/console/switches", scope_prefix=markup),
        scene.browser().get("/console/sign-in", next=markup),
        browser.get("/console/channels"),
    ]
    escaped = html.escape(markup, quote=True)
    for number, response in enumerate(pages):
        assert response.status == 200, number
        body = response.body.decode()
        assert markup not in body, number
        assert "<img" not in body, number
        assert "alert(1)</script>" not in body, number
        assert escaped in body, number  # shown, not dropped
    # The action is shown as stored, in JSON, escaped.
    action = html.escape(json.dumps(markup)[1:-1], quote=True)
    assert action in pages[7].body.decode()


def test_a_disguised_action_is_shown_escaped_and_flagged_on_the_list_and_its_page(
    scene: Scene,
) -> None:
    # Two "op" keys on screen, and a file that reads as ".png".
    disguised = {"op": "deploy", "op\u200b": "drop-database", "file": "\u202egnp.hs"}
    asked = scene.ask(body="May I deploy?", action=disguised)
    pat = scene.signed_in(scene.pat)
    listing = pat.get("/console/requests").body.decode()
    page = pat.get("/console/request", id=asked["id"]).body.decode()
    for body in (listing, page):
        assert "\u200b" not in body
        assert "\u202e" not in body
    assert listing.count("hidden or lookalike characters") == 1  # the plain DEPLOY is not
    assert "U+200B ZERO WIDTH SPACE" in page
    assert "U+202E RIGHT-TO-LEFT OVERRIDE" in page
    assert html.escape('"op\\u200b": "drop-database"', quote=True) in page
    assert html.escape('"file": "\\u202egnp.hs"', quote=True) in page


# -- channels ----------------------------------------------------------------------------------
def test_operators_see_the_channels_and_never_their_secrets(scene: Scene) -> None:
    acme = scene.acme
    slack = "https://hooks.slack.com/services/T0001/B0001/slacktokenslacktoken"
    hook = acme.call(
        "create_channel",
        name="pager receiver",
        kind="webhook",
        url="https://receiver.example.com/vigil",
        rules=[{"events": ["switch.fired", "request.opened"], "scope_prefix": "acme-"}],
    )
    acme.call(
        "create_channel",
        name="ops room",
        kind="slack",
        url=slack,
        rules=[{"events": ["request.expired"]}],
    )
    operator = scene.signed_in(acme.operator_secret)
    for query in ({}, {"fragment": "1"}):
        body = operator.get("/console/channels", **query).body.decode()
        for shown in (
            "pager receiver",
            "https://receiver.example.com/vigil",
            "switch.fired, request.opened under acme-",
            "ops room",
            "hooks.slack.com",
        ):
            assert shown in body, shown
        assert hook["signing_secret"] not in body
        assert "slacktoken" not in body
    # A worker sees the page and none of the channels; another namespace sees none of them.
    pat = scene.signed_in(scene.pat).get("/console/channels").body.decode()
    assert "Your role may not see this." in pat
    assert "pager receiver" not in pat
    mallory = scene.signed_in(scene.globex.operator_secret).get("/console/channels")
    assert "pager receiver" not in mallory.body.decode()
    assert "No channel yet" in mallory.body.decode()


# -- the console as a person -----------------------------------------------------------------
def test_a_person_posts_an_instruction_through_the_form(scene: Scene) -> None:
    pat = scene.signed_in(scene.pat)
    page = pat.get("/console/session", id=scene.session_id)
    form = {
        "csrf": field_of(page, "csrf"),
        "session_id": field_of(page, "session_id"),
        "idempotency_key": field_of(page, "idempotency_key"),
        "body": "Check the staging numbers first.",
    }
    back = location(pat.post("/console/sessions/instructions", form))
    assert back == f"/console/session?{urlencode({'id': scene.session_id})}"
    (posted,) = scene.instructions()
    assert (posted["body"], posted["state"], posted["postedBy"]) == (
        "Check the staging numbers first.",
        "pending",
        scene.pat_id,
    )
    # A resubmission of the same page (the same key) posts nothing more.
    assert pat.post("/console/sessions/instructions", form).status == 303
    assert len(scene.instructions()) == 1
    shown = pat.get("/console/session", id=scene.session_id, fragment="1").body.decode()
    assert "Check the staging numbers first." in shown
    # The agent gets it on its next beat.
    beat = scene.acme.call(
        "session_heartbeat", scene.ann, sessionId=scene.session_id, idempotencyKey="next"
    )
    assert [i["id"] for i in beat["instructions"]] == [posted["id"]]


def test_a_person_approves_the_version_shown(scene: Scene) -> None:
    pat = scene.signed_in(scene.pat)
    page = pat.get("/console/request", id=scene.request_id)
    body = page.body.decode()
    assert html.escape(json.dumps(DEPLOY, indent=2), quote=True) in body
    assert field_of(page, "version") == "1"
    form = {
        "csrf": field_of(page, "csrf"),
        "id": field_of(page, "id"),
        "version": field_of(page, "version"),
        "outcome": "approved",
    }
    # Approve asks again (tests/integration/test_console_decisions.py); its page confirms.
    confirm = pat.post("/console/requests/reply", form)
    assert scene.request()["state"] == "open"
    form["confirm"] = field_of(confirm, "confirm")
    back = location(pat.post("/console/requests/reply", form))
    assert back == f"/console/request?{urlencode({'id': scene.request_id})}"
    request = scene.request()
    assert (request["state"], request["version"]) == ("approved", 2)
    assert request["response"]["by"] == scene.pat_id
    assert (
        'action="/console/requests/reply"'
        not in pat.get(back.split("?")[0], id=scene.request_id).body.decode()
    )


@pytest.mark.parametrize("meanwhile", ["replaced", "denied"])
def test_a_reply_to_a_version_no_longer_current_is_refused_and_changes_nothing(
    scene: Scene, meanwhile: str
) -> None:
    acme = scene.acme
    pia_id, pia = acme.register(kind="person", name="pia")
    people = [{"kind": "person", "id": person} for person in (scene.pat_id, pia_id)]
    chat = acme.call("start_chat", scene.ann, targets=people, body="Release day.")
    asked = acme.call(
        "ask",
        scene.ann,
        conversation_id=chat["conversation_id"],
        kind="approval",
        body="May I deploy checkout?",
        action=DEPLOY,
    )
    pat = scene.signed_in(scene.pat)
    page = pat.get("/console/request", id=asked["id"])
    form = {
        "csrf": field_of(page, "csrf"),
        "id": asked["id"],
        "version": field_of(page, "version"),
        "outcome": "approved",
    }
    # While pat reads, ann replaces the request, or pia, also asked, denies it.
    if meanwhile == "replaced":
        acme.call(
            "replace_request",
            scene.ann,
            id=asked["id"],
            version=1,
            body="May I deploy checkout 1.2.4?",
            idempotency_key="replace-1",
        )
    else:
        acme.call("reply", pia, id=asked["id"], version=1, outcome="denied")
    before = scene.request(asked["id"])
    assert before["state"] == meanwhile
    response = pat.post("/console/requests/reply", form)
    assert response.status == 409
    body = response.body.decode()
    # Said in words that tell a request already final from one that changed.
    assert f"This request is {meanwhile} already: nothing was decided." in body
    assert "version_conflict" not in body
    assert f'href="/console/request?id={asked["id"]}"' in body
    assert_page_headers(response)
    assert scene.request(asked["id"]) == before


def test_a_reply_with_a_version_that_is_no_number_is_refused(scene: Scene) -> None:
    pat = scene.signed_in(scene.pat)
    form = {
        "csrf": pat.csrf(),
        "id": scene.request_id,
        "version": "one",
        "outcome": "approved",
        "confirm": "yes",
    }
    response = pat.post("/console/requests/reply", form)
    assert response.status == 400
    assert "invalid_argument" in response.body.decode()
    assert scene.request()["state"] == "open"


# -- through the API function ------------------------------------------------------------------
def console_event(
    method: str,
    path: str,
    *,
    query: str = "",
    form: dict[str, str] | None = None,
    cookies: list[str] | None = None,
) -> dict[str, Any]:
    """A payload 2.0 event, as API Gateway makes it from a browser's request to the console."""
    event = test_api_handler.sample("openapi.json")
    event["rawPath"] = path
    event["rawQueryString"] = query
    event["requestContext"]["http"].update(method=method, path=path)
    event["headers"].update({"sec-fetch-site": "same-origin", "accept": "text/html"})
    if form is not None:
        event["headers"]["content-type"] = "application/x-www-form-urlencoded"
        event["body"] = urlencode(form)
    if cookies:
        event["cookies"] = cookies
    return event


def test_the_api_function_carries_the_consoles_cookies_in_payload_2_0(
    operator_secret: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = boto3.client("secretsmanager", region_name="us-east-1")
    key = secrets.create_secret(Name="console-key", SecretString="k" * 64)["ARN"]
    monkeypatch.setenv("SERVICE_KEY_ARN", key)

    asked = api.handler(console_event("GET", "/console/requests"))
    assert asked["statusCode"] == 303
    assert asked["headers"]["location"] == "/console/sign-in?next=%2Fconsole%2Frequests"

    page = api.handler(console_event("GET", "/console/sign-in", query="next=%2Fconsole%2Frequests"))
    assert page["statusCode"] == 200
    (sign_in_cookie,) = page["cookies"]
    pair = sign_in_cookie.split(";")[0]
    assert pair.startswith(f"{SIGN_IN_COOKIE}=")
    form = {
        "csrf": pair.partition("=")[2],
        "secret": operator_secret,
        "next": "/console/requests",
    }
    signed_in = api.handler(console_event("POST", "/console/sign-in", form=form, cookies=[pair]))
    assert signed_in["statusCode"] == 303
    assert signed_in["headers"]["location"] == "/console/requests"
    session = next(c for c in signed_in["cookies"] if c.startswith(f"{COOKIE}="))
    assert "HttpOnly" in session
    # A browser sends the cookie it was given, and the page is the operator's.
    shown = api.handler(console_event("GET", "/console", cookies=[session.split(";")[0]]))
    assert shown["statusCode"] == 200
    assert "Ops · operator · acme" in shown["body"]
    assert_page_headers(HttpResponse(shown["statusCode"], shown["body"].encode(), shown["headers"]))
    for result in (asked, page, signed_in, shown):
        assert operator_secret not in json.dumps(result)


def test_a_page_answers_405_to_a_post_and_a_form_to_a_get(scene: Scene) -> None:
    same_site = {"sec-fetch-site": "same-origin"}
    page = scene.router.handle(HttpRequest("POST", "/console/switches", same_site, b""))
    form = scene.router.handle(HttpRequest("GET", "/console/requests/reply", {}, b""))
    assert (page.status, page.headers["allow"]) == (405, "GET, HEAD")
    assert (form.status, form.headers["allow"]) == (405, "POST")


def test_a_person_acknowledges_a_fired_switchs_alert_from_its_page(scene: Scene) -> None:
    from vigil.notifications.outbox import Outbox
    from vigil.switches.engine import SwitchEngine

    app = scene.router.app
    scene.acme.call(
        "create_channel",
        name="pager",
        kind="webhook",
        url="https://hooks.example.com/vigil",
        rules=[{"events": ["switch.fired"], "repeat_every_minutes": 10}],
    )
    scene.clock.advance(601)
    engine = SwitchEngine(
        store=app.store,
        clock=scene.clock,
        alarms=app.alarms,
        queues=app.queues,
        publish=Outbox(app.store, scene.clock, app.alarms),
    )
    for timer in app.alarms.take_due(scene.clock.now()):  # type: ignore[attr-defined]
        if timer.kind == "switch":
            engine.on_timer(UnitOfWork(app.store), timer)
    [death] = scene.acme.call("list_deaths")["deaths"]
    alert = death["alert_id"]
    assert alert is not None

    pat = scene.signed_in(scene.pat)
    page = pat.get("/console/switch", scope=scene.scope)
    text = page.body.decode()
    assert "Acknowledge the alert" in text
    assert alert in text
    done = pat.post(
        "/console/alerts/acknowledge",
        {"csrf": pat.csrf(), "event_id": alert, "scope": scene.scope},
    )
    assert done.status == 303
    assert location(done) == f"/console/switch?scope={scene.scope}"
    acked = scene.acme.call("acknowledge_alert", event_id=alert)
    assert acked["acknowledged_by"] == scene.pat_id  # the person's, which stands

    forged = scene.signed_in(scene.pat).post(
        "/console/alerts/acknowledge", {"csrf": "forged", "event_id": alert, "scope": scene.scope}
    )
    assert forged.status == 403
