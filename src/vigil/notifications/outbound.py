"""One HTTP request to a URL that a user gave us (a POST, or a GET of a document), with the care
such a request needs.

- Only http and https URLs, without credentials in them.
- The host is resolved once, and every address it resolves to must be public: no private,
  loopback, link-local (the cloud's metadata service at 169.254.169.254 among them), multicast,
  reserved, unspecified or carrier-grade NAT (100.64.0.0/10) address, nor an IPv6 address that
  maps one of those; otherwise nothing is sent, nothing is even connected to. ``allow_private``
  lifts this for the local runtime, whose receivers are on the same machine.
- The connection goes to the address resolved, so a second resolution cannot swap it (DNS
  rebinding), with the URL's host in the Host header and, for https, in SNI and the certificate
  check.
- A redirect is a failure, never followed; the whole attempt (connect, TLS, send, response) has
  one time limit; at most 64 KiB of the response is read.

The result is a ``SendResult``: delivered, worth a retry (and when), gone for good, or rejected.
Its reason never holds the URL (a Slack webhook's URL is its secret), a header, or more than
200 characters of what the receiver answered.
"""

from __future__ import annotations

import http.client
import io
import ipaddress
import re
import socket
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, cast
from urllib.parse import urlsplit

from vigil.clock import Clock, SystemClock
from vigil.kit.retry_after import retry_after_seconds

SendResultKind = Literal["delivered", "retry", "gone", "rejected"]

MAX_RESPONSE_BYTES = 64 * 1024
MAX_REASON_BODY = 200
USER_AGENT = "Vigil-Notifications/1"
# Not public, though Python's is_global says they are (or did, before it learnt of them).
_NOT_PUBLIC = tuple(
    ipaddress.ip_network(network)
    for network in (
        "100.64.0.0/10",  # shared address space: carrier-grade NAT
        "192.88.99.0/24",  # the 6to4 relays' anycast, deprecated (RFC 7526)
        "3fff::/20",  # documentation (RFC 9637)
    )
)
# The well-known NAT64 prefix: a DNS64 resolver answers a host that has only an IPv4 address
# with that address under it, and the translator then connects to the IPv4 address.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_UNSAFE_URL = re.compile(r"[\x00-\x20\x7f]")
_SYSTEM_CLOCK = SystemClock()


@dataclass(frozen=True)
class SendResult:
    """What one POST came to.

    ``delivered``: a 2xx. ``retry``: a 5xx, 429 or 408, a timeout or a connection failure;
    ``retry_after_seconds`` is the receiver's Retry-After, if it sent one (capped at 24 h).
    ``gone``: a 410, the receiver is gone for good and its channel should be disabled.
    ``rejected``: any other answer (a 3xx, a 4xx) or a URL refused before connecting; a retry
    would fare no better."""

    kind: SendResultKind
    status: int | None  # the HTTP status; None when no response came
    reason: str
    retry_after_seconds: int | None = None


class _Refused(Exception):
    """The URL is not one we send to; nothing was connected to."""


@dataclass(frozen=True)
class _Target:
    scheme: str
    host: str  # ASCII: IDNA-encoded if it was not
    port: int
    authority: str  # the Host header
    path: str  # with the query


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self._at = time.monotonic() + seconds

    def left(self) -> float:
        left = self._at - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        return left


class _BoundedReader(io.RawIOBase):
    """The socket's bytes, each read bounded by what is left of the attempt's time: a receiver
    that answers a byte at a time cannot hold the sender past its limit."""

    def __init__(self, sock: socket.socket, deadline: _Deadline) -> None:
        self._sock = sock
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        self._sock.settimeout(self._deadline.left())
        return self._sock.recv_into(buffer)


class _BoundedSocket:
    """A connected socket as http.client uses it (sendall, makefile, close), bounded by the
    attempt's deadline; the socket is closed by the code that opened it."""

    def __init__(self, sock: socket.socket, deadline: _Deadline) -> None:
        self._sock = sock
        self._deadline = deadline

    def sendall(self, data: bytes) -> None:
        self._sock.settimeout(self._deadline.left())
        self._sock.sendall(data)

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(_BoundedReader(self._sock, self._deadline))

    def close(self) -> None:
        # http.client closes its connection as soon as the headers say "Connection: close",
        # before the body is read: the socket stays open until post() closes it.
        pass


