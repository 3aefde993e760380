"""Signing in with OAuth, over HTTP through the router, on both stores: the metadata, dynamic
registration, the consent page, the code and refresh grants, revocation, and the MCP endpoint
taking the tokens; and every refusal the authorization spec asks for."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from tests.integration.test_console_http import ORIGIN, Browser, field_of
from tests.support import Tenant, app_on
from vigil.clock import ManualClock
from vigil.grants.records import MAX_GRANTS_PER_PRINCIPAL
from vigil.kit.http import HttpRequest, HttpResponse
from vigil.notifications.outbound import Fetched
from vigil.oauth.documents import Documents
from vigil.store import Store
from vigil.transports.router import Router

RESOURCE = f"{ORIGIN}/mcp"
CALLBACK = "http://127.0.0.1:33418/callback"
DOCUMENT_URL = "https://host.example/oauth/client.json"


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


@dataclass
class Documents_:
    """What the metadata documents' URLs answer, in place of the network."""

    answers: dict[str, Fetched] = field(default_factory=dict)
    fetched: list[str] = field(default_factory=list)

    def fetch(self, url: str) -> Fetched:
        self.fetched.append(url)
        return self.answers.get(url, Fetched(None, "HTTP 404", {}))

    def serve(self, url: str, document: Any, cache_control: str = "max-age=300") -> None:
        body = document if isinstance(document, bytes) else json.dumps(document).encode()
        self.answers[url] = Fetched(body, "", {"cache-control": cache_control})


@dataclass
class Scene:
    clock: ManualClock
    router: Router
    acme: Tenant
    globex: Tenant
    pat: str
    pat_id: str
    ann: str
    documents: Documents_

    def send(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        host: str = "vigil.example",
    ) -> HttpResponse:
        sent = {"host": host, "x-forwarded-proto": "https", **(headers or {})}
        return self.router.handle(HttpRequest(method, path, sent, body, source_ip="198.51.100.7"))

    def form(self, path: str, **fields: str) -> HttpResponse:
        body = urlencode(fields).encode()
        return self.send("POST", path, body, {"content-type": "application/x-www-form-urlencoded"})

    def register(self, **metadata: Any) -> HttpResponse:
        document = {
            "client_name": "Test Host",
            "redirect_uris": [CALLBACK],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            **metadata,
        }
        body = json.dumps(document).encode()
        return self.send("POST", "/oauth/register", body, {"content-type": "application/json"})

    def client(self) -> str:
        registered = self.register()
        assert registered.status == 201, registered.body
        client_id: str = json.loads(registered.body)["client_id"]
        return client_id

    def mcp(
        self, token: str, method: str, params: dict[str, Any] | None = None, host: str = ORIGIN
    ) -> HttpResponse:
        message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
        headers = {
            "authorization": f"Bearer {token}",
            "content-type": "application/json",
            "mcp-protocol-version": "2025-11-25",
        }
        return self.send("POST", "/mcp", json.dumps(message).encode(), headers, host=host[8:])


@pytest.fixture
def scene(store: Store, clock: ManualClock) -> Scene:
    app = app_on(store, clock)
    acme = Tenant(app, clock, "acme")
    globex = Tenant(app, clock, "globex")
    pat_id, pat = acme.register(kind="person", name="Pat")
    _, ann = acme.register(name="ann")
    documents = Documents_()
    router = Router(app, frozenset())
    router.oauth().documents = Documents(documents.fetch)
    return Scene(clock, router, acme, globex, pat, pat_id, ann, documents)


