"""MCP over stdio for hosts that launch servers as processes.

A faithful bridge rather than a second server: each JSON-RPC line read from stdin is POSTed to
the configured endpoint (local or deployed) with the process credential, and the reply is
written back as one line. Protocol behaviour therefore lives in one place, the HTTP endpoint.
"""

from __future__ import annotations

import contextlib
import json
import sys
import urllib.error
import urllib.request
from typing import IO

from vigil.transports.jsonrpc import INTERNAL_ERROR

_PROTOCOL_HEADER = "mcp-protocol-version"


class StdioBridge:
    def __init__(self, endpoint: str, secret: str | None, timeout: float = 60.0) -> None:
        if not endpoint.startswith(("http://", "https://")):
            raise ValueError("the endpoint must be an http(s) URL")
        self.endpoint = endpoint
        self.secret = secret
        self.timeout = timeout
        self.protocol_version: str | None = None

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
        request = urllib.request.Request(  # noqa: S310 - scheme checked in __init__
            self.endpoint, data=line.encode(), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                body = bytes(response.read())
        except urllib.error.HTTPError as error:
            body = bytes(error.read())
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

    @staticmethod
    def _transport_error(message: object, text: str) -> str | None:
        if not isinstance(message, dict) or "id" not in message:
            return None
        error = {"code": INTERNAL_ERROR, "message": text}
        return json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error})

    def serve(self, stdin: IO[str] = sys.stdin, stdout: IO[str] = sys.stdout) -> None:
        for line in stdin:
            if not line.strip():
                continue
            reply = self.forward(line)
            if reply is not None:
                stdout.write(reply + "\n")
                stdout.flush()
