"""Bring your own identity provider: tokens of an external issuer, whose discovery document and
keys a real HTTP server on loopback serves, taken at the MCP endpoint through the router, and
mapped to principals by the operator's rule; and every refusal."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import ECKey, KeySet, OctKey, RSAKey

from tests.support import Tenant, app_on
from vigil.clock import ManualClock
from vigil.kit.http import HttpRequest, HttpResponse
from vigil.oauth.external import (
    KEYS_SECONDS,
    REFETCH_SECONDS,
    ClaimRule,
    ExternalIssuer,
    RuleError,
    fetcher,
)
from vigil.stores.memory import MemoryStore
from vigil.transports.router import Router

AUDIENCE = "vigil-mcp"
RULE = "namespace=acme;principal={vigil_principal};require={groups}:vigil"


@dataclass
class Provider:
    """An identity provider as far as Vigil sees one: its discovery document and its keys."""

    keys: list[Any] = field(default_factory=list)
    fetches: list[str] = field(default_factory=list)
    url: str = ""

    def serve(self) -> Iterator[str]:
        provider = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                provider.fetches.append(self.path)
                if self.path == "/.well-known/openid-configuration":
                    body = {"issuer": provider.url, "jwks_uri": f"{provider.url}/jwks"}
                elif self.path == "/jwks":
                    body = KeySet(provider.keys).as_dict(private=False)
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(json.dumps(body).encode())

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield self.url
        server.shutdown()


@dataclass
class Scene:
    clock: ManualClock
    router: Router
    acme: Tenant
    provider: Provider
    key: Any
    pat_id: str
    ann_id: str

    def token(self, key: Any = None, alg: str = "ES256", **changes: Any) -> str:
        now = int(self.clock.now().timestamp())
        claims = {
            "iss": self.provider.url,
            "aud": AUDIENCE,
            "sub": "idp-user-1",
            "vigil_principal": self.pat_id,
            "groups": ["staff", "vigil"],
            "iat": now,
            "exp": now + 300,
            **changes,
        }
        claims = {name: value for name, value in claims.items() if value is not None}
        key = key or self.key
        return jwt.encode({"alg": alg, "kid": key.kid}, claims, key)

    def mcp(self, token: str, method: str = "tools/call", **params: Any) -> HttpResponse:
        if method == "tools/call" and not params:
            params = {"name": "whoami", "arguments": {}}
        message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        headers = {
            "host": "vigil.example",
            "x-forwarded-proto": "https",
            "authorization": f"Bearer {token}",
            "mcp-protocol-version": "2025-11-25",
        }
        request = HttpRequest("POST", "/mcp", headers, json.dumps(message).encode())
        return self.router.handle(request)

    def who(self, token: str) -> str | None:
        answer = self.mcp(token)
        if answer.status != 200:
            return None
        result = json.loads(answer.body)["result"]
        found: str = json.loads(result["content"][0]["text"])["principal"]["id"]
        return found


@pytest.fixture
def provider() -> Iterator[Provider]:
    provider = Provider([ECKey.generate_key("P-256", parameters={"kid": "k1"})])
    yield from (provider for _ in provider.serve())


@pytest.fixture
def scene(provider: Provider, clock: ManualClock) -> Scene:
    external = ExternalIssuer.configured(provider.url, AUDIENCE, RULE, fetcher(allow_private=True))
    app = app_on(MemoryStore(), clock, external=external)
    acme = Tenant(app, clock, "acme")
    pat_id, _ = acme.register(kind="person", name="Pat")
    ann_id, _ = acme.register(name="ann")
    return Scene(clock, Router(app, frozenset()), acme, provider, provider.keys[0], pat_id, ann_id)


def test_the_resource_names_the_operators_provider(scene: Scene) -> None:
    request = HttpRequest(
        "GET", "/.well-known/oauth-protected-resource", {"host": "vigil.example"}, b""
    )
    metadata = json.loads(scene.router.handle(request).body)
    assert metadata["authorization_servers"] == [scene.provider.url]


def test_a_providers_token_calls_as_the_principal_its_claims_name(scene: Scene) -> None:
    assert scene.who(scene.token()) == scene.pat_id
    assert scene.who(scene.token(vigil_principal=scene.ann_id)) == scene.ann_id
    # Discovery and keys were fetched once, and kept.
    assert scene.provider.fetches == ["/.well-known/openid-configuration", "/jwks"]


def test_a_token_without_vigils_scopes_gets_what_its_principal_may_hold(scene: Scene) -> None:
    listed = json.loads(scene.mcp(scene.token(), "tools/list").body)["result"]["tools"]
    names = {tool["name"] for tool in listed}
    assert "reply" in names
    assert "heartbeat" not in names  # a person holds vigil:people, not vigil:agent


def test_a_token_naming_vigils_scopes_is_held_to_them(scene: Scene) -> None:
    token = scene.token(vigil_principal=scene.acme.operator.id, scope="openid vigil:people")
    answer = scene.mcp(token, name="register", arguments={"kind": "agent", "name": "x"})
    assert answer.status == 403
    assert 'scope="vigil:people vigil:admin"' in answer.headers["www-authenticate"]


@pytest.mark.parametrize(
    "changes",
    [
        {"aud": "another-api"},
        {"aud": None},
        {"exp": None},
        {"iss": "https://elsewhere.example"},
        {"groups": ["staff"]},  # the rule's require
        {"vigil_principal": "pat"},  # not a principal id
        {"vigil_principal": "per_aaaaaaaaaaaaaaaa"},  # nobody
    ],
)
def test_a_token_failing_a_check_is_refused(scene: Scene, changes: dict[str, Any]) -> None:
    answer = scene.mcp(scene.token(**changes))
    assert answer.status == 401
    assert "resource_metadata=" in answer.headers["www-authenticate"]


def test_an_expired_token_is_refused_after_the_leeway(scene: Scene) -> None:
    token = scene.token()
    scene.clock.advance(300 + 59)
    assert scene.who(token) == scene.pat_id
    scene.clock.advance(1)
    assert scene.who(token) is None


def test_a_token_signed_by_another_key_is_refused(scene: Scene) -> None:
    stranger = ECKey.generate_key("P-256", parameters={"kid": "k1"})
    assert scene.who(scene.token(key=stranger)) is None


def test_a_symmetric_token_made_with_the_public_key_is_refused(scene: Scene) -> None:
    """Algorithm confusion: HS256 keyed with the provider's public key, which anyone has."""
    public = json.dumps(scene.key.as_dict(private=False)).encode()
    forged = OctKey.import_key(public, parameters={"kid": "k1"})
    assert scene.who(scene.token(key=forged, alg="HS256")) is None


