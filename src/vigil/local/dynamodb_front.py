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
write that gives an item a TTL is marked in it before going on (``vigil.local.expiry``). With
contention on (``vigil local --contention``), it also refuses what DynamoDB would refuse under
load, transaction conflicts and throttling, which DynamoDB Local never does
(``vigil.local.contention``); the counts of what it refused are in its log and at
``GET /contention``.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import signal
import socket
import sys
import threading
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from vigil.local.contention import (
    Contention,
    ContentionSettings,
    TableKeys,
    Verdict,
    error_headers,
)
from vigil.local.dynamodb_local import LOOPBACK, LoopbackChild, serve_until_signalled, start_child
from vigil.local.expiry import WRITES, ExpiryIndex, Marks, expiry_marks
from vigil.local.signatures import Refused, UnknownKey, signer_known, verify

LOG_FILE = "dynamodb-front.log"
# Headers that describe one hop, not the request.
# DynamoDB's largest request (a BatchWriteItem or a transaction of large items) is 16 MB.
MAX_REQUEST_BYTES = 16 * 1024 * 1024
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "host"})
STATS_PATH = "/contention"
# How often the front logs what contention refused, when that changed.
REPORT_SECONDS = 10.0
# Requests after which the front no longer knows a table's keys.
_SCHEMA_CHANGES = frozenset({"CreateTable", "DeleteTable", "UpdateTable"})
_DESCRIBE_TABLE = "DynamoDB_20120810.DescribeTable"