@dataclass
class Consent:
    """An authorization request, as a host makes it, and the person's answer to it."""

    scene: Scene
    client_id: str
    secret: str
    scope: str = "vigil:people"
    extra: dict[str, str] = field(default_factory=dict)
    verifier: str = ""
    browser: Browser | None = None

    def query(self) -> dict[str, str]:
        self.verifier, challenge = pkce()
        query = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": CALLBACK,
            "state": "s-1",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": RESOURCE,
            "scope": self.scope,
            **self.extra,
        }
        return {name: value for name, value in query.items() if value != ""}

    def page(self) -> HttpResponse:
        self.browser = Browser(self.scene.router)
        assert self.browser.sign_in(self.secret).status == 303
        self._query = self.query()
        return self.browser.get("/console/authorize", **self._query)

    def decide(self, decision: str = "allow") -> dict[str, str]:
        """The person's decision; what the host's callback receives."""
        page = self.page()
        assert page.status == 200, page.body
        assert self.browser is not None
        form = {
            **self._query,
            "csrf": field_of(page, "csrf"),
            "shown": field_of(page, "shown"),
            "decision": decision,
        }
        answer = self.browser.post("/console/authorize", form)
        assert answer.status == 302, answer.body
        return callback(answer)

    def tokens(self, **extra: str) -> dict[str, Any]:
        code = self.decide()["code"]
        answer = self.scene.form(
            "/oauth/token",
            grant_type="authorization_code",
            code=code,
            redirect_uri=CALLBACK,
            client_id=self.client_id,
            code_verifier=self.verifier,
            resource=RESOURCE,
            **extra,
        )
        assert answer.status == 200, answer.body
        assert answer.headers["cache-control"] == "no-store"
        tokens: dict[str, Any] = json.loads(answer.body)
        return tokens


def callback(answer: HttpResponse) -> dict[str, str]:
    location = answer.headers["location"]
    assert location.startswith(CALLBACK)
    return {name: values[0] for name, values in parse_qs(urlsplit(location).query).items()}


def error_of(answer: HttpResponse) -> str:
    found: str = json.loads(answer.body)["error"]
    return found


def whoami(scene: Scene, token: str, host: str = ORIGIN) -> HttpResponse:
    return scene.mcp(token, "tools/call", {"name": "whoami", "arguments": {}}, host=host)


# -- metadata -------------------------------------------------------------------------------
def test_the_resource_names_its_server_and_the_server_says_what_it_supports(
    scene: Scene,
) -> None:
    resource = json.loads(scene.send("GET", "/.well-known/oauth-protected-resource").body)
    assert resource["resource"] == RESOURCE
    assert resource["authorization_servers"] == [ORIGIN]
    assert "offline_access" not in resource["scopes_supported"]
    server = json.loads(scene.send("GET", "/.well-known/oauth-authorization-server").body)
    assert server["issuer"] == ORIGIN
    assert server["authorization_endpoint"] == f"{ORIGIN}/console/authorize"
    assert server["code_challenge_methods_supported"] == ["S256"]
    assert server["client_id_metadata_document_supported"] is True
    assert server["authorization_response_iss_parameter_supported"] is True
    assert "none" in server["token_endpoint_auth_methods_supported"]
    assert server["scopes_supported"] == resource["scopes_supported"]


def test_a_call_without_a_credential_is_told_where_the_metadata_is(scene: Scene) -> None:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami"}}
    answer = scene.send("POST", "/mcp", json.dumps(call).encode())
    assert answer.status == 401
    challenge = answer.headers["www-authenticate"]
    assert f'resource_metadata="{ORIGIN}/.well-known/oauth-protected-resource"' in challenge


# -- registration ---------------------------------------------------------------------------
def test_registration_gives_a_public_client_no_secret_and_a_confidential_one_a_secret(
    scene: Scene,
) -> None:
    public = json.loads(scene.register().body)
    assert public["client_id"].startswith("vgc_")
    assert "client_secret" not in public
    confidential = scene.register(token_endpoint_auth_method="client_secret_post")
    assert confidential.status == 201
    assert len(json.loads(confidential.body)["client_secret"]) >= 40


@pytest.mark.parametrize(
    "uri",
    [
        "http://host.example/callback",  # plain http off the loopback interface
        "javascript:alert(1)",
        "https://host.example/cb#fragment",
        "data:text/html,x",
    ],
)
def test_registration_refuses_a_redirect_uri_a_client_may_not_use(scene: Scene, uri: str) -> None:
    answer = scene.register(redirect_uris=[uri])
    assert answer.status == 400
    assert error_of(answer) in ("invalid_redirect_uri", "invalid_client_metadata")


