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
from urllib.parse import parse_qsl

from pydantic import BaseModel

from vigil import catalog
from vigil.errors import HTTP_STATUS, unavailable
from vigil.kit.http import HttpRequest, HttpResponse
from vigil.observability import correlation_id, get_logger, metrics
from vigil.transports.router import Router

log = get_logger("vigil.api")


# Lambda's initialization types whose init phase runs before any request waits on it: with
# SnapStart, sandboxes are restored from a snapshot taken after init; with provisioned
# concurrency, they are initialized ahead of traffic.
AHEAD_OF_REQUESTS = frozenset({"snap-start", "provisioned-concurrency"})


def _ahead_of_requests() -> bool:
    return os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") in AHEAD_OF_REQUESTS


@functools.cache
def router() -> Router:
    """The router and what it runs on. Every call reads the table, so the DynamoDB client is
    built here; SQS's, the Scheduler's and S3's are too where init runs ahead of requests, and
    otherwise on their first use, since a cold start would pay for them whether or not its
    first call needs them."""
    from vigil.app import App
    from vigil.oauth.external import ExternalIssuer, fetcher
    from vigil.wiring import (
        OnFirstUse,
        alarms,
        aws_client,
        blobs,
        clock,
        dead_letters,
        keys,
        queues,
        quotas,
        sender,
        settings,
        store,
    )

    config = settings()
    connect = aws_client if _ahead_of_requests() else OnFirstUse
    service_keys = keys()
    app = App(
        store(),
        clock(),
        queues=queues(connect),
        alarms=alarms(connect),
        blobs=blobs(connect),
        quotas=quotas(),
        keys=service_keys,
        sender=sender(service_keys, connect),
        external=ExternalIssuer.configured(
            config.oauth_issuer,
            config.oauth_audience,
            config.oauth_claim_rule,
            fetcher(allow_private=config.local),
        ),
    )
    # The console's dead-letter queues: built, with the kinds of timer they route, when an
    # operator first opens their page.
    from vigil.oauth.documents import HostRule

    return Router(
        app,
        config.allowed_origins,
        functools.cache(functools.partial(dead_letters, connect)),
        HostRule.parse(config.oauth_client_hosts, config.oauth_blocked_client_hosts),
    )


def init() -> None:
    """Builds the router, so that no request builds it. Where init runs ahead of requests, it
    also imports every tool and builds every model's validator; an on-demand init leaves them
    to their first use, since its cold start would pay for them whether or not it serves such
    a call."""
    router()
    if _ahead_of_requests():
        catalog.tools()
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
        query=dict(parse_qsl(event.get("rawQueryString") or "", keep_blank_values=True)),
        cookies=_cookies(event.get("cookies") or []),
        source_ip=http.get("sourceIp"),
    )


def _cookies(pairs: list[str]) -> dict[str, str]:
    """Payload 2.0 passes the Cookie header as its pairs; the first of a repeated name wins, as
    browsers send the most specific cookie first."""
    cookies: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if sep:
            cookies.setdefault(name.strip(), value.strip())
    return cookies


def event_from_response(response: HttpResponse, request_id: str | None) -> dict[str, Any]:
    event: dict[str, Any] = {
        "statusCode": response.status,
        "headers": {**response.headers, "x-correlation-id": request_id or ""},
        "body": response.body.decode(),
        "isBase64Encoded": False,
    }
    if response.cookies:
        event["cookies"] = response.cookies
    return event


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    metrics.cold_start("api")
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
