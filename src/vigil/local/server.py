"""The API function's front door played locally: requests become payload 2.0 events, through
the door (``vigil.local.doors``) that a deploy with the same parameter values would open."""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast
from urllib.parse import parse_qsl, urlsplit

from vigil.clock import Clock, SystemClock
from vigil.local.doors import FrontDoor
from vigil.local.logs import ACCESS_LOGGER
from vigil.local.stack import DEFAULT_ACCOUNT_ID
from vigil.observability import get_logger, log_event

log = get_logger("vigil.local.server")
access_log = get_logger(ACCESS_LOGGER)

Handler = Callable[[dict[str, Any], Any], Any]

# Lambda's limit on a synchronous invocation's payload.
MAX_BODY_BYTES = 6 * 1024 * 1024
# How long a stop waits for the requests being answered: a tool call takes milliseconds (a
# second or two on a machine saturated by a load run), and the runtime stops within five.
_ANSWERING_SECONDS = 3.0


def _default_handler(event: dict[str, Any], context: Any) -> Any:
    from vigil.entrypoints.api import handler

    return handler(event, context)


class LocalHttpServer:
    """A ``ThreadingHTTPServer`` in front of one Lambda handler, as its front door is."""

    def __init__(
        self,
        door: FrontDoor,
        handler: Handler | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        context_factory: Callable[[], Any] | None = None,
        account_id: str = DEFAULT_ACCOUNT_ID,
        clock: Clock | None = None,
    ) -> None:
        self.door = door
        self.handler = handler or _default_handler
        self.context_factory = context_factory or (lambda: None)
        self.account_id = account_id
        self.clock = clock or SystemClock()
        self._httpd = _TrackingServer((host, port), _request_handler(self))
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        host = str(self._httpd.server_address[0])
        if host in ("0.0.0.0", ""):  # noqa: S104 - reading the bound address, not binding
            host = "127.0.0.1"
        elif ":" in host:
            host = "[::1]" if host == "::" else f"[{host}]"
        return f"http://{host}:{self.port}"

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="vigil-http-api", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()
        self._httpd.close_connections(after_answering=_ANSWERING_SECONDS)

    def event(
        self,
        *,
        method: str,
        target: str,
        headers: list[tuple[str, str]],
        body: bytes,
        source_ip: str,
        route_key: str,
        path_parameters: dict[str, str],
    ) -> dict[str, Any]:
        """The payload 2.0 event the front door sends for this request."""
        split = urlsplit(target)
        joined: dict[str, str] = {}
        cookies: list[str] = []
        for name, value in headers:
            name = name.lower()
            if name == "cookie":
                cookies.extend(c.strip() for c in value.split(";") if c.strip())
                continue
            joined[name] = f"{joined[name]},{value}" if name in joined else value
        # API Gateway and Function URLs add these, appending to any the client sent.
        forwarded_for = joined.get("x-forwarded-for")
        joined["x-forwarded-for"] = f"{forwarded_for}, {source_ip}" if forwarded_for else source_ip
        joined["x-forwarded-port"] = str(self.port)
        joined["x-forwarded-proto"] = "http"
        query: dict[str, str] = {}
        for name, value in parse_qsl(split.query, keep_blank_values=True):
            query[name] = f"{query[name]},{value}" if name in query else value
        now = self.clock.now()
        request_id = str(uuid.uuid4())
        event: dict[str, Any] = {
            "version": "2.0",
            "routeKey": route_key,
            "rawPath": split.path,
            "rawQueryString": split.query,
            "headers": joined,
            "requestContext": {
                "accountId": self.account_id,
                "apiId": self.door.api_id,
                "domainName": joined.get("host", f"127.0.0.1:{self.port}"),
                "domainPrefix": joined.get("host", "127.0.0.1").split(".")[0],
                "http": {
                    "method": method,
                    "path": split.path,
                    "protocol": "HTTP/1.1",
                    "sourceIp": source_ip,
                    "userAgent": joined.get("user-agent", ""),
                },
                "requestId": request_id,
                "routeKey": route_key,
                "stage": "$default",
                "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
                "timeEpoch": int(now.timestamp() * 1000),
            },
            "isBase64Encoded": False,
        }
        if cookies:
            event["cookies"] = cookies
        if query:
            event["queryStringParameters"] = query
        if path_parameters:
            event["pathParameters"] = path_parameters
        if body:
            try:
                event["body"] = body.decode("utf-8")
            except UnicodeDecodeError:
                event["body"] = base64.b64encode(body).decode()
                event["isBase64Encoded"] = True
        return event


class _TrackingServer(ThreadingHTTPServer):
    """On stop, lets the requests being answered finish, then closes kept-alive connections,
    so that nothing reaches a stopped stack: the runtime stops its engines after the server,
    and a function stopped halfway would find them gone."""

    daemon_threads = True
    request_queue_size = 128  # the listen backlog: a burst of clients waits, not refused

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._connections: set[socket.socket] = set()
        self._answering = 0
        self._closing = False
        self._changed = threading.Condition()

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        with self._changed:
            if self._closing:
                # Accepted just before the stop, too late to be answered.
                self.shutdown_request(request)
                return
            self._connections.add(request)
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._changed:
                self._connections.discard(request)

    def admit(self) -> bool:
        """Counts a request in until ``answered``; False once the server is closing."""
        with self._changed:
            if self._closing:
                return False
            self._answering += 1
            return True

    def answered(self) -> None:
        with self._changed:
            self._answering -= 1
            self._changed.notify_all()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A browser that closes a tab or stops a page hangs up mid-request: there is no one
        # left to answer, and nothing went wrong here.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        log.exception("a request failed in the HTTP server")

    def close_connections(self, after_answering: float) -> None:
        """Admits no more requests, waits up to ``after_answering`` seconds for those being
        answered, then closes every connection."""
        with self._changed:
            self._closing = True
            self._changed.wait_for(lambda: self._answering == 0, after_answering)
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


