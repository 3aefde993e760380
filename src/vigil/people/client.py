"""The REST mirror's client for the people's commands: ``POST <base>/v1/<tool>`` with the tool's
arguments as JSON and the secret as a bearer token, typed refusals, and the exit code each
failure ends a command with.

Only the standard library: the people's commands start quickly and pull nothing into Vigil's
dependencies but rich, for their tables.
"""

from __future__ import annotations

import http.client
import json
import random
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from vigil import __version__
from vigil.kit.principals import CLI_AGENT

TIMEOUT_SECONDS = 15.0
# A call refused as retryable (throttled, unavailable, a contended version) is made again, with
# the same arguments (the same idempotency key, so a retry never does the work twice), this
# many times in all, after jittered exponential waits.
ATTEMPTS = 4
FIRST_WAIT_SECONDS = 0.5


class Exit(IntEnum):
    """The exit codes scripts can rely on (``vigil --help`` and the README list them)."""

    OK = 0
    REFUSED = 1  # the service refused the call with a typed error (or the prompt was declined)
    USAGE = 2  # argparse's own, and the other mistakes in how a command was called
    UNREACHABLE = 3  # no answer from the endpoint, or no endpoint and secret to use
    UNAUTHORIZED = 4  # the service said unauthenticated or forbidden


class Failure(Exception):
    """What ends a command: ``message`` for stderr, never holding a secret, and its exit code."""

    def __init__(self, exit_code: Exit, message: str) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.message = message


class Refused(Failure):
    """The service's typed error, ``{"error": {"code", "message", ...}}``."""

    def __init__(self, error: dict[str, Any]) -> None:
        self.code = str(error.get("code", "unavailable"))
        self.details: dict[str, Any] = error.get("details") or {}
        self.retryable = bool(error.get("retryable", False))
        exit_code = (
            Exit.UNAUTHORIZED if self.code in ("unauthenticated", "forbidden") else Exit.REFUSED
        )
        super().__init__(exit_code, f"{self.code}: {error.get('message', '')}")


class Unreachable(Failure):
    def __init__(self, message: str) -> None:
        super().__init__(Exit.UNREACHABLE, message)


@dataclass(frozen=True)
class Endpoint:
    """Where the commands call, and with which secret (kept out of the repr)."""

    base: str  # the REST base, without /v1: http://127.0.0.1:8080
    secret: str = field(repr=False)
    source: str  # what chose it, for messages: "profile work", "VIGIL_ENDPOINT", ...


def rest_base(url: str) -> str:
    """The REST base of ``url``: the base itself, the REST base with its ``/v1`` (the stack's
    RestBaseUrl) or the MCP URL ending in ``/mcp`` (what ``vigil mcp`` takes)."""
    base = url.strip().rstrip("/")
    for suffix in ("/mcp", "/v1"):
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base


def next_cursor(page: dict[str, Any]) -> str | None:
    """A listing page's cursor to the next page: ``next_cursor``, or ``nextCursor`` in the
    session tools' camelCase; None at the end."""
    cursor = page.get("next_cursor", page.get("nextCursor"))
    return cursor if isinstance(cursor, str) else None


def is_http_url(url: str) -> bool:
    scheme, _, rest = url.partition("://")
    return scheme in ("http", "https") and bool(rest) and not rest.startswith("/")


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is answered as it came: following one would send the secret elsewhere."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class RestClient:
    def __init__(
        self,
        endpoint: Endpoint,
        *,
        timeout: float = TIMEOUT_SECONDS,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self._sleep = sleep
        self._jitter = jitter
        self._opener = urllib.request.build_opener(_NoRedirects)

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """The tool's result; a typed refusal raises ``Refused`` once retries are spent."""
        wait = FIRST_WAIT_SECONDS
        for attempt in range(1, ATTEMPTS + 1):
            try:
                return self.once(tool, arguments or {})
            except Refused as refused:
                if not refused.retryable or attempt == ATTEMPTS:
                    raise
            self._sleep(wait * (0.5 + self._jitter()))
            wait *= 2
        raise AssertionError("unreachable: the last attempt returns or raises")

    def pages(
        self, tool: str, arguments: dict[str, Any], *, max_pages: int | None = None
    ) -> Iterator[dict[str, Any]]:
        """Each page of a listing, following ``next_cursor`` (``nextCursor`` in the session
        tools' camelCase) from ``arguments``' own cursor until it is null (or ``max_pages``
        pages were read)."""
        query = dict(arguments)
        read = 0
        while True:
            page = self.call(tool, query)
            yield page
            read += 1
            cursor = next_cursor(page)
            if cursor is None or (max_pages is not None and read >= max_pages):
                return
            query["cursor"] = cursor

    def once(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """One call, no retry: the result, or ``Refused`` or ``Unreachable``."""
        base = self.endpoint.base
        request = urllib.request.Request(  # noqa: S310 - the scheme was checked: http(s) only
            f"{base}/v1/{tool}",
            data=json.dumps(arguments).encode(),
            method="POST",
            headers={
                "Authorization": f"Bearer {self.endpoint.secret}",
                "User-Agent": f"{CLI_AGENT}{__version__}",
                "Content-Type": "application/json",
                "Accept": "application/json",
            },
        )
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                status, body = response.status, response.read()
        except urllib.error.HTTPError as answered:
            status, body = answered.code, answered.read()
        except urllib.error.URLError as failed:
            raise Unreachable(f"cannot reach {base}: {failed.reason}") from None
        except TimeoutError:
            raise Unreachable(f"no answer from {base} within {self.timeout:g} s") from None
        except (OSError, http.client.HTTPException) as failed:
            raise Unreachable(f"cannot reach {base}: {type(failed).__name__}") from None
        return _outcome(base, status, body)


def _outcome(base: str, status: int, body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body) if body.strip() else None
    except (UnicodeDecodeError, ValueError):
        payload = None
    if status == 200 and isinstance(payload, dict):
        return payload
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict) and "code" in error:
        raise Refused(error)
    # Not Vigil's own answer: a gateway's or a proxy's, or not Vigil at all.
    if status == 429:
        raise Refused({"code": "throttled", "message": "too many requests", "retryable": True})
    if status in (401, 403):
        code = "unauthenticated" if status == 401 else "forbidden"
        raise Refused({"code": code, "message": f"the endpoint answered HTTP {status}"})
    if 300 <= status < 400:
        raise Unreachable(
            f"{base} answered HTTP {status}, a redirect: it is not followed, so that the secret "
            "goes only where you said; use the URL it points to"
        )
    raise Unreachable(f"{base} answered HTTP {status}, not as Vigil's REST mirror does")
