"""What the door in front of a deployment says reaches the host as JSON-RPC. API Gateway, a
function URL or a proxy answers 429 and 5xx in words of its own (``{"message": "Too Many
Requests"}``, an HTML page); the stdio bridge answers the request that met it with a typed,
retryable JSON-RPC error, as Vigil renders its own, and goes on serving. Vigil's own JSON-RPC
answer passes through whatever its status."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO
from typing import Any

import pytest

from vigil.clock import ManualClock
from vigil.transports.stdio import StdioBridge

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
PING = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST = {"jsonrpc": "2.0", "id": "next", "method": "tools/list"}
LISTED = {"jsonrpc": "2.0", "id": "next", "result": {"tools": []}}
HTML_503 = b"<html><body><h1>503 Service Temporarily Unavailable</h1></body></html>"

Answer = tuple[int, dict[str, str], bytes]


class Door:
    """An HTTP server that answers each POST with the next scripted answer."""

    def __init__(self) -> None:
        self.answers: list[Answer] = []
        door = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                status, headers, body = door.answers.pop(0)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/mcp"

    def answer(self, status: int, body: Any, **headers: str) -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.answers.append((status, headers, raw))


@pytest.fixture
def door() -> Iterator[Door]:
    door = Door()
    thread = threading.Thread(target=door.server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield door
    door.server.shutdown()
    door.server.server_close()


def served(url: str, *messages: dict[str, Any], timeout: float = 60.0) -> list[dict[str, Any]]:
    """What the host reads back for ``messages``, one line each."""
    stdin = StringIO("".join(json.dumps(message) + "\n" for message in messages))
    stdout = StringIO()
    StdioBridge(url, None, timeout=timeout, clock=ManualClock(NOW)).serve(stdin, stdout)
    return [json.loads(line) for line in stdout.getvalue().splitlines()]


def refused(code: str, message: str, retryable: bool = True, **details: Any) -> dict[str, Any]:
    """The JSON-RPC error that answers PING, in the shape of Vigil's own typed refusals."""
    data: dict[str, Any] = {"code": code, "message": message}
    if details:
        data["details"] = details
    data["retryable"] = retryable
    error = {"code": -32603, "message": message, "data": data}
    return {"jsonrpc": "2.0", "id": 7, "error": error}


def test_a_gateways_429_is_throttled_with_its_retry_after(door: Door) -> None:
    door.answer(429, {"message": "Too Many Requests"}, **{"Retry-After": "30"})
    door.answer(200, LISTED)
    assert served(door.url, PING, LIST) == [
        refused(
            "throttled",
            "the endpoint answered HTTP 429 (too many requests); retry in 30 s",
            http_status=429,
            retry_after_seconds=30,
        ),
        LISTED,
    ]


def test_a_retry_after_that_names_a_date_is_counted_from_the_clock(door: Door) -> None:
    door.answer(
        429, {"message": "Too Many Requests"}, **{"Retry-After": "Sun, 01 Mar 2026 12:01:30 GMT"}
    )
    door.answer(200, LISTED)
    (first, second) = served(door.url, PING, LIST)
    assert first["error"]["data"]["details"] == {"http_status": 429, "retry_after_seconds": 90}
    assert second == LISTED


def test_an_html_503_is_unavailable(door: Door) -> None:
    door.answer(503, HTML_503, **{"Content-Type": "text/html"})
    door.answer(200, LISTED)
    assert served(door.url, PING, LIST) == [
        refused(
            "unavailable",
            "the endpoint answered HTTP 503 (service unavailable); retry later",
            http_status=503,
        ),
        LISTED,
    ]


def test_api_gateways_502_is_unavailable(door: Door) -> None:
    door.answer(502, {"message": "Internal server error"}, **{"Retry-After": "5"})
    door.answer(200, LISTED)
    assert served(door.url, PING, LIST) == [
        refused(
            "unavailable",
            "the endpoint answered HTTP 502 (bad gateway); retry in 5 s",
            http_status=502,
            retry_after_seconds=5,
        ),
        LISTED,
    ]