def test_a_rotated_key_is_fetched_but_not_more_often_than_every_five_minutes(
    scene: Scene,
) -> None:
    assert scene.who(scene.token()) == scene.pat_id
    rotated = RSAKey.generate_key(2048, parameters={"kid": "k2"})
    scene.provider.keys.append(rotated)
    # Within five minutes of the last fetch, an unknown key is not fetched again.
    assert scene.who(scene.token(key=rotated, alg="RS256")) is None
    scene.clock.advance(REFETCH_SECONDS)
    assert scene.who(scene.token(key=rotated, alg="RS256")) == scene.pat_id
    assert scene.provider.fetches.count("/jwks") == 2


def test_keys_are_fetched_again_after_an_hour(scene: Scene) -> None:
    scene.who(scene.token())
    scene.clock.advance(KEYS_SECONDS)
    assert scene.who(scene.token()) == scene.pat_id
    assert scene.provider.fetches.count("/jwks") == 2


def test_a_revoked_principal_is_refused(scene: Scene) -> None:
    scene.acme.call("revoke_principal", principal_id=scene.pat_id, version=1)
    assert scene.who(scene.token()) is None


def test_a_providers_token_is_for_the_mcp_endpoint_only(scene: Scene) -> None:
    request = HttpRequest(
        "POST",
        "/v1/whoami",
        {"host": "vigil.example", "authorization": f"Bearer {scene.token()}"},
        b"{}",
    )
    assert scene.router.handle(request).status == 401


def test_cognito_access_tokens_name_their_audience_in_client_id(
    provider: Provider, clock: ManualClock
) -> None:
    rule = "namespace=acme;principal={custom:vigil_principal};audience_claim=client_id"
    external = ExternalIssuer.configured(provider.url, "app-client-1", rule, fetcher(True))
    assert external is not None
    now = int(clock.now().timestamp())
    claims = {
        "iss": provider.url,
        "client_id": "app-client-1",
        "token_use": "access",
        "custom:vigil_principal": "per_aaaaaaaaaaaaaaaa",
        "exp": now + 60,
    }
    key = provider.keys[0]
    token = jwt.encode({"alg": "ES256", "kid": key.kid}, claims, key)
    found = external.claims(token, clock.now())
    assert found is not None
    assert (found.namespace, found.principal_id) == ("acme", "per_aaaaaaaaaaaaaaaa")
    other = jwt.encode({"alg": "ES256", "kid": key.kid}, {**claims, "client_id": "x"}, key)
    assert external.claims(other, clock.now()) is None


def test_the_namespace_may_come_from_a_claim() -> None:
    rule = ClaimRule.parse("namespace={tenant}; principal={vp}")
    assert rule.principal_of({"tenant": "acme", "vp": "agt_aaaaaaaaaaaaaaaa"}) == (
        "acme",
        "agt_aaaaaaaaaaaaaaaa",
    )
    assert rule.principal_of({"tenant": "Not A Namespace", "vp": "agt_aaaaaaaaaaaaaaaa"}) is None


@pytest.mark.parametrize(
    ("rule", "says"),
    [
        ("namespace=acme", "principal={claim} is required"),
        ("principal={x}", "namespace= names a namespace"),
        ("namespace=acme;principal=x", "principal={claim} is required"),
        ("namespace=acme;principal={x};require=groups:vigil", "require={claim}:value"),
        ("namespace=acme;principal={x};colour=blue", "not a part of a rule"),
        ("namespace=acme;principal={x};principal={y}", "given twice"),
        ("namespace=acme;principal", "name=value"),
    ],
)
def test_a_rule_that_cannot_be_read_says_where(rule: str, says: str) -> None:
    with pytest.raises(RuleError, match=f".*{says}"):
        ClaimRule.parse(rule)


def test_an_issuer_needs_an_audience_and_none_configured_is_none() -> None:
    fetch = fetcher(True)
    assert ExternalIssuer.configured("", "", "", fetch) is None
    with pytest.raises(RuleError, match="audience"):
        ExternalIssuer.configured("https://idp.example", "", RULE, fetch)
