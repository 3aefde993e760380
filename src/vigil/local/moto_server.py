"""moto as a loopback server that answers no browser, with its DynamoDB serialised.

moto's DynamoDB is not safe under concurrent requests: a transaction copies the whole table
while other threads write to it, fails with "dictionary changed size during iteration", and
answers 500. DynamoDB itself has no such failure, so the local runtime lets one DynamoDB
request run at a time. The other services (SQS long polls above all) keep running in parallel.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from moto.server import ThreadedMotoServer
from werkzeug.serving import make_server

_DYNAMODB_TARGET = "DynamoDB_"

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class SerializedDynamoDB:
    """WSGI middleware: DynamoDB requests one at a time, everything else as it comes."""

    def __init__(self, app: WsgiApp) -> None:
        self.app = app
        self.lock = threading.Lock()

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        if not environ.get("HTTP_X_AMZ_TARGET", "").startswith(_DYNAMODB_TARGET):
            return self.app(environ, start_response)
        with self.lock:
            # The body is produced inside the lock: moto does its work while it is iterated.
            return list(self.app(environ, start_response))


class NoBrowsers:
    """WSGI middleware: the AWS stand-in holds every namespace's data and checks no signature,
    so no web page may reach it. moto answers browsers with permissive CORS headers; here a
    request that carries an Origin (every cross-site fetch, every preflight) is refused, and
    no CORS header goes out. The SDKs send no Origin."""

    def __init__(self, app: WsgiApp) -> None:
        self.app = app

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        if "HTTP_ORIGIN" in environ:
            start_response("403 Forbidden", [("Content-Type", "text/plain")])
            return [b"the local AWS stand-in does not answer browsers\n"]

        def without_cors(status: str, headers: list[tuple[str, str]], *rest: Any) -> Any:
            kept = [(k, v) for k, v in headers if not k.lower().startswith("access-control-")]
            return start_response(status, kept, *rest)

        return self.app(environ, without_cors)


class LocalMotoServer(ThreadedMotoServer):
    def _server_entry(self) -> None:
        app = NoBrowsers(SerializedDynamoDB(DomainDispatcherApplication(create_backend_app)))
        self._server = make_server(
            self._ip_address, self._port, app, True, request_handler=MotoRequestHandler
        )
        self._server_ready_event.set()
        self._server.serve_forever()
