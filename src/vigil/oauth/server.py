"""Vigil's authorization server: Authlib's, on Vigil's store and HTTP types.

Authlib does the protocol (the authorization code grant with PKCE, refresh tokens, RFC 7009
revocation, RFC 7591 registration, RFC 9207's ``iss``); this module gives it Vigil's clients,
codes, grants and principals, and holds Vigil's own rules beside it:

- PKCE with S256 only, on every authorization (MCP's authorization spec).
- ``resource`` (RFC 8707), where a client sends it, must be this deployment's MCP endpoint;
  every token is for that resource alone.
- A grant holds only the scopes its principal may hold (vigil.oauth.scopes).
- Each grant's refresh tokens rotate; one used after it was replaced revokes the grant.
- A code is redeemed once, in the same transaction that creates its grant; a code presented
  again revokes the grant it made (RFC 6749 4.1.2).

The issuer is the origin the request came to, so one deployment behind two names is two
issuers, each with tokens for its own MCP endpoint.
"""

from __future__ import annotations

import secrets
import unicodedata
from collections import defaultdict
from collections.abc import Mapping
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

from authlib.oauth2.rfc6749 import (
    AuthorizationServer,
    ClientMixin,
    JsonPayload,
    JsonRequest,
    OAuth2Payload,
    OAuth2Request,
)
from authlib.oauth2.rfc6749.errors import (
    InvalidClientError,
    InvalidGrantError,
    InvalidRequestError,
    OAuth2Error,
)
from authlib.oauth2.rfc6749.grants import AuthorizationCodeGrant, RefreshTokenGrant
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint
from authlib.oauth2.rfc7591.errors import InvalidRedirectURIError
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc9207 import IssuerParameter

from vigil.audit.records import AuditEvent
from vigil.errors import contended
from vigil.grants import access
from vigil.grants.records import (
    ACCESS_TOKEN_SECONDS,
    CODE_SECONDS,
    GRANT_IDLE_DAYS,
    MAX_GRANTS_PER_PRINCIPAL,
    Client,
    Code,
    Ending,
    Grant,
    digest,
    new_client_id,
    new_grant_id,
    parse_refresh_token,
    refresh_token,
)
from vigil.identity.records import AttemptWindow, Principal, hash_secret, secret_matches
from vigil.kit.http import HttpRequest, HttpResponse
from vigil.kit.uow import ConditionFailed
from vigil.oauth import scopes
from vigil.oauth.documents import DocumentRefused, Documents, is_document_url
from vigil.oauth.documents import redirect_uri_allowed as allowed_redirect
from vigil.observability import get_logger, log_event
from vigil.store import Store

log = get_logger("vigil.oauth")

AUTHORIZE = "/console/authorize"
TOKEN = "/oauth/token"  # noqa: S105 (a path)
REVOKE = "/oauth/revoke"
REGISTER = "/oauth/register"
METADATA = "/.well-known/oauth-authorization-server"
MCP = "/mcp"
AUTH_METHODS = ["none", "client_secret_post", "client_secret_basic"]
# Registrations an address may make in one window of sign-in attempts (15 minutes).
REGISTRATIONS_PER_ADDRESS = 20
_MAX_NAME = 100


def resource_of(origin: str) -> str:
    """The one resource this deployment's tokens are for: its MCP endpoint."""
    return f"{origin}{MCP}"


def metadata(origin: str) -> dict[str, Any]:
    """RFC 8414's metadata of the server at ``origin``."""
    return {
        "issuer": origin,
        "authorization_endpoint": f"{origin}{AUTHORIZE}",
        "token_endpoint": f"{origin}{TOKEN}",
        "revocation_endpoint": f"{origin}{REVOKE}",
        "registration_endpoint": f"{origin}{REGISTER}",
        "scopes_supported": list(scopes.SUPPORTED),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": AUTH_METHODS,
        "revocation_endpoint_auth_methods_supported": AUTH_METHODS,
        "code_challenge_methods_supported": ["S256"],
        "client_id_metadata_document_supported": True,
        "authorization_response_iss_parameter_supported": True,
        "service_documentation": f"{origin}/docs",
    }


def shown_name(name: str) -> str:
    """A client's name as a person is shown it: no control or invisible characters (which
    could make it read as another's), at most _MAX_NAME characters."""
    kept = "".join(c for c in name if unicodedata.category(c)[0] not in ("C", "Z") or c == " ")
    return " ".join(kept.split())[:_MAX_NAME]


