"""The guarded POST, against real receivers on loopback (with allow_private, as the local
runtime sends): each answer's SendResult, the time limit, no redirect followed, and the address
guard refusing before any connection is attempted."""

from __future__ import annotations

import datetime as dt
import http.server
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.utils import format_datetime
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from vigil.clock import ManualClock
from vigil.kit.retry_after import MAX_RETRY_AFTER_SECONDS, retry_after_seconds
from vigil.notifications.outbound import SendResult, is_public, post

NOW = dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=dt.UTC)
SECRET_PATH = "/services/T000/B000/s3cr3t-token"
BODY = b'{"hello": "world"}'


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    server: http.server.ThreadingHTTPServer
    seen: list[Seen] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    sni: list[str | None] = field(default_factory=list)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def url(self, path: str, host: str = "127.0.0.1", scheme: str = "http") -> str:
        return f"{scheme}://{host}:{self.port}{path}"


def handler_for(receiver_box: list[Receiver]) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            receiver = receiver_box[0]
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            headers = {name.lower(): value for name, value in self.headers.items()}
            receiver.seen.append(Seen(self.path, headers, body))
            route = self.path.split("?")[0]
            if route == "/slow":
                receiver.release.wait(10)
                return self.answer(200)
            if route == "/drip":
                self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                for _ in range(100):  # one byte of a header every 50 ms, for 5 s
                    if receiver.release.wait(0.05):
                        return
                    self.wfile.write(b"X")
                    self.wfile.flush()
                return
            status, headers, text = ROUTES.get(route, (404, {}, "no such route"))
            self.answer(status, headers, text)

        def answer(
            self, status: int, headers: dict[str, str] | None = None, text: str = ""
        ) -> None:
            payload = text.encode()
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler


ROUTES: dict[str, tuple[int, dict[str, str], str]] = {
    "/ok": (200, {}, "thanks"),
    "/accepted": (202, {}, ""),
    SECRET_PATH: (200, {}, ""),
    "/fail": (500, {}, "boom\n" + "x" * 5000),
    "/busy-seconds": (429, {"Retry-After": "120"}, ""),
    "/busy-date": (503, {"Retry-After": format_datetime(NOW + dt.timedelta(seconds=90), True)}, ""),
    "/busy-forever": (429, {"Retry-After": "99999999999"}, ""),
    "/busy": (503, {}, ""),
    "/request-timeout": (408, {}, ""),
    "/gone": (410, {}, "channel_is_archived"),
    "/moved": (302, {"Location": "/ok"}, ""),
    "/bad": (400, {}, "invalid_payload"),
    "/forbidden": (403, {}, ""),
    "/big": (200, {}, "y" * (1024 * 1024)),
}