def test_registration_from_one_address_is_limited(scene: Scene) -> None:
    for _ in range(20):
        assert scene.register().status == 201
    refused = scene.register()
    assert refused.status == 429
    assert refused.headers["retry-after"] == "900"


def test_registration_refuses_a_body_that_is_not_json(scene: Scene) -> None:
    answer = scene.send("POST", "/oauth/register", b"client_name=x")
    assert (answer.status, error_of(answer)) == (400, "invalid_client_metadata")


# -- the consent page and the code ------------------------------------------------------------
def test_the_consent_page_shows_who_asks_where_answers_go_and_what_is_granted(
    scene: Scene,
) -> None:
    consent = Consent(scene, scene.client(), scene.pat, scope="vigil:people vigil:agent")
    page = consent.page().body.decode()
    assert "<strong>Test Host</strong> asks to act as <strong>Pat</strong>" in page
    assert "<code>127.0.0.1:33418</code>" in page
    assert "registered here by itself" in page
    assert "<strong>vigil:people</strong>" in page
    assert "Not granted: vigil:agent (for agents and services)." in page


def test_a_host_is_sent_to_sign_in_first_and_comes_back_to_the_same_request(
    scene: Scene,
) -> None:
    consent = Consent(scene, scene.client(), scene.pat)
    browser = Browser(scene.router)
    query = consent.query()
    answer = browser.get("/console/authorize", **query)
    assert answer.status == 303
    target = parse_qs(urlsplit(answer.headers["location"]).query)["next"][0]
    assert target == f"/console/authorize?{urlencode(query)}"
    assert browser.sign_in(scene.pat, target).headers["location"] == target


def test_allowing_sends_the_host_a_code_its_state_and_the_issuer(scene: Scene) -> None:
    answer = Consent(scene, scene.client(), scene.pat).decide("allow")
    assert answer["state"] == "s-1"
    assert answer["iss"] == ORIGIN
    assert len(answer["code"]) >= 40


def test_denying_sends_access_denied_with_the_issuer(scene: Scene) -> None:
    answer = Consent(scene, scene.client(), scene.pat).decide("deny")
    assert (answer["error"], answer["state"], answer["iss"]) == ("access_denied", "s-1", ORIGIN)
    assert "code" not in answer


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        ({"code_challenge": "", "code_challenge_method": ""}, "invalid_request"),  # no PKCE
        ({"code_challenge_method": "plain"}, "invalid_request"),
        ({"code_challenge_method": ""}, "invalid_request"),  # plain, by default
        ({"resource": "https://elsewhere.example/mcp"}, "invalid_target"),
        ({"response_type": "token"}, "unsupported_response_type"),
    ],
)
def test_a_refused_request_is_told_to_the_host_where_it_listens(
    scene: Scene, extra: dict[str, str], error: str
) -> None:
    consent = Consent(scene, scene.client(), scene.pat, extra=extra)
    answer = consent.page()
    assert answer.status == 302
    told = callback(answer)
    assert (told["error"], told["iss"], told["state"]) == (error, ORIGIN, "s-1")


def test_a_redirect_uri_the_client_did_not_register_is_never_redirected_to(
    scene: Scene,
) -> None:
    consent = Consent(
        scene, scene.client(), scene.pat, extra={"redirect_uri": "https://evil.example/cb"}
    )
    answer = consent.page()
    assert answer.status == 400
    assert "location" not in answer.headers
    assert "cannot be used" in answer.body.decode()


def test_an_unknown_client_is_refused_on_the_page(scene: Scene) -> None:
    answer = Consent(scene, "vgc_aaaaaaaaaaaaaaaa", scene.pat).page()
    assert answer.status == 400
    assert "location" not in answer.headers


