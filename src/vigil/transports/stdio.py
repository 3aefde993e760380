"""MCP over stdio for hosts that launch servers as processes.

A faithful bridge rather than a second server: each JSON-RPC line read from stdin is POSTed to
the configured endpoint (local or deployed) with the process credential, and the reply is
written back as one line. Protocol behaviour therefore lives in one place, the HTTP endpoint;
the bridge adds only what the HTTP transport asks of a client, such as the headers that name a
task (the Tasks extension's methods pass through it like any other).
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import IO, Any

from vigil.transports.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    TOOLSETS_HEADER,
)
from vigil.transports.tasks import METHODS

_PROTOCOL_HEADER = "mcp-protocol-version"
# What a header value may hold as it is: visible ASCII and inner spaces (RFC 9110).
_HEADER_SAFE = re.compile(r"[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?")


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
    member = _NAMED_BY.get(method)
    name = params.get(member) if member is not None and isinstance(params, dict) else None
    if not isinstance(name, str):
        return {"mcp-method": method}
    if not _HEADER_SAFE.fullmatch(name):
        name = f"=?base64?{base64.b64encode(name.encode()).decode()}?="
    return {"mcp-method": method, "mcp-name": name}


class StdioBridge:
    def __init__(
        self,
        endpoint: str,
        secret: str | None,
        timeout: float = 60.0,
        toolsets: str | None = None,
    ) -> None:
        if not endpoint.startswith(("http://", "https://")):
            raise ValueError("the endpoint must be an http(s) URL")
        self.endpoint = endpoint
        self.secret = secret
        # Sent with every request, as a host over HTTP would: the endpoint reads it each time.
        self.toolsets = toolsets
        self.timeout = timeout
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
        headers.update(_routing_headers(message))
        request = urllib.request.Request(  # noqa: S310 - scheme checked in __init__
            self.endpoint, data=line.encode(), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                body = bytes(response.read())
        except urllib.error.HTTPError as error:
            body = bytes(error.read())
            if error.code == 401:
                return self._unauthorized(message, body)
        except (urllib.error.URLError, TimeoutError) as error:
            return self._transport_error(message, f"endpoint unreachable: {error}")
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

    @staticmethod
    def _transport_error(message: object, text: str) -> str | None:
        if not isinstance(message, dict) or "id" not in message:
            return None
        error = {"code": INTERNAL_ERROR, "message": text}
        return json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error})

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