def start(tls: ssl.SSLContext | None = None) -> Receiver:
    box: list[Receiver] = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler_for(box))
    server.daemon_threads = True
    receiver = Receiver(server)
    if tls is not None:

        def seen_name(_sock: Any, name: str | None, _context: Any) -> None:
            receiver.sni.append(name)

        tls.sni_callback = seen_name
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    box.append(receiver)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return receiver


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = start()
    yield running
    running.release.set()
    running.server.shutdown()
    running.server.server_close()


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every outgoing connection attempted, wherever it goes."""
    attempted: list[Any] = []
    real = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> None:
        attempted.append(address)
        real(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    return attempted


@pytest.fixture
def resolutions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every name resolved; names under .example resolve as the test says (to loopback)."""
    resolved: list[str] = []
    real = socket.getaddrinfo
    answers = {"hooks.example": "127.0.0.1", "other.example": "127.0.0.1"}

    def getaddrinfo(host: str, port: int, *args: Any, **kwargs: Any) -> Any:
        resolved.append(host)
        if host in answers:
            # A rebinding resolver: the first answer only; any later one points elsewhere.
            address = answers[host] if resolved.count(host) == 1 else "10.9.9.9"
            return real(address, port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return resolved


def send(url: str, **kwargs: Any) -> SendResult:
    kwargs.setdefault("allow_private", True)
    kwargs.setdefault("clock", ManualClock(NOW))
    return post(url, BODY, {"content-type": "application/json"}, **kwargs)


# -- what each answer comes to -------------------------------------------------------------------


def test_a_2xx_is_delivered_with_the_body_and_headers_sent(receiver: Receiver) -> None:
    outcome = post(
        receiver.url("/ok?x=1"),
        BODY,
        {"content-type": "application/json", "Host": "spoofed.example", "webhook-id": "evt_1"},
        allow_private=True,
    )
    assert outcome == SendResult("delivered", 200, "HTTP 200: thanks")
    assert send(receiver.url("/accepted")).kind == "delivered"
    first = receiver.seen[0]
    assert first.path == "/ok?x=1"
    assert first.body == BODY
    assert first.headers["host"] == f"127.0.0.1:{receiver.port}"  # never the caller's
    assert first.headers["webhook-id"] == "evt_1"
    assert first.headers["content-length"] == str(len(BODY))
    assert first.headers["user-agent"].startswith("Vigil")


def test_a_5xx_is_retried_with_a_short_reason(receiver: Receiver) -> None:
    outcome = send(receiver.url("/fail"))
    assert outcome.kind == "retry"
    assert outcome.status == 500
    assert outcome.retry_after_seconds is None
    assert outcome.reason.startswith("HTTP 500: boom xxx")
    assert len(outcome.reason) <= len("HTTP 500: ") + 200


@pytest.mark.parametrize(
    ("path", "status", "after"),
    [
        ("/busy-seconds", 429, 120),
        ("/busy-date", 503, 90),
        ("/busy-forever", 429, MAX_RETRY_AFTER_SECONDS),
        ("/busy", 503, None),
        ("/request-timeout", 408, None),
    ],
)
def test_busy_answers_are_retried_after_what_the_receiver_asks(
    receiver: Receiver, path: str, status: int, after: int | None
) -> None:
    outcome = send(receiver.url(path))
    assert (outcome.kind, outcome.status, outcome.retry_after_seconds) == ("retry", status, after)


def test_a_410_means_the_channel_is_gone(receiver: Receiver) -> None:
    assert send(receiver.url("/gone")) == SendResult("gone", 410, "HTTP 410: channel_is_archived")


def test_a_redirect_is_rejected_and_not_followed(receiver: Receiver) -> None:
    outcome = send(receiver.url("/moved"))
    assert (outcome.kind, outcome.status) == ("rejected", 302)
    assert "not followed" in outcome.reason
    assert [seen.path for seen in receiver.seen] == ["/moved"]


@pytest.mark.parametrize(("path", "status"), [("/bad", 400), ("/forbidden", 403), ("/nope", 404)])
def test_other_4xx_are_rejected(receiver: Receiver, path: str, status: int) -> None:
    outcome = send(receiver.url(path))
    assert (outcome.kind, outcome.status) == ("rejected", status)


def test_a_large_answer_is_read_only_in_part(receiver: Receiver) -> None:
    outcome = send(receiver.url("/big"))
    assert outcome.kind == "delivered"
    assert outcome.reason == "HTTP 200: " + "y" * 200


def test_a_receiver_that_does_not_answer_in_time_is_retried(receiver: Receiver) -> None:
    started = time.monotonic()
    outcome = send(receiver.url("/slow"), timeout_seconds=0.3)
    assert time.monotonic() - started < 5
    assert (outcome.kind, outcome.status) == ("retry", None)
    assert "0.3 s" in outcome.reason


def test_the_time_limit_is_for_the_whole_attempt_not_each_read(receiver: Receiver) -> None:
    # The receiver sends a byte every 50 ms for 5 s: no single read waits long, the whole does.
    started = time.monotonic()
    outcome = send(receiver.url("/drip"), timeout_seconds=0.5)
    elapsed = time.monotonic() - started
    assert (outcome.kind, outcome.status) == ("retry", None)
    assert elapsed < 3, elapsed


def test_a_refused_connection_is_retried(connects: list[Any]) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    outcome = send(f"http://127.0.0.1:{port}/ok")
    assert (outcome.kind, outcome.status) == ("retry", None)
    assert outcome.reason == "the connection failed (ConnectionRefusedError)"
    assert connects == [("127.0.0.1", port)]


def test_a_name_that_does_not_resolve_is_retried() -> None:
    outcome = send("http://no-such-host.invalid/hook")
    assert (outcome.kind, outcome.reason) == ("retry", "the host name did not resolve")


def test_no_reason_ever_holds_the_url(receiver: Receiver) -> None:
    for path in (SECRET_PATH, SECRET_PATH + "?token=abc"):
        for url in (receiver.url(path), f"http://10.0.0.1{path}", f"ftp://h{path}"):
            assert "s3cr3t" not in send(url, allow_private="10.0.0.1" not in url).reason


# -- the address guard ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "240.0.0.1",
        "[::1]",
        "[::]",
        "[fe80::1]",
        "[fc00::1]",
        "[ff02::1]",
        "[::ffff:127.0.0.1]",
        "[::ffff:169.254.169.254]",
        "localhost",
        "2130706433",  # 127.0.0.1 as one number
        "0177.0.0.1",  # and in octal
        "127.1",
    ],
)
def test_a_private_or_reserved_destination_is_refused_without_connecting(
    receiver: Receiver, connects: list[Any], host: str
) -> None:
    outcome = send(receiver.url("/ok", host=host), allow_private=False)
    assert outcome == SendResult(
        "rejected", None, "the host resolves to a private or reserved address"
    )
    assert connects == []
    assert receiver.seen == []


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://example.com/hook",
        "gopher://example.com/",
        "//example.com/hook",
        "http:///hook",
        "http://user:pass@example.com/hook",
        "http://example.com:99999/hook",
        "http://example.com/a b",
        "http://example.com/\r\nX-Injected: 1",
    ],
)
def test_a_url_that_is_not_a_plain_http_url_is_refused_before_resolving(
    connects: list[Any], resolutions: list[str], url: str
) -> None:
    outcome = send(url, allow_private=False)
    assert (outcome.kind, outcome.status) == ("rejected", None)
    assert resolutions == []
    assert connects == []