def test_nothing_is_granted_that_the_page_did_not_show(scene: Scene) -> None:
    """The form says what the page showed; if the person could now hold more (their role
    changed meanwhile), the page is shown again and no code is sent."""
    consent = Consent(
        scene, scene.client(), scene.acme.operator_secret, scope="vigil:people vigil:admin"
    )
    page = consent.page()
    assert field_of(page, "shown") == "vigil:people vigil:admin"
    assert consent.browser is not None
    form = {**consent._query, "csrf": field_of(page, "csrf"), "decision": "allow"}
    answer = consent.browser.post("/console/authorize", {**form, "shown": "vigil:people"})
    assert answer.status == 200
    assert "location" not in answer.headers
    assert "<strong>vigil:admin</strong>" in answer.body.decode()


def test_a_form_from_another_session_or_origin_decides_nothing(scene: Scene) -> None:
    consent = Consent(scene, scene.client(), scene.pat)
    page = consent.page()
    assert consent.browser is not None
    form = {**consent._query, "csrf": "forged", "decision": "allow"}
    assert consent.browser.post("/console/authorize", form).status == 403
    form["csrf"] = field_of(page, "csrf")
    cross = consent.browser.post("/console/authorize", form, {"sec-fetch-site": "cross-site"})
    assert cross.status == 403


# -- tokens ---------------------------------------------------------------------------------
def test_the_token_calls_tools_as_its_person_within_its_scopes(scene: Scene) -> None:
    tokens = Consent(scene, scene.client(), scene.pat).tokens()
    assert tokens["token_type"] == "Bearer"
    assert tokens["expires_in"] == 900
    assert tokens["scope"] == "vigil:people"
    me = json.loads(
        json.loads(whoami(scene, tokens["access_token"]).body)["result"]["content"][0]["text"]
    )
    assert me["principal"]["id"] == scene.pat_id
    listing = json.loads(scene.mcp(tokens["access_token"], "tools/list").body)["result"]["tools"]
    names = {tool["name"] for tool in listing}
    assert {"reply", "get_request", "list_switches"} <= names
    assert "heartbeat" not in names  # the worker's loop is vigil:agent's


def test_an_agent_signs_in_as_itself_and_gets_the_workers_loop(scene: Scene) -> None:
    tokens = Consent(scene, scene.client(), scene.ann, scope="vigil:agent vigil:people").tokens()
    assert tokens["scope"] == "vigil:agent"
    beat = scene.mcp(
        tokens["access_token"],
        "tools/call",
        {"name": "heartbeat", "arguments": {"scope": "job-1", "expect_within_seconds": 600}},
    )
    result = json.loads(beat.body)["result"]
    assert result["isError"] is False, result


def test_a_tool_beyond_the_grant_asks_for_a_step_up(scene: Scene) -> None:
    tokens = Consent(scene, scene.client(), scene.acme.operator_secret).tokens(scope="vigil:people")
    # An operator asked only for the people's scope: registering is vigil:admin's.
    assert tokens["scope"] == "vigil:people"
    answer = scene.mcp(
        tokens["access_token"],
        "tools/call",
        {"name": "register", "arguments": {"kind": "agent", "name": "x", "role": "worker"}},
    )
    assert answer.status == 403
    header = answer.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in header
    assert 'scope="vigil:people vigil:admin"' in header
    assert "resource_metadata=" in header