# -- Authlib's view of Vigil's records ---------------------------------------------------


class _Client(ClientMixin):  # type: ignore[misc]
    def __init__(self, client: Client) -> None:
        self.client = client
        self.client_id = client.client_id

    def get_client_id(self) -> str:
        return self.client.client_id

    def get_default_redirect_uri(self) -> str | None:
        uris = self.client.redirect_uris
        return uris[0] if len(uris) == 1 else None

    def get_allowed_scope(self, scope: str | None) -> str:
        return " ".join(scopes.parse(scope))

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        """Exactly one of its redirect URIs; for one on the loopback interface, any port
        (RFC 8252 7.3: a native app listens where it can)."""
        if redirect_uri in self.client.redirect_uris:
            return True
        given = urlsplit(redirect_uri)
        if given.scheme != "http" or given.hostname not in ("127.0.0.1", "::1"):
            return False
        for uri in self.client.redirect_uris:
            known = urlsplit(uri)
            if (known.scheme, known.hostname, known.path, known.query) == (
                given.scheme,
                given.hostname,
                given.path,
                given.query,
            ):
                return True
        return False

    def check_client_secret(self, client_secret: str) -> bool:
        stored = self.client.secret_hash
        return stored is not None and secret_matches(client_secret, stored)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == self.client.auth_method

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in ("authorization_code", "refresh_token")


class _Code:
    def __init__(self, code: Code) -> None:
        self.code = code
        self.code_challenge = code.challenge
        self.code_challenge_method = "S256"

    def get_redirect_uri(self) -> str:
        return self.code.redirect_uri

    def get_scope(self) -> str:
        return " ".join(self.code.scopes)


class _Credential:
    """A grant as the refresh and revocation endpoints handle it, with its holder where it
    was read (a refresh reads it once)."""

    def __init__(self, grant: Grant, holder: Principal | None = None) -> None:
        self.grant = grant
        self.holder = holder

    def check_client(self, client: _Client) -> bool:
        return self.grant.client_id == client.client_id

    def get_scope(self) -> str:
        return " ".join(self.grant.scopes)

    def get_expires_in(self) -> int:
        return ACCESS_TOKEN_SECONDS

    def is_expired(self) -> bool:
        return False

    def is_revoked(self) -> bool:
        return self.grant.status != "active"


class _Payload(OAuth2Payload):  # type: ignore[misc]
    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self._pairs = pairs

    @cached_property
    def data(self) -> dict[str, str]:
        return {name: value for name, value in reversed(self._pairs)}

    @cached_property
    def datalist(self) -> defaultdict[str, list[str]]:
        values: defaultdict[str, list[str]] = defaultdict(list)
        for name, value in self._pairs:
            values[name].append(value)
        return values


class _Headers(dict[str, str]):
    """Headers as Authlib asks for them (``Authorization``), kept in lower case."""

    def get(self, name: str, default: Any = None) -> Any:
        return super().get(name.lower(), default)

    def __getitem__(self, name: str) -> str:
        return super().__getitem__(name.lower())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and super().__contains__(name.lower())


def pairs_of(text: str) -> list[tuple[str, str]]:
    return [
        (name, value)
        for name, values in parse_qs(text, keep_blank_values=True).items()
        for value in values
    ]


class _Request(OAuth2Request):  # type: ignore[misc]
    def __init__(self, request: HttpRequest, origin: str, pairs: list[tuple[str, str]]) -> None:
        super().__init__(
            request.method, f"{origin}{request.path}", headers=_Headers(request.headers)
        )
        self.payload = _Payload(pairs)
        self.source_ip = request.source_ip

    @property
    def args(self) -> dict[str, str]:
        return dict(self.payload.data) if self.method == "GET" else {}

    @property
    def form(self) -> dict[str, str]:
        return dict(self.payload.data) if self.method == "POST" else {}


class _JsonPayload(JsonPayload):  # type: ignore[misc]
    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    @property
    def data(self) -> dict[str, Any]:
        return self._data


class _JsonRequest(JsonRequest):  # type: ignore[misc]
    def __init__(self, request: HttpRequest, origin: str, data: dict[str, Any]) -> None:
        super().__init__(request.method, f"{origin}{request.path}", _Headers(request.headers))
        self.payload = _JsonPayload(data)


class OAuthResponse(HttpResponse):
    """A response that Authlib's extensions may read and move the Location of."""

    @property
    def location(self) -> str | None:
        return self.headers.get("location")

    @location.setter
    def location(self, value: str) -> None:
        self.headers["location"] = value