def test_even_the_local_runtime_sends_only_over_http(
    connects: list[Any], resolutions: list[str]
) -> None:
    assert send("file:///etc/passwd", allow_private=True).kind == "rejected"
    assert (resolutions, connects) == ([], [])


def test_a_name_resolving_to_a_public_and_a_private_address_is_refused(
    monkeypatch: pytest.MonkeyPatch, connects: list[Any]
) -> None:
    def getaddrinfo(host: str, port: int, *args: Any, **kwargs: Any) -> Any:
        stream = socket.SOCK_STREAM
        return [
            (socket.AF_INET, stream, 6, "", ("93.184.216.34", port)),
            (socket.AF_INET, stream, 6, "", ("127.0.0.1", port)),
        ]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    assert send("http://mixed.example/hook", allow_private=False).kind == "rejected"
    assert connects == []


def test_the_name_is_resolved_once_and_the_address_resolved_is_the_one_connected(
    receiver: Receiver, connects: list[Any], resolutions: list[str]
) -> None:
    outcome = send(receiver.url("/ok", host="hooks.example"))
    assert outcome.kind == "delivered"
    assert resolutions == ["hooks.example"]
    assert connects == [("127.0.0.1", receiver.port)]
    assert receiver.seen[0].headers["host"] == f"hooks.example:{receiver.port}"


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("93.184.216.34", True),
        ("8.8.8.8", True),
        ("2606:4700:4700::1111", True),
        ("::ffff:8.8.8.8", True),
        ("100.63.255.255", True),
        ("100.64.0.0", False),
        ("100.127.255.255", False),
        ("192.0.2.1", False),  # documentation
        ("198.18.0.1", False),  # benchmarking
        ("255.255.255.255", False),
        ("::ffff:10.0.0.1", False),
        ("::ffff:100.64.0.1", False),
        ("2001:db8::1", False),
        ("::127.0.0.1", False),
        # An IPv6 address that carries an IPv4 one reaches that IPv4 host: judged by it.
        ("::ffff:127.0.0.1", False),  # IPv4-mapped
        ("::7f00:1", False),  # IPv4-compatible (deprecated), 127.0.0.1
        ("::808:808", False),  # IPv4-compatible, even of a public address
        ("2002:7f00:1::1", False),  # 6to4 of 127.0.0.1
        ("2002:a00:1::1", False),  # 6to4 of 10.0.0.1
        ("2002:a9fe:a9fe::1", False),  # 6to4 of 169.254.169.254, the metadata service
        ("2002:808:808::1", True),  # 6to4 of 8.8.8.8
        ("64:ff9b::7f00:1", False),  # NAT64 of 127.0.0.1
        ("64:ff9b::a00:1", False),  # NAT64 of 10.0.0.1
        ("64:ff9b::a9fe:a9fe", False),  # NAT64 of 169.254.169.254
        ("64:ff9b::808:808", True),  # NAT64 of 8.8.8.8, as DNS64 answers for a public host
        ("64:ff9b:1::808:808", False),  # NAT64 for local use: its translator is private
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", False),  # Teredo
        ("2001::1", False),  # Teredo
        # Deprecated and special ranges.
        ("fec0::1", False),  # site-local
        ("feff:ffff::1", False),  # site-local, its last block
        ("fc00::1", False),  # unique local
        ("fe80::1", False),  # link-local
        ("100::1", False),  # discard-only
        ("3fff::1", False),  # documentation (RFC 9637)
        ("5f00::1", False),  # segment routing
        ("ff02::1", False),  # multicast
        ("::", False),
        ("::1", False),
        ("192.88.99.1", False),  # the 6to4 relays' anycast (deprecated)
        ("169.254.169.254", False),
        ("0.1.2.3", False),
        ("240.0.0.1", False),
        ("192.0.0.170", False),
    ],
)
def test_which_addresses_are_public(address: str, public: bool) -> None:
    assert is_public(ipaddress.ip_address(address)) is public