class DynamoDBFront:
    def __init__(
        self,
        engine_url: str,
        database_key_id: str,
        keys: Mapping[str, str],
        port: int = 0,
        now: Callable[[], float] = time.time,
        expiry: ExpiryIndex | None = None,
        contention: Contention | None = None,
    ) -> None:
        engine = urlsplit(engine_url)
        self.engine = (engine.hostname or LOOPBACK, engine.port or 80)
        self.database_key_id = database_key_id
        self.keys = dict(keys)
        self.now = now
        self.expiry = expiry
        self.contention = contention
        self._schemas: dict[str, TableKeys] = {}
        self._httpd = ThreadingHTTPServer((LOOPBACK, port), _handler(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None
        self._reporter: threading.Thread | None = None
        self._stopping = threading.Event()
        self._reported: dict[str, dict[str, int]] = {}

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="vigil-dynamodb-front", daemon=True
        )
        self._thread.start()
        if self.contention is not None:
            print(f"contention on: {self.contention.settings.described()}", flush=True)
            self._reporter = threading.Thread(
                target=self._report_every, name="vigil-contention-report", daemon=True
            )
            self._reporter.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()
        if self._reporter is not None:
            self._stopping.set()
            self._reporter.join()
            self._reporter = None
        self.report(final=True)

    def report(self, final: bool = False) -> None:
        """Logs what contention refused, if that changed since the last report (and at the end
        in any case): one line, however many refusals."""
        if self.contention is None:
            return
        refused = self.contention.stats()
        if refused != self._reported or final:
            self._reported = refused
            line = {"event": "contention refused", "final": final, "refused": refused}
            print(json.dumps(line), flush=True)

    def _report_every(self) -> None:
        while not self._stopping.wait(REPORT_SECONDS):
            self.report()

    def table_keys(self, table: str, describe: Callable[[str], bytes | None]) -> TableKeys | None:
        """A table's keys, asked of the engine (``describe``) the first time; None for a table
        it does not have."""
        known = self._schemas.get(table)
        if known is not None:
            return known
        answer = describe(table)
        if answer is None:
            return None
        try:
            keys = TableKeys.described(json.loads(answer)["Table"])
        except (KeyError, TypeError, ValueError):
            return None
        self._schemas[table] = keys
        return keys

    def forget_table(self, table: object) -> None:
        if isinstance(table, str):
            self._schemas.pop(table, None)

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
            headers = {name.lower(): value for name, value in self.headers.items()}
            path, _, query = self.path.partition("?")
            try:
                # Before the body is read: a request of no key of the runtime's, or larger
                # than DynamoDB takes, costs nothing but its headers.
                signer_known(query, headers, front.keys)
                length = int(headers.get("content-length") or 0)
                if not 0 <= length <= MAX_REQUEST_BYTES:
                    raise Refused(f"the request is over DynamoDB's {MAX_REQUEST_BYTES} bytes")
            except (Refused, ValueError) as error:
                self.close_connection = True  # its body, unread, is not a next request
                refused = error if isinstance(error, Refused) else Refused("a bad Content-Length")
                self._answer(
                    400, [("Content-Type", "application/x-amz-json-1.0")], _refusal(refused)
                )
                return
            body = self.rfile.read(length)
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
            target = headers.get("x-amz-target", "")
            if front.contention is not None:
                self._contended(path, query, forwarded, target, body)
                return
            with front.writing(target, body):
                status, answer_headers, answer = self._forward(path, query, forwarded, body)
            self._answer(status, answer_headers, answer)

        def do_GET(self) -> None:
            if front.contention is None or self.path != STATS_PATH:
                self._answer(404, [("Content-Type", "text/plain")], b"not found\n")
                return
            stats = {
                "settings": asdict(front.contention.settings),
                "refused": front.contention.stats(),
            }
            self._answer(200, [("Content-Type", "application/json")], json.dumps(stats).encode())

        def _contended(
            self, path: str, query: str, forwarded: dict[str, str], target: str, body: bytes
        ) -> None:
            """Forwards a request as DynamoDB under load would take it: refused, cut down (a
            batch), or whole, holding its items until the engine has answered (and longer, for
            a transaction)."""
            assert front.contention is not None
            operation = target.rpartition(".")[2]
            try:
                request = json.loads(body)
            except ValueError:
                request = None
            verdict = Verdict()
            if isinstance(request, dict):

                def describe(table: str) -> bytes | None:
                    asked = json.dumps({"TableName": table}).encode()
                    headers = {**forwarded, "x-amz-target": _DESCRIBE_TABLE}
                    headers["content-length"] = str(len(asked))
                    status, _, answer = self._forward(path, query, headers, asked)
                    return answer if status == 200 else None

                verdict = front.contention.admit(
                    operation, request, lambda table: front.table_keys(table, describe)
                )
            if verdict.refusal is not None:
                self._answer(400, error_headers(verdict.refusal), verdict.refusal)
                return
            if verdict.body is not None:
                body = verdict.body
                forwarded["content-length"] = str(len(body))
            try:
                with front.writing(target, body):
                    status, answer_headers, answer = self._forward(path, query, forwarded, body)
            finally:
                front.contention.release(verdict)
            if operation in _SCHEMA_CHANGES and isinstance(request, dict):
                front.forget_table(request.get("TableName"))
            if verdict.unprocessed is not None and status == 200:
                answer = front.contention.answered(verdict, status, answer)
                answer_headers = [
                    (k, str(zlib.crc32(answer)) if k.lower() == "x-amz-crc32" else v)
                    for k, v in answer_headers
                ]
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
    contention: ContentionSettings | None = None,
) -> LoopbackChild:
    """Starts a front to the engine at ``engine_url`` in a child process, on a free loopback
    port, logging to ``log_dir`` and marking writes in the expiry index at ``expiry_index``,
    refusing what DynamoDB would under load if given ``contention``.
    The keys go to it on its standard input, not on its command line, where any user of the
    machine could read them."""
    given = {
        "engine_url": engine_url,
        "database_key_id": database_key_id,
        "keys": dict(keys),
        "expiry_index": str(expiry_index),
        "contention": None if contention is None else asdict(contention),
    }
    return start_child(
        "the DynamoDB front",
        [__name__, "{port}"],
        log_dir / LOG_FILE,
        given=json.dumps(given).encode(),
    )


def contention_stats(endpoint_url: str) -> dict[str, dict[str, int]]:
    """What the front at ``endpoint_url`` has refused, by operation and error code."""
    parts = urlsplit(endpoint_url)
    connection = http.client.HTTPConnection(parts.hostname or LOOPBACK, parts.port, timeout=10)
    try:
        connection.request("GET", STATS_PATH)
        response = connection.getresponse()
        answer = response.read()
    finally:
        connection.close()
    if response.status != 200:
        raise RuntimeError(f"the front at {endpoint_url} plays no contention")
    refused: dict[str, dict[str, int]] = json.loads(answer)["refused"]
    return refused


if __name__ == "__main__":
    settings = json.loads(sys.stdin.read())
    index = ExpiryIndex(Path(settings["expiry_index"]))
    index.recovered()
    contended = settings.get("contention")
    front = DynamoDBFront(
        settings["engine_url"],
        settings["database_key_id"],
        settings["keys"],
        int(sys.argv[1]),
        expiry=index,
        contention=None if contended is None else Contention(ContentionSettings(**contended)),
    )
    front.start()
    if contended is not None:

        def last_report(signum: int, frame: object) -> None:
            front.report(final=True)
            sys.exit(0)

        # The runtime stops the front with SIGTERM: the counts are logged before it ends.
        signal.signal(signal.SIGTERM, last_report)
    serve_until_signalled()
