"""The authorization server's HTTP endpoints besides the consent page (vigil.console.pages.
authorize): its metadata, the token, revocation and registration endpoints. Each answers as
RFC 6749 has errors answered: JSON with ``error`` and ``error_description``, never cached."""

from __future__ import annotations

import json
from typing import Any

from vigil.clock import Clock
from vigil.kit.http import HttpRequest, HttpResponse, method_not_allowed
from vigil.kit.keys import Keys
from vigil.notifications.outbound import Fetched, get
from vigil.oauth import server as oauth
from vigil.oauth.documents import FETCH_SECONDS, MAX_DOCUMENT_BYTES, Documents, HostRule
from vigil.observability import get_logger, log_event
from vigil.store import Store

log = get_logger("vigil.oauth")

PATHS = (oauth.METADATA, oauth.TOKEN, oauth.REVOKE, oauth.REGISTER)
_NO_STORE = {"cache-control": "no-store", "pragma": "no-cache"}
_MAX_BODY = 16 * 1024


class OAuthEndpoints:
    """``allow_private``: documents may be fetched from private addresses (the local runtime,
    as its webhooks may be sent to them); ``hosts``: the operator's rule on documents' hosts."""

    def __init__(
        self,
        store: Store,
        keys: Keys,
        clock: Clock,
        *,
        allow_private: bool = False,
        hosts: HostRule | None = None,
    ) -> None:
        self.store = store
        self.keys = keys
        self.clock = clock

        def fetch(url: str) -> Fetched:
            return get(
                url,
                max_bytes=MAX_DOCUMENT_BYTES,
                timeout_seconds=FETCH_SECONDS,
                accept="application/json",
                allow_private=allow_private,
            )

        self.documents = Documents(fetch, hosts or HostRule())

    def server(self, request: HttpRequest) -> oauth.VigilAuthorizationServer:
        return oauth.VigilAuthorizationServer(
            self.store,
            self.keys,
            self.documents,
            request.origin() or "",
            self.clock.now(),
        )

    def handle(self, request: HttpRequest) -> HttpResponse:
        path = request.path.rstrip("/")
        if path == oauth.METADATA:
            if request.method not in ("GET", "HEAD"):
                return method_not_allowed(request, "GET", "HEAD")
            body = oauth.metadata(request.origin() or "")
            return HttpResponse.json(200, body, {"cache-control": "public, max-age=3600"})
        if request.method != "POST":
            return method_not_allowed(request, "POST")
        if len(request.body) > _MAX_BODY:
            return _error(413, "invalid_request", "the request body is too large")
        if path == oauth.REGISTER:
            return self._register(request)
        pairs = oauth.form_pairs(request.body)
        if pairs is None:
            return _error(400, "invalid_request", "the body is not a url-encoded form")
        server = self.server(request)
        prepared = oauth.oauth_request(request, server.origin, pairs)
        response = server.token(prepared) if path == oauth.TOKEN else server.revocation(prepared)
        response.headers.update(_NO_STORE)
        return response

    def _register(self, request: HttpRequest) -> HttpResponse:
        try:
            data: Any = json.loads(request.body)
        except (UnicodeDecodeError, ValueError, RecursionError):
            return _error(400, "invalid_client_metadata", "the body is not JSON")
        if not isinstance(data, dict):
            return _error(400, "invalid_client_metadata", "the body is not a JSON object")
        now = self.clock.now()
        if not oauth.registration_allowed(self.store, request.source_ip, now):
            log_event(log, "oauth registration throttled")
            response = _error(429, "slow_down", "too many registrations from this address")
            response.headers["retry-after"] = "900"
            return response
        server = self.server(request)
        response = server.registration(oauth.json_request(request, server.origin, data))
        response.headers.update(_NO_STORE)
        return response


def _error(status: int, error: str, description: str) -> HttpResponse:
    return HttpResponse.json(status, {"error": error, "error_description": description}, _NO_STORE)
