"""The local DynamoDB's front door: a loopback proxy that serves only requests the runtime signed.

DynamoDB Local checks no signature: its only lock is the access key id, which names a
database. The runtime's clients therefore reach it through this front instead. The front
recomputes each request's SigV4 signature for the runtime's own key and refuses any request
that does not match, as DynamoDB does (``UnrecognizedClientException`` for an unknown key,
``InvalidSignatureException`` for a wrong signature); a request that matches goes on to the
engine under the database's key id, which only the front sends. That key id never leaves the
runtime, and a key id alone opens nothing here.

The front runs in a process of its own (``start_front``): in the runtime's process, its
threads would wait for the interpreter lock behind the handlers at each of a call's four
socket operations, and cost the runtime a third of its 8-client beats.

Seeing every write, it also keeps the index from which the runtime plays DynamoDB's TTL: each
write that gives an item a TTL is marked in it before going on (``vigil.local.expiry``).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from vigil.local.dynamodb_local import LOOPBACK, LoopbackChild, serve_until_signalled, start_child
from vigil.local.expiry import WRITES, ExpiryIndex, Marks, expiry_marks
from vigil.local.signatures import Refused, UnknownKey, verify

LOG_FILE = "dynamodb-front.log"
# Headers that describe one hop, not the request.
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "host"})


class DynamoDBFront:
    def __init__(
        self,
        engine_url: str,
        database_key_id: str,
        keys: Mapping[str, str],
        port: int = 0,
        now: Callable[[], float] = time.time,
        expiry: ExpiryIndex | None = None,
    ) -> None:
        engine = urlsplit(engine_url)
        self.engine = (engine.hostname or LOOPBACK, engine.port or 80)
        self.database_key_id = database_key_id
        self.keys = dict(keys)
        self.now = now
        self.expiry = expiry
        self._httpd = ThreadingHTTPServer((LOOPBACK, port), _handler(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="vigil-dynamodb-front", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()

    def forwarded_authorization(self, authorization: str, key_id: str) -> str:
        """The request's Authorization with the database's key id in place of the signer's."""
        return authorization.replace(f"Credential={key_id}/", f"Credential={self.database_key_id}/")

    def writing(self, target: str, body: bytes) -> contextlib.AbstractContextManager[None]:
        """Around the forwarding of a request: its marks in the expiry index, if a write."""
        operation = target.rpartition(".")[2]
        if self.expiry is None or operation not in WRITES:
            return contextlib.nullcontext()
        try:
            marks = expiry_marks(operation, json.loads(body), self.expiry.watched)
        except (AttributeError, TypeError, ValueError):
            # Not a request DynamoDB would take: the engine refuses it and nothing is written.
            marks = Marks()
        return self.expiry.writing(marks)


def _refusal(error: Refused) -> bytes:
    kind = (
        "UnrecognizedClientException"
        if isinstance(error, UnknownKey)
        else "InvalidSignatureException"
    )
    return json.dumps(
        {"__type": f"com.amazon.coral.service#{kind}", "message": str(error)}
    ).encode()


def _handler(front: DynamoDBFront) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # Keep-alive on both sides: the SDK reuses its connections, and so does the front.
        protocol_version = "HTTP/1.1"
        engine: http.client.HTTPConnection | None = None

        def setup(self) -> None:
            super().setup()
            # The headers and the body go in separate writes: without this, Nagle's algorithm
            # holds the body back until the client's delayed acknowledgment, about 40 ms.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: object) -> None:
            """Every DynamoDB call passes here; the engine's own log is the place for them."""

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {name.lower(): value for name, value in self.headers.items()}
            path, _, query = self.path.partition("?")
            try:
                signed = verify(
                    method="POST",
                    path=path,
                    query=query,
                    headers=headers,
                    body=body,
                    keys=front.keys,
                    now=front.now(),
                )
            except Refused as error:
                # DynamoDB answers a request it cannot authenticate with a 400.
                self._answer(400, [("Content-Type", "application/x-amz-json-1.0")], _refusal(error))
                return
            forwarded = {k: v for k, v in headers.items() if k not in _HOP_BY_HOP}
            forwarded["authorization"] = front.forwarded_authorization(
                headers["authorization"], signed.key_id
            )
            with front.writing(headers.get("x-amz-target", ""), body):
                status, answer_headers, answer = self._forward(path, query, forwarded, body)
            self._answer(status, answer_headers, answer)

        def _forward(
            self, path: str, query: str, headers: dict[str, str], body: bytes
        ) -> tuple[int, list[tuple[str, str]], bytes]:
            target = f"{path}?{query}" if query else path
            reused = self.engine is not None
            try:
                return self._exchange(target, headers, body)
            except (ConnectionError, http.client.HTTPException):
                self._close_engine()
                if not reused:
                    raise
            # The engine closed the connection while it was idle: the request never reached it.
            return self._exchange(target, headers, body)

        def _exchange(
            self, target: str, headers: dict[str, str], body: bytes
        ) -> tuple[int, list[tuple[str, str]], bytes]:
            if self.engine is None:
                self.engine = http.client.HTTPConnection(*front.engine, timeout=60)
                self.engine.connect()
                # http.client, too, sends the headers and the body in separate writes.
                self.engine.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.engine.request("POST", target, body=body, headers=headers)
            response = self.engine.getresponse()
            answer = response.read()
            kept = [(k, v) for k, v in response.getheaders() if k.lower() not in _HOP_BY_HOP]
            return response.status, kept, answer

        def _close_engine(self) -> None:
            if self.engine is not None:
                self.engine.close()
                self.engine = None

        def _answer(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
            self.send_response(status)
            for name, value in headers:
                if name.lower() != "content-length":
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def finish(self) -> None:
            super().finish()
            self._close_engine()

    return Handler


def start_front(
    engine_url: str,
    database_key_id: str,
    keys: Mapping[str, str],
    log_dir: Path,
    expiry_index: Path,
) -> LoopbackChild:
    """Starts a front to the engine at ``engine_url`` in a child process, on a free loopback
    port, logging to ``log_dir`` and marking writes in the expiry index at ``expiry_index``.
    The keys go to it on its standard input, not on its command line, where any user of the
    machine could read them."""
    given = {
        "engine_url": engine_url,
        "database_key_id": database_key_id,
        "keys": dict(keys),
        "expiry_index": str(expiry_index),
    }
    return start_child(
        "the DynamoDB front",
        [__name__, "{port}"],
        log_dir / LOG_FILE,
        given=json.dumps(given).encode(),
    )


if __name__ == "__main__":
    settings = json.loads(sys.stdin.read())
    index = ExpiryIndex(Path(settings["expiry_index"]))
    index.recovered()
    DynamoDBFront(
        settings["engine_url"],
        settings["database_key_id"],
        settings["keys"],
        int(sys.argv[1]),
        expiry=index,
    ).start()
    serve_until_signalled()
