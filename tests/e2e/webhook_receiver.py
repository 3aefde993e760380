"""A webhook receiver on this machine, for the end-to-end tests and the lateness script.

Plain HTTP on 127.0.0.1, in a thread. Every request is verified with the Standard Webhooks
reference library (``standardwebhooks``), not with Vigil's own signing code, against the secret
of the path it came to; what it answers is scripted per path (a status, a Retry-After, or
holding the connection without answering). It keeps every attempt, and each event that it
accepted (a 2xx) once, by its ``webhook-id``, with the wall time it arrived.

Each answer is written in one send, on a socket with TCP_NODELAY, so that no delayed ACK holds
up the sender.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks import Webhook, WebhookVerificationError

MAX_BODY = 1024 * 1024
# How long a path scripted to hang holds a request before giving up on it (longer than the
# sender's own limit of 10 s); closing the receiver ends every hang at once.
HANG_SECONDS = 30.0


@dataclass(frozen=True)
class Answer:
    """What a path answers: ``status`` (with ``retry_after`` as the Retry-After header), or
    nothing at all when ``hang``."""

    status: int = 200
    retry_after: str | None = None
    hang: bool = False


OK = Answer()
HANG = Answer(hang=True)


@dataclass(frozen=True)
class Attempt:
    """One request as it arrived: where, with which id, verified or not, and what it got."""

    path: str
    webhook_id: str | None
    verified: bool
    answered: int | None  # None: held without an answer
    arrived_at: datetime


@dataclass(frozen=True)
class Received:
    """An event accepted (answered 2xx), the first time its webhook-id came."""

    path: str
    webhook_id: str
    body: dict[str, Any]
    headers: dict[str, str]
    arrived_at: datetime

    @property
    def type(self) -> str:
        return str(self.body["type"])


@dataclass
class _Path:
    secret: str
    answer: Answer = OK


@dataclass
class WebhookReceiver:
    """Start with ``start()``; ``url(path, secret)`` registers a path and gives its URL."""

    host: str = "127.0.0.1"
    attempts: list[Attempt] = field(default_factory=list)
    received: dict[str, Received] = field(default_factory=dict)  # by webhook-id
    duplicates: int = 0
    # Called with each event accepted for the first time, in the receiver's thread.
    on_receive: Callable[[Received], None] | None = None
    _paths: dict[str, _Path] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _closing: threading.Event = field(default_factory=threading.Event)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    def start(self) -> WebhookReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(min(length, MAX_BODY))
                answer = receiver._take(self.path, body, dict(self.headers.items()))
                if answer is None:
                    return  # held, then dropped: the connection closes with no answer
                self._answer(answer)

            def _answer(self, answer: Answer) -> None:
                phrase = HTTPStatus(answer.status).phrase
                lines = [
                    f"HTTP/1.1 {answer.status} {phrase}",
                    "Content-Type: text/plain",
                    f"Content-Length: {len(phrase)}",
                    "Connection: close",
                ]
                if answer.retry_after is not None:
                    lines.append(f"Retry-After: {answer.retry_after}")
                self.wfile.write(("\r\n".join(lines) + "\r\n\r\n" + phrase).encode())
                self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer((self.host, 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="webhook-receiver", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> WebhookReceiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def port(self) -> int:
        assert self._server is not None, "start() the receiver first"
        return int(self._server.server_address[1])

    def url(self, path: str, secret: str | None = None) -> str:
        """The URL of ``path`` (starting with /); its secret can be given later, once
        create_channel has issued it."""
        if secret is not None:
            self.expect(path, secret)
        return f"http://{self.host}:{self.port}{path}"

    def expect(self, path: str, secret: str, answer: Answer = OK) -> None:
        """Verify what comes to ``path`` with ``secret`` and answer it with ``answer``."""
        with self._lock:
            self._paths[path] = _Path(secret, answer)

    def script(self, path: str, answer: Answer) -> None:
        with self._lock:
            self._paths[path].answer = answer

    def events(self, path: str, event_type: str | None = None) -> list[Received]:
        with self._lock:
            return [
                r
                for r in self.received.values()
                if r.path == path and (event_type is None or r.type == event_type)
            ]

    def attempts_at(self, path: str) -> list[Attempt]:
        with self._lock:
            return [a for a in self.attempts if a.path == path]

    def unverified(self) -> list[Attempt]:
        with self._lock:
            return [a for a in self.attempts if not a.verified]

    def _take(self, path: str, body: bytes, headers: dict[str, str]) -> Answer | None:
        """Verifies and records a request; the answer to give it, or None once it was held."""
        arrived = datetime.now(UTC)
        lowered = {name.lower(): value for name, value in headers.items()}
        webhook_id = lowered.get("webhook-id")
        with self._lock:
            known = self._paths.get(path)
        verified = False
        payload: Any = None
        if known is not None:
            try:
                payload = Webhook(known.secret).verify(body, lowered)
                verified = True
            except WebhookVerificationError:
                verified = False
        answer = known.answer if known is not None and verified else Answer(status=401)
        answered = None if answer.hang else answer.status
        first: Received | None = None
        with self._lock:
            self.attempts.append(Attempt(path, webhook_id, verified, answered, arrived))
            if answered is not None and 200 <= answered < 300 and webhook_id is not None:
                if webhook_id in self.received:
                    self.duplicates += 1
                else:
                    first = Received(path, webhook_id, payload, lowered, arrived)
                    self.received[webhook_id] = first
        if first is not None and self.on_receive is not None:
            self.on_receive(first)
        if answer.hang:
            self._closing.wait(HANG_SECONDS)
            return None
        return answer
