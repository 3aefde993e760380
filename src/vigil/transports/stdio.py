"""MCP over stdio for hosts that launch servers as processes.

A faithful bridge rather than a second server: each JSON-RPC line read from stdin is POSTed to
the configured endpoint (local or deployed) with the process credential, and the reply is
written back as one line. Protocol behaviour therefore lives in one place, the HTTP endpoint;
the bridge adds only what the HTTP transport asks of a client, such as the headers that name a
task (the Tasks extension's methods pass through it like any other), and what only a client
sees: a door in front of the endpoint (API Gateway, a function URL, a proxy) that answers 429 or
5xx in words of its own, or no answer at all, becomes a typed, retryable JSON-RPC error.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import re
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from http import HTTPStatus
from typing import IO, Any

from vigil.clock import Clock, SystemClock
from vigil.errors import ErrorCode, VigilError
from vigil.kit.retry_after import retry_after_seconds
from vigil.transports.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    TOOLSETS_HEADER,
    refusal,
)
from vigil.transports.tasks import METHODS

_PROTOCOL_HEADER = "mcp-protocol-version"
# What a header value may hold as it is: visible ASCII and inner spaces (RFC 9110).
_HEADER_SAFE = re.compile(r"[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?")
# Server errors that the same request, sent again, would meet again: the server or a proxy does
# not do what it asks (501), not in this HTTP version (505), or the network wants a sign-in
# first (511).
_FOR_GOOD = frozenset({501, 505, 511})


@dataclass(frozen=True)
class Problem:
    """Why the bridge cannot serve, in one line, and the exit status that says so (the
    people's commands use the same: 3 unreachable, 4 credential refused)."""

    exit_code: int
    message: str


# The member of a method's params that a request names as Mcp-Name.
_NAMED_BY = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    **dict.fromkeys(METHODS, "taskId"),
}


def _routing_headers(message: object) -> dict[str, str]:
    """The headers a message carries over HTTP in the 2026-07-28 revision: its method as
    Mcp-Method and, for a method that names a tool, prompt, resource or task, that name as
    Mcp-Name (base64-wrapped when it is not header-safe), so that whatever routes HTTP can
    route it without reading the body; none for a response."""
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return {}
    method, params = message["method"], message.get("params")
    if not _HEADER_SAFE.fullmatch(method):
        # No method of MCP's is: a line break or a character outside Latin-1 cannot go in a
        # header at all, so the request is answered here (forward), never sent.
        raise _NoSuchMethod(method)
    member = _NAMED_BY.get(method)
    name = params.get(member) if member is not None and isinstance(params, dict) else None
    if not isinstance(name, str):
        return {"mcp-method": method}
    if not _HEADER_SAFE.fullmatch(name):
        name = f"=?base64?{base64.b64encode(name.encode()).decode()}?="
    return {"mcp-method": method, "mcp-name": name}


class _NoSuchMethod(Exception):
    """A method no header can carry, and no server of MCP's has."""


def _is_response(body: bytes) -> bool:
    """Whether ``body`` is a JSON-RPC response, as Vigil's endpoint answers even at 5xx."""
    try:
        answer = json.loads(body)
    except ValueError:
        return False
    return (
        isinstance(answer, dict)
        and answer.get("jsonrpc") == "2.0"
        and ("result" in answer or "error" in answer)
    )


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase.lower()
    except ValueError:  # a status of the door's own, such as Cloudflare's 52x
        return "server error"


def _door_refused(status: int, wait: int | None) -> VigilError:
    """A 429 or 5xx that is not Vigil's own JSON-RPC answer but a gateway's, a function URL's or
    a proxy's, typed as Vigil types its own: throttled or unavailable, with the HTTP status and
    the wait its Retry-After asked for, if any."""
    details: dict[str, Any] = {"http_status": status}
    if wait is not None:
        details["retry_after_seconds"] = wait
    said = f"the endpoint answered HTTP {status} ({_phrase(status)})"
    if status in _FOR_GOOD:
        return VigilError(ErrorCode.UNAVAILABLE, said, retryable=False, **details)
    text = f"{said}; " + ("retry later" if wait is None else f"retry in {wait} s")
    code = ErrorCode.THROTTLED if status == 429 else ErrorCode.UNAVAILABLE
    return VigilError(code, text, **details)


def _answer(message: object, refused: VigilError) -> str | None:
    """The JSON-RPC error a request is answered with; None for a notification, which is never
    answered."""
    if not isinstance(message, dict) or "id" not in message:
        return None
    return json.dumps(refusal(message["id"], INTERNAL_ERROR, refused))