def test_a_code_is_redeemed_once_and_a_replay_ends_its_grant(scene: Scene) -> None:
    consent = Consent(scene, scene.client(), scene.pat)
    code = consent.decide()["code"]
    fields = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": CALLBACK,
        "client_id": consent.client_id,
        "code_verifier": consent.verifier,
    }
    first = scene.form("/oauth/token", **fields)
    assert first.status == 200
    token = json.loads(first.body)["access_token"]
    assert whoami(scene, token).status == 200
    replay = scene.form("/oauth/token", **fields)
    assert (replay.status, error_of(replay)) == (400, "invalid_grant")
    assert whoami(scene, token).status == 401
    events = scene.acme.call("list_audit_events")["events"]
    actions = {(e["action"], e["actor"]) for e in events if e["target_kind"] == "grant"}
    assert actions == {("grant_access", scene.pat_id), ("revoke_grant", None)}


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"code_verifier": pkce()[0]}, "invalid_grant"),  # not the challenge's verifier
        ({"code_verifier": ""}, "invalid_request"),
        ({"redirect_uri": "http://127.0.0.1:33418/other"}, "invalid_grant"),
        ({"resource": "https://elsewhere.example/mcp"}, "invalid_target"),
        ({"client_id": "vgc_bbbbbbbbbbbbbbbb"}, "invalid_client"),
    ],
)
def test_the_token_endpoint_refuses_a_code_presented_otherwise(
    scene: Scene, change: dict[str, str], error: str
) -> None:
    consent = Consent(scene, scene.client(), scene.pat)
    fields = {
        "grant_type": "authorization_code",
        "code": consent.decide()["code"],
        "redirect_uri": CALLBACK,
        "client_id": consent.client_id,
        "code_verifier": consent.verifier,
        **change,
    }
    answer = scene.form("/oauth/token", **{k: v for k, v in fields.items() if v})
    assert answer.status in (400, 401)
    assert error_of(answer) == error


def test_a_code_expires_after_five_minutes(scene: Scene) -> None:
    consent = Consent(scene, scene.client(), scene.pat)
    code = consent.decide()["code"]
    scene.clock.advance(301)
    answer = scene.form(
        "/oauth/token",
        grant_type="authorization_code",
        code=code,
        redirect_uri=CALLBACK,
        client_id=consent.client_id,
        code_verifier=consent.verifier,
    )
    assert error_of(answer) == "invalid_grant"


def refresh(scene: Scene, client_id: str, token: str) -> HttpResponse:
    return scene.form(
        "/oauth/token", grant_type="refresh_token", refresh_token=token, client_id=client_id
    )


def test_refreshing_rotates_and_a_reused_refresh_token_ends_the_family(scene: Scene) -> None:
    client_id = scene.client()
    first = Consent(scene, client_id, scene.pat).tokens()
    second = json.loads(refresh(scene, client_id, first["refresh_token"]).body)
    assert second["refresh_token"] != first["refresh_token"]
    assert whoami(scene, second["access_token"]).status == 200
    # The first refresh token again: a thief or the host, either way the grant ends.
    reused = refresh(scene, client_id, first["refresh_token"])
    assert error_of(reused) == "invalid_grant"
    assert whoami(scene, second["access_token"]).status == 401
    assert error_of(refresh(scene, client_id, second["refresh_token"])) == "invalid_grant"


def test_a_refresh_token_works_only_for_its_own_client(scene: Scene) -> None:
    tokens = Consent(scene, scene.client(), scene.pat).tokens()
    answer = refresh(scene, scene.client(), tokens["refresh_token"])
    assert error_of(answer) == "invalid_grant"


def test_revoking_a_refresh_token_stops_its_access_tokens_at_once(scene: Scene) -> None:
    client_id = scene.client()
    tokens = Consent(scene, client_id, scene.pat).tokens()
    answer = scene.form("/oauth/revoke", token=tokens["refresh_token"], client_id=client_id)
    assert answer.status == 200
    assert whoami(scene, tokens["access_token"]).status == 401
    # RFC 7009: a token that is not (or no longer) valid is answered the same.
    assert scene.form("/oauth/revoke", token="nonsense", client_id=client_id).status == 200


def test_revoking_a_person_stops_their_tokens_and_refreshes(scene: Scene) -> None:
    client_id = scene.client()
    tokens = Consent(scene, client_id, scene.pat).tokens()
    scene.acme.call("revoke_principal", principal_id=scene.pat_id, version=2)
    assert whoami(scene, tokens["access_token"]).status == 401
    assert error_of(refresh(scene, client_id, tokens["refresh_token"])) == "invalid_grant"