@pytest.mark.parametrize(
    ("status", "phrase"),
    [(500, "internal server error"), (504, "gateway timeout"), (522, "server error")],
)
def test_any_other_5xx_is_unavailable_and_retryable(door: Door, status: int, phrase: str) -> None:
    door.answer(status, b"upstream connect error")
    assert served(door.url, PING) == [
        refused(
            "unavailable",
            f"the endpoint answered HTTP {status} ({phrase}); retry later",
            http_status=status,
        )
    ]


def test_a_5xx_that_no_retry_gets_past_is_unavailable_and_not_retryable(door: Door) -> None:
    door.answer(501, b"<html>Not Implemented</html>")
    assert served(door.url, PING) == [
        refused(
            "unavailable",
            "the endpoint answered HTTP 501 (not implemented)",
            retryable=False,
            http_status=501,
        )
    ]


def test_vigils_own_json_rpc_answer_passes_through_at_any_status(door: Door) -> None:
    own = {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {
            "code": -32603,
            "message": "the service is temporarily unavailable; retry later",
            "data": {"code": "unavailable", "message": "…", "retryable": True},
        },
    }
    door.answer(503, own, **{"Retry-After": "30"})
    door.answer(429, {**own, "id": "next"})
    door.answer(200, LISTED)
    assert served(door.url, PING, LIST, LIST) == [own, {**own, "id": "next"}, LISTED]


def test_a_notification_the_door_refuses_is_answered_with_nothing(door: Door) -> None:
    door.answer(503, HTML_503)
    door.answer(200, LISTED)
    assert served(door.url, INITIALIZED, LIST) == [LISTED]


def test_a_closed_port_is_unavailable_and_the_bridge_serves_on() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/mcp"
    replies = served(url, PING, {**PING, "id": 8})
    message = "the endpoint is unreachable (Connection refused); retry later"
    assert replies == [
        refused("unavailable", message),
        {**refused("unavailable", message), "id": 8},
    ]


def test_no_answer_within_the_timeout_is_unavailable() -> None:
    """A listener that never accepts: the connection is made, and no answer ever comes."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/mcp"
        assert served(url, PING, timeout=0.05) == [
            refused("unavailable", "the endpoint gave no answer within 0.05 s; retry later")
        ]


def test_a_connection_closed_without_an_answer_is_unavailable() -> None:
    with socket.socket() as hanging_up:
        hanging_up.bind(("127.0.0.1", 0))
        hanging_up.listen()
        url = f"http://127.0.0.1:{hanging_up.getsockname()[1]}/mcp"

        def hang_up() -> None:
            for _ in range(2):
                connection, _address = hanging_up.accept()
                connection.recv(65536)
                connection.close()

        thread = threading.Thread(target=hang_up, daemon=True)
        thread.start()
        message = (
            "the endpoint is unreachable (Remote end closed connection without response); "
            "retry later"
        )
        assert served(url, PING, {**PING, "id": 8}) == [
            refused("unavailable", message),
            {**refused("unavailable", message), "id": 8},
        ]
        thread.join()


@pytest.mark.parametrize("method", ["tools/list\r\nX-Injected: 1", "tools/lïst", "werkzeug\u2028"])
def test_a_method_no_header_can_carry_is_answered_here_and_serving_goes_on(
    door: Door, method: str
) -> None:
    """A method holding a line break, or a character outside Latin-1, cannot be an HTTP
    header: the bridge answers it itself (method not found), sends nothing, and serves the
    next request."""
    door.answer(200, LISTED)
    odd = {"jsonrpc": "2.0", "id": 1, "method": method}
    assert served(door.url, odd, {"jsonrpc": "2.0", "method": method}, LIST) == [
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "method not found"}},
        LISTED,
    ]
    assert door.answers == []