class StdioBridge:
    def __init__(
        self,
        endpoint: str,
        secret: str | None,
        timeout: float = 60.0,
        toolsets: str | None = None,
        clock: Clock | None = None,
    ) -> None:
        if not endpoint.startswith(("http://", "https://")):
            raise ValueError("the endpoint must be an http(s) URL")
        self.endpoint = endpoint
        self.secret = secret
        # Sent with every request, as a host over HTTP would: the endpoint reads it each time.
        self.toolsets = toolsets
        self.timeout = timeout
        # What a Retry-After that names a date is counted from.
        self.clock = clock or SystemClock()
        self.protocol_version: str | None = None

    def check(self) -> Problem | None:
        """One request before serving, so that a host sees a wrong endpoint or secret at once,
        as a line on stderr and an exit status, rather than as every later call failing: with
        a secret, whoami (which needs a valid one); without, ping."""
        if self.secret:
            call = {"method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
        else:
            call = {"method": "ping"}
        line = json.dumps({"jsonrpc": "2.0", "id": "vigil-check", **call})
        reply = self.forward(line)
        try:
            message = json.loads(reply or "")
        except ValueError:
            return Problem(
                3, f"{self.endpoint} is not a Vigil MCP endpoint: its answer is not JSON"
            )
        if not isinstance(message, dict):
            return Problem(3, f"{self.endpoint} is not a Vigil MCP endpoint")
        error = message.get("error")
        if isinstance(error, dict):
            refusal = error.get("data")
            if isinstance(refusal, dict) and refusal.get("code") == "unauthenticated":
                return Problem(4, f"{self.endpoint} refused the secret (unauthenticated)")
            # The check's own parameters are valid: only the bridge's toolsets can be refused.
            status = 2 if error.get("code") == INVALID_PARAMS else 3
            return Problem(status, f"{self.endpoint}: {error.get('message', 'refused')}")
        result = message.get("result")
        if isinstance(result, dict) and result.get("isError"):
            return Problem(1, f"{self.endpoint} refused the check call")
        return None

    def forward(self, line: str) -> str | None:
        """Sends one message; returns the reply line, or None for a notification."""
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        }
        if self.secret:
            headers["authorization"] = f"Bearer {self.secret}"
        if self.protocol_version:
            headers[_PROTOCOL_HEADER] = self.protocol_version
        if self.toolsets is not None:
            headers[TOOLSETS_HEADER] = self.toolsets
        try:
            headers.update(_routing_headers(message))
        except _NoSuchMethod:
            if not isinstance(message, dict) or "id" not in message:
                return None
            error = {"code": METHOD_NOT_FOUND, "message": "method not found"}
            return json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error})
        request = urllib.request.Request(  # noqa: S310 - scheme checked in __init__
            self.endpoint, data=line.encode(), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                body = bytes(response.read())
        except urllib.error.HTTPError as error:
            try:
                body = bytes(error.read())
            except (OSError, http.client.HTTPException):
                body = b""
            if error.code == 401:
                return self._unauthorized(message, body)
            if (error.code == 429 or error.code >= 500) and not _is_response(body):
                wait = retry_after_seconds(error.headers.get("retry-after"), self.clock.now())
                return _answer(message, _door_refused(error.code, wait))
        except (OSError, http.client.HTTPException) as error:
            # URLError and timeouts are OSErrors; a connection dropped before or while the
            # answer is read is an OSError or an HTTPException, and none ends the bridge.
            return _answer(message, self._unreachable(error))
        if not body:
            return None
        reply = body.decode()
        self._remember_version(message, reply)
        return reply.strip()

    def _remember_version(self, message: object, reply: str) -> None:
        if isinstance(message, dict) and message.get("method") == "initialize":
            with contextlib.suppress(ValueError, KeyError, TypeError):
                self.protocol_version = json.loads(reply)["result"]["protocolVersion"]

    def _unauthorized(self, message: object, body: bytes) -> str | None:
        """The endpoint's 401, in words the person at the host can act on: the bridge holds
        the credential, so no sign-in the host might start could help."""
        if not isinstance(message, dict) or "id" not in message:
            return None
        cause = "refused the secret" if self.secret else "needs a secret: set VIGIL_SECRET"
        error: dict[str, Any] = {
            "code": INVALID_REQUEST,
            "message": f"{self.endpoint} {cause} (HTTP 401)",
        }
        with contextlib.suppress(ValueError, KeyError, TypeError):
            error["data"] = json.loads(body)["error"]["data"]
        return json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error})

    def _unreachable(self, error: Exception) -> VigilError:
        """No answer at all (refused, reset, unresolvable, timed out): unavailable, retryable.
        The endpoint's URL is not repeated: the host launched the bridge with it."""
        reason = error.reason if isinstance(error, urllib.error.URLError) else error
        if isinstance(reason, TimeoutError):
            text = f"the endpoint gave no answer within {self.timeout:g} s; retry later"
        else:
            cause = getattr(reason, "strerror", None) or str(reason) or type(reason).__name__
            text = f"the endpoint is unreachable ({cause}); retry later"
        return VigilError(ErrorCode.UNAVAILABLE, text)

    def serve(self, stdin: IO[str] = sys.stdin, stdout: IO[str] = sys.stdout) -> None:
        """Until stdin ends, the host closes the pipe or the process is interrupted."""
        with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):
            for line in stdin:
                if not line.strip():
                    continue
                reply = self.forward(line)
                if reply is not None:
                    stdout.write(reply + "\n")
                    stdout.flush()