def test_an_access_token_holds_for_fifteen_minutes(scene: Scene) -> None:
    tokens = Consent(scene, scene.client(), scene.pat).tokens()
    scene.clock.advance(899)
    assert whoami(scene, tokens["access_token"]).status == 200
    scene.clock.advance(1)
    assert whoami(scene, tokens["access_token"]).status == 401


def test_a_token_is_for_its_own_resource_only(scene: Scene) -> None:
    token = Consent(scene, scene.client(), scene.pat).tokens()["access_token"]
    # The same deployment by another name is another resource.
    assert whoami(scene, token, host="https://other.example").status == 401
    # The REST mirror is not the resource a token is issued for.
    rest = scene.send("POST", "/v1/whoami", b"{}", {"authorization": f"Bearer {token}"})
    assert rest.status == 401


def test_a_token_whose_claims_were_changed_is_refused(scene: Scene) -> None:
    token = Consent(scene, scene.client(), scene.pat).tokens()["access_token"]
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["ns"] = "globex"  # another namespace, the same principal id
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    assert whoami(scene, f"{header}.{forged}.{signature}").status == 401


def test_a_principal_holds_a_bounded_number_of_grants(scene: Scene) -> None:
    client_id = scene.client()
    for _ in range(MAX_GRANTS_PER_PRINCIPAL):
        Consent(scene, client_id, scene.pat).tokens()
    consent = Consent(scene, client_id, scene.pat)
    answer = scene.form(
        "/oauth/token",
        grant_type="authorization_code",
        code=consent.decide()["code"],
        redirect_uri=CALLBACK,
        client_id=client_id,
        code_verifier=consent.verifier,
    )
    assert error_of(answer) == "invalid_grant"
    assert "revoke one" in json.loads(answer.body)["error_description"]


# -- the console's sign-ins -------------------------------------------------------------------
def test_a_person_sees_and_revokes_their_grants_and_an_operator_every_one(scene: Scene) -> None:
    client_id = scene.client()
    pats = Consent(scene, client_id, scene.pat).tokens()
    anns = Consent(scene, client_id, scene.ann, scope="vigil:agent").tokens()
    pat = Browser(scene.router)
    pat.sign_in(scene.pat)
    page = pat.get("/console/grants").body.decode()
    assert "Test Host" in page
    assert "vigil:people" in page
    assert "vigil:agent" not in page
    grant_id = field_of(pat.get("/console/grants"), "id")
    assert pat.post("/console/grants/revoke", {"csrf": pat.csrf(), "id": grant_id}).status == 303
    assert whoami(scene, pats["access_token"]).status == 401

    operator = Browser(scene.router)
    operator.sign_in(scene.acme.operator_secret)
    listing = operator.get("/console/grants").body.decode()
    assert "vigil:agent" in listing
    assert "revoked" in listing
    ann_grant = field_of(operator.get("/console/grants"), "id")
    assert (
        operator.post("/console/grants/revoke", {"csrf": operator.csrf(), "id": ann_grant}).status
        == 303
    )
    assert whoami(scene, anns["access_token"]).status == 401
    events = scene.acme.call("list_audit_events")["events"]
    ended = [(e["actor"], e["target"]) for e in events if e["action"] == "revoke_grant"]
    assert (scene.acme.operator.id, ann_grant) in ended
    assert (scene.pat_id, grant_id) in ended


def test_another_namespace_sees_no_grant_and_revokes_none(scene: Scene) -> None:
    Consent(scene, scene.client(), scene.pat).tokens()
    pat = Browser(scene.router)
    pat.sign_in(scene.pat)
    grant_id = field_of(pat.get("/console/grants"), "id")
    mallory = Browser(scene.router)
    mallory.sign_in(scene.globex.operator_secret)
    assert "Test Host" not in mallory.get("/console/grants").body.decode()
    answer = mallory.post("/console/grants/revoke", {"csrf": mallory.csrf(), "id": grant_id})
    assert answer.status == 404