def post(
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    timeout_seconds: float = 10,
    allow_private: bool = False,
    tls_context: ssl.SSLContext | None = None,
    clock: Clock = _SYSTEM_CLOCK,
) -> SendResult:
    """POST ``body`` with ``headers`` to ``url``, once, within ``timeout_seconds`` (connect, TLS,
    send and response together; the name resolution is the resolver's own). ``tls_context``
    replaces the system's trust (tests, a private CA); ``clock`` dates an HTTP-date
    Retry-After."""
    try:
        status, answered, content = _attempt(
            url, "POST", body, headers, timeout_seconds, allow_private, tls_context
        )
    except _Failed as failed:
        return SendResult("rejected" if failed.refused else "retry", None, failed.reason)
    return _judged(status, answered.get("Retry-After"), _excerpt(content), clock.now())


@dataclass(frozen=True)
class Fetched:
    """What one GET came to: a 200 whose body fits (``body``), or why not (``problem``)."""

    body: bytes | None
    problem: str
    headers: Mapping[str, str]


def get(
    url: str,
    *,
    max_bytes: int,
    timeout_seconds: float,
    accept: str,
    allow_private: bool = False,
    tls_context: ssl.SSLContext | None = None,
) -> Fetched:
    """GET ``url`` once, with the care ``post`` takes: only a public address, no redirect
    followed, one time limit for the whole attempt, and a body of at most ``max_bytes``."""
    try:
        status, answered, content = _attempt(
            url,
            "GET",
            None,
            {"accept": accept},
            timeout_seconds,
            allow_private,
            tls_context,
            max_bytes,
        )
    except _Failed as failed:
        return Fetched(None, failed.reason, {})
    headers = {name.lower(): value for name, value in answered.items()}
    if 300 <= status < 400:
        return Fetched(None, f"HTTP {status}: a redirect, not followed", headers)
    if status != 200:
        return Fetched(None, f"HTTP {status}", headers)
    if len(content) > max_bytes:
        return Fetched(None, f"the document is larger than {max_bytes} bytes", headers)
    return Fetched(content, "", headers)


