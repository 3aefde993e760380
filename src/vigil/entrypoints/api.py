"""The API function: API Gateway HTTP API (payload 2.0) events in, HTTP responses out.

Everything heavy is built on the first invocation and reused while the sandbox lives (and
captured by SnapStart when it is on), never at import of the package by tests or tools.
"""

from __future__ import annotations

import base64
import functools
from typing import Any

from vigil.errors import HTTP_STATUS, unavailable
from vigil.observability import correlation_id, get_logger
from vigil.transports.http import HttpRequest, HttpResponse
from vigil.transports.router import Router

log = get_logger("vigil.api")


@functools.cache
def router() -> Router:
    from vigil.app import App
    from vigil.quotas.records import Quotas
    from vigil.wiring import alarms, blobs, clock, queues, settings, store

    app = App(
        store(),
        clock(),
        queues=queues(),
        alarms=alarms(),
        blobs=blobs(),
        quotas=Quotas.from_env(),
    )
    return Router(app, settings().allowed_origins)


def request_from_event(event: dict[str, Any]) -> HttpRequest:
    http = event["requestContext"]["http"]
    body = event.get("body") or ""
    raw = base64.b64decode(body) if event.get("isBase64Encoded") else body.encode()
    return HttpRequest(
        method=http["method"].upper(),
        path=event.get("rawPath") or http.get("path", "/"),
        headers={k.lower(): v for k, v in (event.get("headers") or {}).items()},
        body=raw,
        request_id=event["requestContext"].get("requestId"),
    )


def event_from_response(response: HttpResponse, request_id: str | None) -> dict[str, Any]:
    return {
        "statusCode": response.status,
        "headers": {**response.headers, "x-correlation-id": request_id or ""},
        "body": response.body.decode(),
        "isBase64Encoded": False,
    }


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    request = request_from_event(event)
    token = correlation_id.set(request.headers.get("x-correlation-id") or request.request_id)
    try:
        response = router().handle(request)
    except Exception:
        log.exception("request failed")
        error = unavailable()
        response = HttpResponse.json(HTTP_STATUS[error.code], {"error": error.to_dict()})
    finally:
        correlation_id.reset(token)
    return event_from_response(response, request.request_id)
