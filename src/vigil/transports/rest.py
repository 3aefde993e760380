"""REST: ``POST /v1/<tool>`` with the tool's arguments as the JSON body."""

from __future__ import annotations

import json

from vigil.app import App
from vigil.catalog import UnknownTool
from vigil.errors import HTTP_STATUS, VigilError, invalid, not_found
from vigil.transports.http import HttpRequest, HttpResponse

PREFIX = "/v1/"


def _failure(error: VigilError) -> HttpResponse:
    return HttpResponse.json(HTTP_STATUS[error.code], {"error": error.to_dict()})


def handle_rest(app: App, request: HttpRequest) -> HttpResponse:
    name = request.path[len(PREFIX) :]
    if request.method != "POST":
        return HttpResponse(405, b"", {"allow": "POST"})
    try:
        try:
            arguments = json.loads(request.body) if request.body.strip() else {}
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise invalid("the body is not valid JSON") from None
        payload = app.call(name, arguments, request.bearer())
    except UnknownTool:
        return _failure(not_found(f"tool {name!r}"))
    except VigilError as error:
        return _failure(error)
    return HttpResponse.json(200, payload)
