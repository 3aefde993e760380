"""The API function: API Gateway HTTP API (payload 2.0) events in, HTTP responses out.

What the calls run on is built by ``init``, in the function's init phase (its entry point,
``functions/api/app.py``, calls it at import), and reused while the sandbox lives. Tests and
the local runtime import this module without building anything; they build on the first call.
"""

from __future__ import annotations

import base64
import functools
import os
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

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


# Lambda's initialization types whose init phase runs before any request waits on it: with
# SnapStart, sandboxes are restored from a snapshot taken after init; with provisioned
# concurrency, they are initialized ahead of traffic.
AHEAD_OF_REQUESTS = frozenset({"snap-start", "provisioned-concurrency"})


def init() -> None:
    """Builds what every call runs on, the router and its AWS clients, so that no request
    builds them. When init runs ahead of requests, it also builds what only some calls use:
    the S3 client and every model's validator. An on-demand init leaves them to their first
    use, since its cold start would pay for them whether or not it serves such a call."""
    from vigil.wiring import s3

    router()
    if os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") in AHEAD_OF_REQUESTS:
        s3()
        for model in _models(BaseModel):
            if model.__module__.startswith("vigil."):
                model.model_rebuild()


def _models(base: type[BaseModel]) -> Iterator[type[BaseModel]]:
    for model in base.__subclasses__():
        yield model
        yield from _models(model)


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
