"""Routes one HTTP request to the MCP endpoint, the REST mirror or the OpenAPI document."""

from __future__ import annotations

from vigil.app import App
from vigil.errors import HTTP_STATUS, not_found
from vigil.transports.http import HttpRequest, HttpResponse
from vigil.transports.mcp import McpEndpoint
from vigil.transports.openapi import openapi_document
from vigil.transports.rest import PREFIX, handle_rest


class Router:
    def __init__(self, app: App, allowed_origins: frozenset[str]) -> None:
        self.app = app
        self.mcp = McpEndpoint(app, allowed_origins)
        self._openapi: HttpResponse | None = None

    def handle(self, request: HttpRequest) -> HttpResponse:
        path = request.path.rstrip("/") or "/"
        if path == "/mcp":
            return self.mcp.handle(request)
        if path.startswith(PREFIX):
            return handle_rest(self.app, request)
        if path == "/openapi.json":
            if request.method != "GET":
                return HttpResponse(405, b"", {"allow": "GET"})
            if self._openapi is None:
                self._openapi = HttpResponse.json(200, openapi_document())
            return self._openapi
        error = not_found("route")
        return HttpResponse.json(HTTP_STATUS[error.code], {"error": error.to_dict()})