class _Failed(Exception):
    """No answer came: why, in a line, and whether the URL was refused before connecting
    (then a retry would fare no better)."""

    def __init__(self, reason: str, refused: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.refused = refused


def _attempt(
    url: str,
    method: str,
    body: bytes | None,
    headers: Mapping[str, str],
    timeout_seconds: float,
    allow_private: bool,
    tls_context: ssl.SSLContext | None,
    limit: int = MAX_RESPONSE_BYTES,
) -> tuple[int, http.client.HTTPMessage, bytes]:
    """One request to ``url``, guarded (``post``'s docstring says how): its status, headers
    and at most ``limit`` + 1 bytes of its body; _Failed where no answer came."""
    try:
        target = _target(url)
        addresses = _resolve(target, allow_private)
        deadline = _Deadline(timeout_seconds)
        sock = _connect(target, addresses, deadline, tls_context)
        try:
            return _exchange(sock, target, method, body, headers, deadline, limit)
        finally:
            sock.close()
    except _Refused as refused:
        raise _Failed(str(refused), refused=True) from None
    except TimeoutError:
        raise _Failed(f"no answer within {timeout_seconds:g} s") from None
    except ssl.SSLCertVerificationError:
        raise _Failed("the TLS certificate was not accepted") from None
    except socket.gaierror:
        raise _Failed("the host name did not resolve") from None
    except (OSError, http.client.HTTPException) as error:
        raise _Failed(f"the connection failed ({type(error).__name__})") from None


def _target(url: str) -> _Target:
    if _UNSAFE_URL.search(url):
        raise _Refused("the URL holds a space or a control character")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise _Refused("only http and https URLs are sent to")
    if parts.username is not None or parts.password is not None:
        raise _Refused("the URL holds credentials, which are never sent")
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        raise _Refused("the URL's port is not a port") from None
    host = parts.hostname
    if not host:
        raise _Refused("the URL has no host")
    try:
        ascii_host = host if host.isascii() else host.encode("idna").decode()
    except UnicodeError:
        raise _Refused("the URL's host is not a valid name") from None
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    authority = f"[{ascii_host}]" if ":" in ascii_host else ascii_host
    if parts.port is not None:
        authority += f":{parts.port}"
    return _Target(scheme, ascii_host, port, authority, path)


def is_public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether ``address`` is one the Internet routes to someone else's server. An IPv6
    address that carries an IPv4 one the packet is delivered to (IPv4-mapped, 6to4, NAT64) is
    judged by that IPv4 address: ``2002:7f00:1::`` reaches 127.0.0.1 as surely as 127.0.0.1."""
    if isinstance(address, ipaddress.IPv6Address):
        carried = _carried_ipv4(address)
        if carried is not None:
            return is_public(carried)
        if address.is_site_local:  # fec0::/10, deprecated (RFC 3879), yet is_global in 3.11
            return False
    return not (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or any(address in network for network in _NOT_PUBLIC)
        or not address.is_global
    )


def _carried_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address a packet to ``address`` goes on to, if it is of a form that carries one.
    Teredo (2001::/32) and the IPv4-compatible form (::/96) carry one too, but are refused
    whatever they carry: neither is global."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


_SocketAddress = tuple[str, int] | tuple[str, int, int, int]
_Address = tuple[int, int, _SocketAddress]  # family, protocol, socket address


def _resolve(target: _Target, allow_private: bool) -> list[_Address]:
    """The host's addresses, resolved this once; refused if any of them is not public (a name
    that resolves both ways is refused too, whichever the connection would have chosen)."""
    found = socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    addresses: list[_Address] = []
    for family, _, proto, _, sockaddr in found:
        ip = ipaddress.ip_address(str(sockaddr[0]))
        if not allow_private and not is_public(ip):
            raise _Refused("the host resolves to a private or reserved address")
        addresses.append((family, proto, cast("_SocketAddress", sockaddr)))
    if not addresses:
        raise socket.gaierror("no address")
    return addresses


def _connect(
    target: _Target,
    addresses: list[_Address],
    deadline: _Deadline,
    tls_context: ssl.SSLContext | None,
) -> socket.socket:
    """A connection to the first of ``addresses`` that answers, over TLS for https (the name
    checked against the certificate is the URL's host, never the address)."""
    failure: OSError = OSError("no address answered")
    for family, proto, sockaddr in addresses:
        sock = socket.socket(family, socket.SOCK_STREAM, proto)
        try:
            sock.settimeout(deadline.left())
            sock.connect(sockaddr)
        except TimeoutError:
            sock.close()
            raise
        except OSError as error:
            sock.close()
            failure = error
            continue
        if target.scheme == "http":
            return sock
        context = tls_context or ssl.create_default_context()
        try:
            sock.settimeout(deadline.left())
            return context.wrap_socket(sock, server_hostname=target.host)
        except BaseException:
            sock.close()
            raise
    raise failure


def _exchange(
    sock: socket.socket,
    target: _Target,
    method: str,
    body: bytes | None,
    headers: Mapping[str, str],
    deadline: _Deadline,
    limit: int,
) -> tuple[int, http.client.HTTPMessage, bytes]:
    """Send the request on ``sock`` and read the answer: its status, its headers, and at most
    ``limit`` + 1 bytes of its body (one more than a caller takes, so it sees one too long)."""
    connection = http.client.HTTPConnection(target.host, target.port)
    # The connection is the one made above, to the address resolved: http.client never
    # resolves or connects itself.
    connection.sock = cast("socket.socket", _BoundedSocket(sock, deadline))
    sent = {"user-agent": USER_AGENT}
    sent.update((name.lower(), value) for name, value in headers.items())
    sent.pop("content-length", None)  # http.client counts the body itself
    sent["host"] = target.authority
    sent["connection"] = "close"
    connection.request(method, target.path, body=body, headers=sent)
    response = connection.getresponse()
    try:
        content = response.read(limit + 1)
    except (OSError, http.client.HTTPException):
        content = b""  # the status is the answer; the body only explains it
    return response.status, response.headers, content


def _excerpt(content: bytes) -> str:
    text = " ".join(content[: MAX_REASON_BODY * 4].decode(errors="replace").split())
    text = "".join(char for char in text if char.isprintable())
    return text[:MAX_REASON_BODY]


def _judged(status: int, retry_after: str | None, excerpt: str, now: datetime) -> SendResult:
    reason = f"HTTP {status}" + (f": {excerpt}" if excerpt else "")
    if 200 <= status < 300:
        return SendResult("delivered", status, reason)
    if status == 410:
        return SendResult("gone", status, reason)
    if status in (408, 429) or status >= 500:
        return SendResult("retry", status, reason, retry_after_seconds(retry_after, now))
    if 300 <= status < 400:
        return SendResult("rejected", status, f"HTTP {status}: a redirect, not followed")
    return SendResult("rejected", status, reason)