# -- clients known by their metadata documents ---------------------------------------------------
def document(**changes: Any) -> dict[str, Any]:
    return {
        "client_id": DOCUMENT_URL,
        "client_name": "Document Host",
        "redirect_uris": [CALLBACK],
        "token_endpoint_auth_method": "none",
        **changes,
    }


def test_a_client_known_by_its_document_signs_in_and_the_document_is_kept_a_while(
    scene: Scene,
) -> None:
    scene.documents.serve(DOCUMENT_URL, document())
    consent = Consent(scene, DOCUMENT_URL, scene.pat)
    page = consent.page().body.decode()
    assert "<strong>Document Host</strong>" in page
    assert "its own description at host.example" in page
    tokens = consent.tokens()
    assert whoami(scene, tokens["access_token"]).status == 200
    assert scene.documents.fetched == [DOCUMENT_URL]  # kept for its max-age
    scene.clock.advance(301)
    refresh(scene, DOCUMENT_URL, tokens["refresh_token"])
    assert scene.documents.fetched == [DOCUMENT_URL, DOCUMENT_URL]


@pytest.mark.parametrize(
    ("served", "why"),
    [
        (document(client_id="https://host.example/other.json"), "names another client_id"),
        (b"<html>", "is not JSON"),
        (document(redirect_uris=["http://host.example/cb"]), "no usable redirect_uris"),
        (document(token_endpoint_auth_method="client_secret_basic"), "authenticates with none"),
        (document(client_secret="s"), "may not hold a client secret"),
    ],
)
def test_a_document_that_does_not_describe_a_usable_client_is_refused(
    scene: Scene, served: Any, why: str
) -> None:
    scene.documents.serve(DOCUMENT_URL, served)
    answer = Consent(scene, DOCUMENT_URL, scene.pat).page()
    assert answer.status == 400
    assert why in answer.body.decode()


def test_a_document_that_could_not_be_read_is_refused_and_not_kept(scene: Scene) -> None:
    scene.documents.answers[DOCUMENT_URL] = Fetched(None, "no answer within 5 s", {})
    answer = Consent(scene, DOCUMENT_URL, scene.pat).page()
    assert "no answer within 5 s" in answer.body.decode()
    scene.documents.serve(DOCUMENT_URL, document())
    assert Consent(scene, DOCUMENT_URL, scene.pat).page().status == 200


def test_a_document_redirect_uri_is_matched_exactly(scene: Scene) -> None:
    scene.documents.serve(DOCUMENT_URL, document(redirect_uris=["https://host.example/cb"]))
    consent = Consent(
        scene, DOCUMENT_URL, scene.pat, extra={"redirect_uri": "https://host.example/cb/"}
    )
    assert consent.page().status == 400


def test_an_operator_allows_or_blocks_document_hosts(scene: Scene) -> None:
    from vigil.oauth.documents import HostRule

    scene.documents.serve(DOCUMENT_URL, document())
    scene.router.oauth().documents.hosts = HostRule.parse("claude.ai,chatgpt.com", "")
    refused = Consent(scene, DOCUMENT_URL, scene.pat).page()
    assert "clients from host.example are not accepted here" in refused.body.decode()
    scene.router.oauth().documents.hosts = HostRule.parse("", "host.example")
    assert Consent(scene, DOCUMENT_URL, scene.pat).page().status == 400
    scene.router.oauth().documents.hosts = HostRule.parse("example", "")
    assert Consent(scene, DOCUMENT_URL, scene.pat).page().status == 200