# -- https: the host is checked against the certificate, the address is not ----------------------


def certificate_for(name: str) -> tuple[bytes, bytes, bytes]:
    """A CA, and a certificate for ``name`` it signed: (CA PEM, certificate PEM, key PEM)."""
    now = dt.datetime.now(dt.UTC)

    def build(
        subject: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Name, signer: Any, ca: bool
    ) -> x509.Certificate:
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(issuer)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False
            )
        )
        if ca:
            builder = builder.add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
        else:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.DNSName(subject)]), critical=False
            ).add_extension(
                x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
            )
        return builder.sign(signer, hashes.SHA256())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Test CA")])
    ca = build("Test CA", ca_key, ca_name, ca_key, ca=True)
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = build(name, key, ca.subject, ca_key, ca=False)
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return ca.public_bytes(pem), leaf.public_bytes(pem), key_pem


@pytest.fixture
def tls_receiver(tmp_path: Any) -> Iterator[tuple[Receiver, ssl.SSLContext]]:
    ca_pem, cert_pem, key_pem = certificate_for("hooks.example")
    (tmp_path / "cert.pem").write_bytes(cert_pem)
    (tmp_path / "key.pem").write_bytes(key_pem)
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    running = start(server_side)
    trusting = ssl.create_default_context(cadata=ca_pem.decode())
    yield running, trusting
    running.release.set()
    running.server.shutdown()
    running.server.server_close()


def test_https_names_the_host_in_sni_and_checks_it_against_the_certificate(
    tls_receiver: tuple[Receiver, ssl.SSLContext], resolutions: list[str]
) -> None:
    receiver, trusting = tls_receiver
    url = receiver.url("/ok", host="hooks.example", scheme="https")
    outcome = send(url, tls_context=trusting)
    assert outcome == SendResult("delivered", 200, "HTTP 200: thanks")
    assert receiver.sni == ["hooks.example"]
    assert receiver.seen[0].headers["host"] == f"hooks.example:{receiver.port}"


@pytest.mark.parametrize("host", ["other.example", "127.0.0.1"])
def test_https_to_a_name_the_certificate_does_not_hold_is_not_sent(
    tls_receiver: tuple[Receiver, ssl.SSLContext], resolutions: list[str], host: str
) -> None:
    receiver, trusting = tls_receiver
    outcome = send(receiver.url("/ok", host=host, scheme="https"), tls_context=trusting)
    assert outcome == SendResult("retry", None, "the TLS certificate was not accepted")
    assert receiver.seen == []


def test_https_with_the_systems_trust_refuses_an_unknown_ca(
    tls_receiver: tuple[Receiver, ssl.SSLContext], resolutions: list[str]
) -> None:
    receiver, _ = tls_receiver
    outcome = send(receiver.url("/ok", host="hooks.example", scheme="https"))
    assert outcome.reason == "the TLS certificate was not accepted"
    assert receiver.seen == []


# -- Retry-After ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (None, None),
        ("0", 0),
        ("120", 120),
        (" 7 ", 7),
        ("86401", MAX_RETRY_AFTER_SECONDS),
        ("9" * 5000, MAX_RETRY_AFTER_SECONDS),
        (format_datetime(NOW + dt.timedelta(seconds=90), True), 90),
        (format_datetime(NOW - dt.timedelta(hours=1), True), 0),
        (format_datetime(NOW + dt.timedelta(days=3), True), MAX_RETRY_AFTER_SECONDS),
        ("Sun, 01 Mar 2026 12:00:30 GMT", 30),
        ("-5", None),
        ("1.5", None),
        ("soon", None),
        ("", None),
    ],
)
def test_retry_after_is_read_as_seconds_or_a_date(value: str | None, seconds: int | None) -> None:
    assert retry_after_seconds(value, NOW) == seconds


def test_a_date_a_fraction_of_a_second_away_is_waited_for_in_whole_seconds() -> None:
    date = format_datetime(NOW + dt.timedelta(seconds=90), True)
    assert retry_after_seconds(date, NOW + dt.timedelta(seconds=0.5)) == 90
