"""moto as a loopback server that answers no browser, and whose state is saved as it changes."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from moto.server import ThreadedMotoServer
from werkzeug.serving import make_server

from vigil.local.moto_state import Snapshotter, guarded

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


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
    def __init__(self, *args: Any, snapshots: Snapshotter | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.snapshots = snapshots

    def _server_entry(self) -> None:
        app: WsgiApp = DomainDispatcherApplication(create_backend_app)
        if self.snapshots is not None:
            app = guarded(app, self.snapshots)
        self._server = make_server(
            self._ip_address, self._port, NoBrowsers(app), True, request_handler=MotoRequestHandler
        )
        self._server_ready_event.set()
        self._server.serve_forever()
