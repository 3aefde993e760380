"""REST: ``POST /v1/<tool>`` with the tool's arguments as the JSON body."""

from __future__ import annotations

from vigil.app import App
from vigil.catalog import UnknownTool
from vigil.errors import ErrorCode, VigilError, not_found
from vigil.kit.http import (
    HttpRequest,
    HttpResponse,
    challenge,
    failure,
    json_body,
    method_not_allowed,
    too_large,
)
from vigil.kit.principals import CLI_AGENT, Surface

PREFIX = "/v1/"


def _failure(request: HttpRequest, error: VigilError) -> HttpResponse:
    if error.code is ErrorCode.UNAUTHENTICATED:
        # RFC 6750's challenge, naming where the protected resource's metadata is (RFC 9728).
        return failure(error, challenge(request))
    return failure(error)


def handle_rest(app: App, request: HttpRequest) -> HttpResponse:
    name = request.path[len(PREFIX) :]
    if request.method != "POST":
        return method_not_allowed(request, "POST")
    refused = too_large(request)
    if refused is not None:
        return refused
    try:
        arguments = json_body(request.body) if request.body.strip() else {}
        via: Surface = (
            "cli" if request.headers.get("user-agent", "").startswith(CLI_AGENT) else "rest"
        )
        payload = app.call(name, arguments, request.bearer(), via=via)
    except UnknownTool:
        return _failure(request, not_found(f"tool {name!r}"))
    except VigilError as error:
        return _failure(request, error)
    return HttpResponse.json(200, payload)
