"""Routes one HTTP request to the MCP endpoint, the REST mirror, the OpenAPI document and its
page, the console, or Slack's interactions."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from vigil.app import App
from vigil.errors import forbidden, not_found
from vigil.kit.http import (
    PROTECTED_RESOURCE_METADATA,
    HttpRequest,
    HttpResponse,
    failure,
    method_not_allowed,
)
from vigil.transports.jsonrpc import TOOLSETS_HEADER
from vigil.transports.mcp import McpEndpoint
from vigil.transports.openapi import openapi_document
from vigil.transports.rest import PREFIX, handle_rest

if TYPE_CHECKING:
    from vigil.alarms.redrive import DeadLetters
    from vigil.console.routes import Console
    from vigil.oauth.documents import HostRule
    from vigil.oauth.endpoints import OAuthEndpoints
    from vigil.transports.docs import ApiDocs
    from vigil.transports.slack_interactions import SlackInteractions

CONSOLE = "/console"
# The authorization server's own paths (vigil.oauth.endpoints.PATHS; its consent page is the
# console's).
OAUTH_PATHS = (
    "/.well-known/oauth-authorization-server",
    "/oauth/token",
    "/oauth/revoke",
    "/oauth/register",
)
DOCS = "/docs"
SLACK = "/integrations/slack/"

_CORS_HEADERS = {
    "access-control-allow-methods": "POST, OPTIONS",
    "access-control-allow-headers": (
        "authorization, content-type, accept, mcp-protocol-version, mcp-method, mcp-name, "
        f"{TOOLSETS_HEADER}"
    ),
    "access-control-max-age": "600",
    "vary": "origin",
}


def _no_dead_letters() -> DeadLetters | None:
    return None


class Router:
    """``dead_letters`` gives the stack's dead-letter queues of timers, for the console's
    operators, when the console first asks for them; where it gives none, the console says
    so."""

    def __init__(
        self,
        app: App,
        allowed_origins: frozenset[str],
        dead_letters: Callable[[], DeadLetters | None] = _no_dead_letters,
        client_hosts: HostRule | None = None,
    ) -> None:
        self.app = app
        self.client_hosts = client_hosts
        self.allowed_origins = allowed_origins
        self.dead_letters = dead_letters
        self.mcp = McpEndpoint(app)
        self._openapi: HttpResponse | None = None
        self._console: Console | None = None
        self._docs: ApiDocs | None = None
        self._slack: SlackInteractions | None = None
        self._oauth: OAuthEndpoints | None = None

    def oauth(self) -> OAuthEndpoints:
        """The authorization server, built on its first request: no other path imports
        Authlib."""
        if self._oauth is None:
            from vigil.oauth.endpoints import OAuthEndpoints

            app = self.app
            self._oauth = OAuthEndpoints(
                app.store,
                app.keys,
                app.clock,
                allow_private=app.sender.allow_private,
                hosts=self.client_hosts,
            )
        return self._oauth

    def console(self) -> Console:
        """The console, built on its first request: the MCP and REST paths never import it."""
        if self._console is None:
            from vigil.console.routes import Console

            self._console = Console(self.app, self.dead_letters, self.oauth)
        return self._console

    def docs(self) -> ApiDocs:
        """The API page, built on its first request: no other path reads Swagger UI's files."""
        if self._docs is None:
            from vigil.transports.docs import ApiDocs

            self._docs = ApiDocs()
        return self._docs

    def slack(self) -> SlackInteractions:
        """Slack's interactions, built on their first request."""
        if self._slack is None:
            from vigil.transports.slack_interactions import SlackInteractions

            self._slack = SlackInteractions(self.app)
        return self._slack

    def handle(self, request: HttpRequest) -> HttpResponse:
        if request.path == CONSOLE or request.path.startswith(f"{CONSOLE}/"):
            # The console's pages are its own origin's: it checks the origin of every form
            # itself, and answers no other origin's scripts.
            return self.console().handle(request)
        origin = request.headers.get("origin")
        if origin is not None and origin not in self.allowed_origins:
            # Browsers may call only from the origins the deployment names (DNS rebinding and
            # cross-site requests); clients that are not browsers send no Origin at all.
            return failure(forbidden("origin not allowed"))
        if request.method == "OPTIONS":
            return HttpResponse(
                204, b"", {**_CORS_HEADERS, "access-control-allow-origin": origin or ""}
            )
        response = self._route(request)
        if origin is not None:
            response.headers = {
                **response.headers,
                "access-control-allow-origin": origin,
                # A 401's challenge says where to sign in: a browser host must be let to read it.
                "access-control-expose-headers": "www-authenticate",
                "vary": "origin",
            }
        return response

    def _route(self, request: HttpRequest) -> HttpResponse:
        path = request.path.rstrip("/") or "/"
        if path == "/mcp":
            return self.mcp.handle(request)
        if path.startswith(PREFIX):
            return handle_rest(self.app, request)
        if path.startswith(SLACK):
            return self.slack().handle(request)
        if path in OAUTH_PATHS:
            return self.oauth().handle(request)
        if path == DOCS or path.startswith(f"{DOCS}/"):
            return self.docs().handle(request)
        read_only = {
            "/": self._index,
            "/openapi.json": self._openapi_document,
            PROTECTED_RESOURCE_METADATA: self._protected_resource,
            f"{PROTECTED_RESOURCE_METADATA}/mcp": self._protected_resource,
        }
        page = read_only.get(path)
        if page is None:
            return failure(not_found(f"route {path}"))
        if request.method not in ("GET", "HEAD"):
            return method_not_allowed(request, "GET", "HEAD")
        return page(request)

    def _openapi_document(self, request: HttpRequest) -> HttpResponse:
        if self._openapi is None:
            self._openapi = HttpResponse.json(200, openapi_document())
        return self._openapi

    def _index(self, request: HttpRequest) -> HttpResponse:
        """What this address serves, for a person or a client that starts at the root."""
        base = request.origin() or ""
        return HttpResponse.json(
            200,
            {
                "name": "Vigil",
                "description": "Liveness, human-in-the-loop and reliable messaging for agents.",
                "endpoints": {
                    "mcp": f"{base}/mcp",
                    "rest": f"{base}{PREFIX}{{tool}}",
                    "openapi": f"{base}/openapi.json",
                    "docs": f"{base}{DOCS}",
                    "console": f"{base}{CONSOLE}",
                    "protected_resource_metadata": f"{base}{PROTECTED_RESOURCE_METADATA}",
                },
                "authentication": (
                    "Authorization: Bearer <secret> (issued by register), or an OAuth access "
                    "token for the MCP endpoint"
                ),
                "authorization_server": f"{base}/.well-known/oauth-authorization-server",
            },
        )

    def _protected_resource(self, request: HttpRequest) -> HttpResponse:
        """RFC 9728 metadata, as the MCP authorization spec has a client look for it: the
        resource takes, in the Authorization header, access tokens of this deployment's own
        authorization server, or secrets (which an operator issues, with register)."""
        from vigil.oauth.scopes import SUPPORTED

        base = request.origin() or ""
        external = self.app.external
        return HttpResponse.json(
            200,
            {
                "resource": f"{base}/mcp",
                # The operator's identity provider where one is named, else Vigil's own.
                "authorization_servers": [external.issuer if external else base],
                "scopes_supported": list(SUPPORTED),
                "bearer_methods_supported": ["header"],
                "resource_name": "Vigil",
                "resource_documentation": f"{base}/openapi.json",
            },
        )