# -- races ----------------------------------------------------------------------------------
class HeldCommit:
    """Holds the first commit of ``store`` until ``reads`` reads of ``method`` were made, so
    that two requests both read before either writes: the race the conditional writes must
    decide."""

    def __init__(self, store: Store, method: str, reads: int) -> None:
        import threading

        self.store = store
        self.read_enough = threading.Event()
        self.count = 0
        self.held = False
        real_read = getattr(store, method)
        real_commit = store.commit

        def read(*args: Any, **kwargs: Any) -> Any:
            found = real_read(*args, **kwargs)
            self.count += 1
            if self.count >= reads:
                self.read_enough.set()
            return found

        def commit(*args: Any, **kwargs: Any) -> Any:
            if not self.held:
                self.held = True
                assert self.read_enough.wait(10), "the other request never read"
            return real_commit(*args, **kwargs)

        setattr(store, method, read)
        store.commit = commit  # type: ignore[method-assign]


def both(*steps: Any) -> list[HttpResponse]:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(steps)) as pool:
        return [future.result(timeout=30) for future in [pool.submit(step) for step in steps]]


def test_two_redemptions_of_one_code_at_once_make_one_grant(scene: Scene, store: Store) -> None:
    consent = Consent(scene, scene.client(), scene.pat)
    fields = {
        "grant_type": "authorization_code",
        "code": consent.decide()["code"],
        "redirect_uri": CALLBACK,
        "client_id": consent.client_id,
        "code_verifier": consent.verifier,
    }
    HeldCommit(store, "get_code", 2)
    answers = both(*[lambda: scene.form("/oauth/token", **fields)] * 2)
    assert sorted(a.status for a in answers) == [200, 400]
    holder = store.get_principal("acme", scene.pat_id)
    assert holder is not None
    assert len(holder.grants) == 1


def test_two_refreshes_with_one_token_at_once_rotate_once(scene: Scene, store: Store) -> None:
    client_id = scene.client()
    tokens = Consent(scene, client_id, scene.pat).tokens()
    HeldCommit(store, "get_grant", 2)
    answers = both(*[lambda: refresh(scene, client_id, tokens["refresh_token"])] * 2)
    assert sorted(a.status for a in answers) == [200, 400]
    (won,) = [json.loads(a.body) for a in answers if a.status == 200]
    assert whoami(scene, won["access_token"]).status == 200
    again = refresh(scene, client_id, won["refresh_token"])
    assert again.status == 200


def test_a_revocation_racing_a_refresh_leaves_the_grant_ended(scene: Scene, store: Store) -> None:
    client_id = scene.client()
    tokens = Consent(scene, client_id, scene.pat).tokens()
    HeldCommit(store, "get_grant", 2)
    answers = both(
        lambda: refresh(scene, client_id, tokens["refresh_token"]),
        lambda: scene.form("/oauth/revoke", token=tokens["refresh_token"], client_id=client_id),
    )
    refreshed, revoked = answers
    assert revoked.status == 200
    if refreshed.status == 200:
        # The refresh committed first: the revocation, read before it, reads again and ends
        # the grant all the same, the new pair with it.
        later = json.loads(refreshed.body)
        assert whoami(scene, later["access_token"]).status == 401
        assert error_of(refresh(scene, client_id, later["refresh_token"])) == "invalid_grant"
    else:
        assert error_of(refreshed) == "invalid_grant"
    assert whoami(scene, tokens["access_token"]).status == 401


def test_a_grant_is_deleted_half_a_year_after_its_last_use(scene: Scene, store: Store) -> None:
    from vigil.stores.dynamo import DynamoStore

    if not isinstance(store, DynamoStore):
        pytest.skip("DynamoDB's TTL: the in-memory store deletes nothing")
    client_id = scene.client()
    tokens = Consent(scene, client_id, scene.pat).tokens()
    scene.clock.advance(3600)
    refresh(scene, client_id, tokens["refresh_token"])
    holder = store.get_principal("acme", scene.pat_id)
    assert holder is not None
    (grant_id,) = holder.grants
    item = store.client.get_item(
        TableName=store.table, Key={"pk": {"S": "NS#acme"}, "sk": {"S": f"GRANT#{grant_id}"}}
    )["Item"]
    refreshed_at = int(scene.clock.now().timestamp())
    assert int(item["ttl"]["N"]) == refreshed_at + 180 * 86400