# -- the grants and endpoints ------------------------------------------------------------


class _S256(CodeChallenge):  # type: ignore[misc]
    """PKCE as MCP requires it: a challenge on every authorization, by S256 alone."""

    DEFAULT_CODE_CHALLENGE_METHOD = "S256"
    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]

    def validate_code_challenge(self, grant: Any, redirect_uri: str) -> None:
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError("PKCE is required: send a code_challenge, by S256")
        if data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("code_challenge_method must be S256")
        super().validate_code_challenge(grant, redirect_uri)


class _CodeGrant(AuthorizationCodeGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS
    server: VigilAuthorizationServer

    def save_authorization_code(self, code: str, request: Any) -> None:
        self.server.keep_code(code, request)

    def query_authorization_code(self, code: str, client: _Client) -> _Code | None:
        return self.server.code_to_redeem(code, client)

    def delete_authorization_code(self, authorization_code: _Code) -> None:
        """Nothing: the code was marked redeemed with its grant's creation (save_token)."""

    def authenticate_user(self, authorization_code: _Code) -> Principal | None:
        code = authorization_code.code
        return self.server.active_principal(code.namespace, code.principal_id)

    def generate_token(self, user: Principal, scope: str, **_: Any) -> dict[str, Any]:
        code = self.request.authorization_code.code
        return self.server.token_response(user, code.grant_id, self.request.client, scope, 1)


class _RefreshGrant(RefreshTokenGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS
    INCLUDE_NEW_REFRESH_TOKEN = True
    server: VigilAuthorizationServer

    def authenticate_refresh_token(self, refresh_token: str) -> _Credential | None:
        return self.server.refreshable(refresh_token)

    def authenticate_user(self, refresh_token: _Credential) -> Principal | None:
        """The holder ``refreshable`` read and found active, holding the grant."""
        return refresh_token.holder

    def generate_token(self, user: Principal, scope: str, **_: Any) -> dict[str, Any]:
        grant = self.request.refresh_token.grant
        generation = grant.refresh_generation + 1
        return self.server.token_response(user, grant.id, self.request.client, scope, generation)

    def revoke_old_credential(self, refresh_token: _Credential) -> None:
        """Nothing: the grant's generation moved on with the new token (save_token)."""


class _Revocation(RevocationEndpoint):  # type: ignore[misc]
    CLIENT_AUTH_METHODS = AUTH_METHODS
    server: VigilAuthorizationServer

    def query_token(self, token_string: str, token_type_hint: str | None) -> _Credential | None:
        return self.server.credential_of(token_string)

    def revoke_token(self, token: _Credential, request: Any) -> None:
        self.server.end(token.grant, "revoked", token.grant.principal_id)


class _Registration(ClientRegistrationEndpoint):  # type: ignore[misc]
    server: VigilAuthorizationServer

    def authenticate_token(self, request: Any) -> bool:
        """Anyone may register (RFC 7591's open registration); the router limits how often
        one address does."""
        return True

    def get_server_metadata(self) -> dict[str, Any]:
        # Clients ask for scopes this server does not know (openid, offline_access): a
        # registration keeps them out of its grants rather than refusing the client.
        return {k: v for k, v in self.server.metadata.items() if k != "scopes_supported"}

    def generate_client_id(self, request: Any) -> str:
        return new_client_id()

    def generate_client_secret(self, request: Any) -> str | None:
        method = request.payload.data.get("token_endpoint_auth_method", "client_secret_basic")
        return None if method == "none" else secrets.token_urlsafe(32)

    def generate_client_info(self, request: Any) -> dict[str, Any]:
        info: dict[str, Any] = super().generate_client_info(request)
        if info.get("client_secret") is None:
            info.pop("client_secret", None)
            info.pop("client_secret_expires_at", None)
        return info

    def save_client(
        self, client_info: dict[str, Any], client_metadata: dict[str, Any], request: Any
    ) -> Client:
        uris = client_metadata.get("redirect_uris") or []
        if not uris or not all(isinstance(u, str) and allowed_redirect(u) for u in uris):
            raise InvalidRedirectURIError(
                "redirect_uris must be https, http to the loopback interface, or an app's "
                "own scheme (RFC 8252)"
            )
        method = client_metadata.get("token_endpoint_auth_method", "client_secret_basic")
        secret = client_info.get("client_secret")
        name = shown_name(str(client_metadata.get("client_name") or "")) or urlsplit(uris[0]).netloc
        client = Client(
            client_id=client_info["client_id"],
            name=name or client_info["client_id"],
            redirect_uris=tuple(uris),
            auth_method=method,
            secret_hash=hash_secret(secret) if secret else None,
            source="registered",
            created_at=self.server.now,
        )
        self.server.store.add_client(client)
        log_event(log, "oauth client registered", client_id=client.client_id, method=method)
        return client


class VigilAuthorizationServer(AuthorizationServer):  # type: ignore[misc]
    """One request's authorization server: built for the origin it came to."""

    def __init__(
        self, store: Store, keys: Any, documents: Documents, origin: str, now: datetime
    ) -> None:
        super().__init__(scopes_supported=list(scopes.SUPPORTED))
        self.store = store
        self.keys = keys
        self.documents = documents
        self.origin = origin
        self.now = now
        self.resource = resource_of(origin)
        self.metadata = metadata(origin)
        self.register_grant(_CodeGrant, [_S256(required=True)])
        self.register_grant(_RefreshGrant)
        self.register_endpoint(_Revocation)
        self.register_endpoint(_Registration)
        self.issuer = _Issuer(origin)
        self.register_extension(self.issuer)
        self._clients: dict[str, _Client | None] = {}

    # Each endpoint's answer, as Vigil's HTTP type
    def token(self, request: _Request) -> HttpResponse:
        return cast("HttpResponse", self.create_token_response(request))

    def revocation(self, request: _Request) -> HttpResponse:
        return cast("HttpResponse", self.create_endpoint_response("revocation", request))

    def registration(self, request: _JsonRequest) -> HttpResponse:
        answer = self.create_endpoint_response("client_registration", request)
        return cast("HttpResponse", answer)

    def answer(self, request: _Request, grant: Any, principal: Principal | None) -> HttpResponse:
        """The authorization's answer to the client: a code if ``principal`` allowed it,
        ``access_denied`` if nobody did."""
        answer = self.create_authorization_response(request, grant_user=principal, grant=grant)
        return cast("HttpResponse", answer)

    def refusal(self, request: _Request, error: OAuth2Error) -> HttpResponse:
        """An authorization refused, told to the client where it listens (with ``iss``)."""
        error.state = request.payload.state
        response = self.handle_error_response(request, error)
        self.issuer.add_issuer_parameter(self, response)
        return cast("HttpResponse", response)

    # Authlib's framework hooks
    def query_client(self, client_id: str) -> _Client | None:
        """The client ``client_id`` names; read once per request, however often Authlib asks
        (an authorization is validated twice when it is answered)."""
        if client_id not in self._clients:
            self._clients[client_id] = self._client(client_id)
        return self._clients[client_id]

    def _client(self, client_id: str) -> _Client | None:
        if is_document_url(client_id):
            try:
                return _Client(self.documents.client(client_id, self.now))
            except DocumentRefused as refused:
                log_event(log, "oauth client document refused", reason=str(refused))
                raise InvalidClientError(description=f"{client_id}: {refused}") from None
        client = self.store.get_client(client_id) if len(client_id) <= 200 else None
        return _Client(client) if client is not None else None

    def create_oauth2_request(self, request: Any) -> OAuth2Request:
        return request

    def create_json_request(self, request: Any) -> JsonRequest:
        return request

    def handle_response(self, status: int, body: Any, headers: Any) -> OAuthResponse:
        headers = {name.lower(): value for name, value in headers}
        if isinstance(body, dict):
            response = OAuthResponse.json(status, body, headers)
            return OAuthResponse(response.status, response.body, response.headers)
        return OAuthResponse(status, (body or "").encode(), headers)

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        """No framework listens."""

    def validate_requested_scope(self, scope: str | None) -> None:
        """Scopes this server does not know are left out of the grant, not refused: hosts ask
        for ``openid`` and ``offline_access`` out of habit."""

    def save_token(self, token: dict[str, Any], request: Any) -> None:
        if request.payload.grant_type == "authorization_code":
            self._create_grant(token, request)
        else:
            self._rotate(token, request)

    # The authorization endpoint's steps, which the console's consent page takes
    def keep_code(self, code: str, request: Any) -> None:
        principal: Principal = request.user
        held = scopes.fitting(scopes.parse(request.scope), principal.kind, principal.role)
        self.store.add_code(
            Code(
                code_hash=digest(code),
                client_id=request.client.client_id,
                redirect_uri=request.payload.redirect_uri or "",
                scopes=held,
                resource=self.resource,
                challenge=request.payload.data["code_challenge"],
                namespace=principal.namespace,
                principal_id=principal.id,
                expires_at=self.now + timedelta(seconds=CODE_SECONDS),
                grant_id=new_grant_id(),
            )
        )

    def check_resource(self, request: Any, redirect_uri: str) -> None:
        """RFC 8707: a client that names the resource it wants a token for must name this
        deployment's MCP endpoint."""
        named = request.payload.datalist.get("resource", [])
        if len(named) > 1 or (named and named[0].rstrip("/") != self.resource):
            raise _InvalidTarget(
                f"the only resource here is {self.resource}", redirect_uri=redirect_uri
            )

    # The token endpoint's steps
    def code_to_redeem(self, code: str, client: _Client) -> _Code | None:
        found = self.store.get_code(digest(code)) if len(code) <= 200 else None
        if found is None or found.client_id != client.client_id:
            return None
        if found.redeemed:
            # A code presented twice: whoever holds it, the grant it made is not to be trusted.
            grant = self.store.get_grant(found.namespace, found.grant_id)
            if grant is not None and grant.status == "active":
                self.end(grant, "code_replayed", None)
            return None
        if found.expires_at <= self.now:
            return None
        return _Code(found)

    def active_principal(self, namespace: str, principal_id: str) -> Principal | None:
        principal = self.store.get_principal(namespace, principal_id)
        return principal if principal is not None and principal.status == "active" else None

    def token_response(
        self, principal: Principal, grant_id: str, client: _Client, scope: str, generation: int
    ) -> dict[str, Any]:
        granted = frozenset(scopes.parse(scope))
        claims = access.AccessClaims(
            principal.namespace, principal.id, grant_id, client.client_id, granted
        )
        token = access.issue(
            self.keys, issuer=self.origin, resource=self.resource, claims=claims, now=self.now
        )
        return {
            "token_type": "Bearer",
            "access_token": token,
            "expires_in": ACCESS_TOKEN_SECONDS,
            "refresh_token": refresh_token(principal.namespace, grant_id, generation),
            "scope": " ".join(sorted(granted)),
        }

    def _create_grant(self, token: dict[str, Any], request: Any) -> None:
        code: Code = request.authorization_code.code
        requested = request.payload.datalist.get("resource", [])
        if requested and requested[0].rstrip("/") != code.resource:
            raise _InvalidTarget(f"the code was issued for {code.resource}")
        principal: Principal = request.user
        live = self._live_grants(principal)
        if len(live) >= MAX_GRANTS_PER_PRINCIPAL:
            raise InvalidGrantError(
                f"{principal.name} holds {MAX_GRANTS_PER_PRINCIPAL} grants already: revoke one "
                "on the console's Sign-ins page first"
            )
        client: _Client = request.client
        grant = Grant(
            namespace=code.namespace,
            id=code.grant_id,
            principal_id=principal.id,
            client_id=client.client_id,
            client_name=client.client.name,
            redirect_uri=code.redirect_uri or client.client.redirect_uris[0],
            scopes=code.scopes,
            resource=code.resource,
            status="active",
            created_at=self.now,
            used_at=self.now,
            refresh_generation=1,
            refresh_hash=digest(token["refresh_token"]),
            version=1,
        )
        holder = principal.changed(grants=(*live, grant.id))
        event = AuditEvent.of(
            principal.namespace, principal.id, "grant_access", "grant", grant.id, None, 1, self.now
        )
        try:
            self.store.commit(
                [
                    self.store.redeem_code(code),
                    self.store.add_grant(grant),
                    self.store.save_principal(holder),
                    self.store.add_audit_event(event),
                ]
            )
        except ConditionFailed:
            raise InvalidGrantError(
                "the code was redeemed already, or its holder changed"
            ) from None
        log_event(
            log,
            "oauth grant",
            namespace=grant.namespace,
            grant_id=grant.id,
            client=client.client_id,
        )

    def _live_grants(self, principal: Principal) -> tuple[str, ...]:
        """The principal's grants that are still live (an idle one has ended)."""
        if not principal.grants:
            return ()
        found = self.store.get_grants(principal.namespace, list(principal.grants))
        return tuple(g.id for g in found if g.status == "active" and not self._idle(g))

    def _idle(self, grant: Grant) -> bool:
        return grant.used_at + timedelta(days=GRANT_IDLE_DAYS) <= self.now

    def refreshable(self, token: str) -> _Credential | None:
        parsed = parse_refresh_token(token)
        if parsed is None:
            return None
        namespace, grant_id, generation = parsed
        grant = self.store.get_grant(namespace, grant_id)
        if grant is None or grant.status != "active" or self._idle(grant):
            return None
        if generation < grant.refresh_generation:
            self.end(grant, "refresh_token_reused", None)
            return None
        if generation != grant.refresh_generation or digest(token) != grant.refresh_hash:
            return None
        holder = self.active_principal(grant.namespace, grant.principal_id)
        if holder is None or grant.id not in holder.grants:
            return None  # its holder was revoked: invalid_grant, as for any dead grant
        return _Credential(grant, holder)

    def _rotate(self, token: dict[str, Any], request: Any) -> None:
        grant: Grant = request.refresh_token.grant
        try:
            self.store.commit(
                [self.store.save_grant(grant.refreshed(digest(token["refresh_token"]), self.now))]
            )
        except ConditionFailed:
            raise InvalidGrantError("the refresh token was used already") from None

    # Revocation
    def credential_of(self, token: str) -> _Credential | None:
        parsed = parse_refresh_token(token)
        if parsed is not None:
            grant = self.store.get_grant(parsed[0], parsed[1])
        else:
            claims = access.verify(self.keys, token, self.resource, self.now)
            grant = self.store.get_grant(claims.namespace, claims.grant_id) if claims else None
        return _Credential(grant) if grant is not None and grant.status == "active" else None

    def end(self, grant: Grant, ending: Ending, by: str | None) -> bool:
        """Ends ``grant`` (and so every token of it); whether this call ended it."""
        return end_grant(self.store, grant, ending, by, self.now)


class _InvalidTarget(OAuth2Error):  # type: ignore[misc]
    error = "invalid_target"  # RFC 8707


class _Issuer(IssuerParameter):  # type: ignore[misc]
    def __init__(self, origin: str) -> None:
        self.origin = origin

    def get_issuer(self) -> str:
        return self.origin


# A revocation that loses a race (a refresh or a sign-in moved the grant or its principal on)
# reads both again and goes again, this many times in all: a revocation is never dropped.
END_ATTEMPTS = 5


def end_grant(store: Store, grant: Grant, ending: Ending, by: str | None, now: datetime) -> bool:
    """Ends ``grant`` and takes it off its principal's live grants, in one transaction,
    audited; False if it had ended already. A change that raced it is read and gone past."""
    current: Grant | None = grant
    for _ in range(END_ATTEMPTS):
        if current is None or current.status != "active":
            return False
        ended = current.ended(ending, by, now)
        writes = [store.save_grant(ended)]
        principal = store.get_principal(current.namespace, current.principal_id)
        if principal is not None and current.id in principal.grants:
            rest = tuple(g for g in principal.grants if g != current.id)
            writes.append(store.save_principal(principal.changed(grants=rest)))
        event = AuditEvent.of(
            current.namespace,
            by,
            "revoke_grant",
            "grant",
            current.id,
            current.version,
            ended.version,
            now,
        )
        writes.append(store.add_audit_event(event))
        try:
            store.commit(writes)
        except ConditionFailed:
            current = store.get_grant(current.namespace, current.id)
            continue
        log_event(
            log,
            "oauth grant ended",
            namespace=current.namespace,
            grant_id=current.id,
            ending=ending,
        )
        return True
    raise contended("the sign-in kept changing while it was being revoked; retry")


def registration_allowed(store: Store, source_ip: str | None, now: datetime) -> bool:
    """Whether an address may register another client in this window."""
    counter = f"oauth-register#{source_ip or 'unknown'}"
    return store.count_sign_in_attempt(counter, AttemptWindow.at(now), REGISTRATIONS_PER_ADDRESS)


def form_pairs(body: bytes) -> list[tuple[str, str]] | None:
    """A url-encoded body's fields, in order, repeats kept; None if it is not text."""
    try:
        return pairs_of(body.decode())
    except UnicodeDecodeError:
        return None


def as_mapping(pairs: list[tuple[str, str]]) -> Mapping[str, str]:
    return {name: value for name, value in reversed(pairs)}


def oauth_request(request: HttpRequest, origin: str, pairs: list[tuple[str, str]]) -> _Request:
    return _Request(request, origin, pairs)


def json_request(request: HttpRequest, origin: str, data: dict[str, Any]) -> _JsonRequest:
    return _JsonRequest(request, origin, data)