@dataclass
class _Reply:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


def _gateway_error(status: int, message: str) -> _Reply:
    return _Reply(
        status, [("content-type", "application/json")], json.dumps({"message": message}).encode()
    )


def _reply_from_result(result: Any) -> _Reply:
    """Reads a function's result the way payload format 2.0 does."""
    if not isinstance(result, dict) or "statusCode" not in result:
        # A result without a status code is the body of a 200 JSON response.
        return _Reply(200, [("content-type", "application/json")], json.dumps(result).encode())
    headers = [(str(k).lower(), str(v)) for k, v in (result.get("headers") or {}).items()]
    headers = [(k, v) for k, v in headers if k not in ("content-length", "transfer-encoding")]
    headers += [("set-cookie", str(c)) for c in result.get("cookies") or []]
    body = result.get("body") or ""
    if not isinstance(body, str):
        body = json.dumps(body)
    raw = base64.b64decode(body) if result.get("isBase64Encoded") else body.encode()
    return _Reply(int(result["statusCode"]), headers, raw)


class _BodyTooLarge(Exception):
    pass


def _request_handler(server: LocalHttpServer) -> type[BaseHTTPRequestHandler]:
    class RequestHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "vigil-local"
        sys_version = ""
        # A kept-alive connection idle this long is closed, and a half-sent request abandoned.
        timeout = 60

        def setup(self) -> None:
            super().setup()
            # The headers and the body go in separate writes: without this, Nagle's algorithm
            # holds the body back until the client's delayed acknowledgment, about 40 ms.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_GET(self) -> None:
            tracking = cast(_TrackingServer, self.server)
            if not tracking.admit():
                # Stopping: API Gateway's answer when no function can take the request.
                self.close_connection = True
                self._send(_gateway_error(503, "Service Unavailable"), str(uuid.uuid4()))
                return
            try:
                self._serve()
            finally:
                tracking.answered()

        do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = do_GET

        def log_message(self, format: str, *args: Any) -> None:
            # Requests are logged once, in _serve, without headers: they carry secrets.
            pass

        def _serve(self) -> None:
            started = time.perf_counter()
            request_id = str(uuid.uuid4())
            try:
                body = self._read_body()
            except _BodyTooLarge:
                self.close_connection = True
                self._send(_gateway_error(413, "Request Entity Too Large"), request_id)
                return
            except ValueError:
                self.close_connection = True
                self._send(_gateway_error(400, "Bad Request"), request_id)
                return
            path = urlsplit(self.path).path
            found = server.door.route(self.command, path)
            if found is None:
                reply = _gateway_error(404, "Not Found")
                route_key = "-"
            else:
                route_key, parameters = found
                event = server.event(
                    method=self.command,
                    target=self.path,
                    headers=list(self.headers.items()),
                    body=body,
                    source_ip=self.client_address[0],
                    route_key=route_key,
                    path_parameters=parameters,
                )
                request_id = event["requestContext"]["requestId"]
                try:
                    reply = _reply_from_result(server.handler(event, server.context_factory()))
                except Exception:
                    log.exception("the function failed")
                    reply = _gateway_error(500, "Internal Server Error")
            milliseconds = round((time.perf_counter() - started) * 1000)
            # Logged before the reply goes: a client that has its answer finds the line written
            # (and a test's captured stream is still open for it). The path without its query,
            # which may carry a token.
            log_event(
                access_log,
                f"{self.command} {path} {reply.status} ({milliseconds} ms)",
                request_id=request_id,
                route=route_key,
                status=reply.status,
                duration_ms=milliseconds,
            )
            self._send(reply, request_id)

        def _read_body(self) -> bytes:
            if "chunked" in self.headers.get("transfer-encoding", "").lower():
                return self._read_chunked()
            length = int(self.headers.get("content-length") or 0)
            if length < 0:
                raise ValueError("negative content-length")
            if length > MAX_BODY_BYTES:
                raise _BodyTooLarge
            return self.rfile.read(length)

        def _read_chunked(self) -> bytes:
            body = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline().strip():
                        pass  # trailers
                    return bytes(body)
                if len(body) + size > MAX_BODY_BYTES:
                    raise _BodyTooLarge
                body += self.rfile.read(size)
                self.rfile.readline()

        def _send(self, reply: _Reply, request_id: str) -> None:
            self.send_response(reply.status)
            for name, value in reply.headers:
                self.send_header(name, value)
            self.send_header(server.door.request_id_header, request_id)
            self.send_header("content-length", str(len(reply.body)))
            if self.close_connection:
                self.send_header("connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(reply.body)

    return RequestHandler
