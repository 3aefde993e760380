"""Client ID Metadata Documents: a client whose client_id is an https URL is described by the
JSON document at that URL (draft-ietf-oauth-client-id-metadata-document), fetched when a
sign-in needs it, never registered.

The fetch takes the care a webhook's POST takes (vigil.notifications.outbound: public
addresses only, no redirect, one time limit) and more: at most MAX_DOCUMENT_BYTES, JSON, a
``client_id`` equal to the URL, redirect URIs of a kind a client may use, no client secret. An
operator may allow only some hosts, or refuse some (OAUTH_CLIENT_HOSTS, OAUTH_BLOCKED_CLIENT_
HOSTS). A document is kept in this process as long as its Cache-Control allows (between
MIN_CACHE_SECONDS and MAX_CACHE_SECONDS; never one that failed)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from vigil.grants.records import Client

if TYPE_CHECKING:
    from vigil.notifications.outbound import Fetched

MAX_DOCUMENT_BYTES = 5 * 1024
FETCH_SECONDS = 5.0
MIN_CACHE_SECONDS = 60
MAX_CACHE_SECONDS = 24 * 60 * 60
_MAX_AGE = re.compile(r"(?:^|,)\s*max-age\s*=\s*(\d+)", re.IGNORECASE)
_NO_STORE = re.compile(r"(?:^|,)\s*no-(?:store|cache)\b", re.IGNORECASE)
_MAX_NAME = 100
_MAX_REDIRECTS = 10

Fetch = Callable[[str], "Fetched"]


class DocumentRefused(Exception):
    """The client_id names no usable document; the message says why, in a line."""


def is_document_url(client_id: str) -> bool:
    """Whether ``client_id`` is one this server resolves as a metadata document: an https URL
    with a path, no fragment and no credentials (the draft's rules)."""
    parts = urlsplit(client_id)
    return (
        parts.scheme == "https"
        and bool(parts.hostname)
        and parts.path not in ("", "/")
        and not parts.fragment
        and parts.username is None
        and parts.password is None
        and "/./" not in parts.path
        and "/../" not in parts.path
    )


def redirect_uri_allowed(uri: str) -> bool:
    """A redirect URI a client may register: https; http only to the loopback interface (a
    native app, RFC 8252 7.3); or a private-use scheme named after a domain (RFC 8252 7.1:
    ``com.example.app:/callback``, ``cursor://...``). Never a fragment."""
    parts = urlsplit(uri)
    if parts.fragment or not parts.scheme:
        return False
    if parts.scheme == "https":
        return bool(parts.hostname)
    if parts.scheme == "http":
        return parts.hostname in ("127.0.0.1", "::1", "localhost")
    return parts.scheme not in ("javascript", "data", "file", "vbscript", "blob", "about") and (
        "." in parts.scheme or parts.scheme in ("cursor", "vscode", "vscode-insiders", "windsurf")
    )


@dataclass
class HostRule:
    """The operator's rule on documents' hosts: if ``allowed`` names any, only those (and
    their subdomains); never the ``blocked`` ones."""

    allowed: tuple[str, ...] = ()
    blocked: tuple[str, ...] = ()

    @classmethod
    def parse(cls, allowed: str, blocked: str) -> HostRule:
        def hosts(text: str) -> tuple[str, ...]:
            return tuple(h.strip().lower().lstrip(".") for h in text.split(",") if h.strip())

        return cls(hosts(allowed), hosts(blocked))

    def admits(self, host: str) -> bool:
        def under(names: tuple[str, ...]) -> bool:
            return any(host == name or host.endswith(f".{name}") for name in names)

        return not under(self.blocked) and (not self.allowed or under(self.allowed))


@dataclass
class Documents:
    fetch: Fetch
    hosts: HostRule = field(default_factory=HostRule)
    _kept: dict[str, tuple[datetime, Client]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def client(self, client_id: str, now: datetime) -> Client:
        """The client ``client_id``'s document describes; DocumentRefused if it names none."""
        if not is_document_url(client_id):
            raise DocumentRefused("a client_id URL must be https, with a path")
        host = (urlsplit(client_id).hostname or "").lower()
        if not self.hosts.admits(host):
            raise DocumentRefused(f"clients from {host} are not accepted here")
        with self._lock:
            kept = self._kept.get(client_id)
        if kept is not None and kept[0] > now:
            return kept[1]
        fetched = self.fetch(client_id)
        if fetched.body is None:
            raise DocumentRefused(f"its metadata document could not be read: {fetched.problem}")
        client = _described(client_id, fetched.body)
        seconds = _cache_seconds(fetched.headers.get("cache-control", ""))
        if not seconds:
            return client
        with self._lock:
            if len(self._kept) > 1000:
                self._kept.clear()
            self._kept[client_id] = (now + timedelta(seconds=seconds), client)
        return client


def _cache_seconds(cache_control: str) -> int:
    if _NO_STORE.search(cache_control):
        return 0
    found = _MAX_AGE.search(cache_control)
    seconds = int(found.group(1)) if found else MIN_CACHE_SECONDS
    return max(MIN_CACHE_SECONDS, min(MAX_CACHE_SECONDS, seconds))


def _described(client_id: str, body: bytes) -> Client:
    try:
        document: Any = json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise DocumentRefused("its metadata document is not JSON") from None
    if not isinstance(document, dict):
        raise DocumentRefused("its metadata document is not a JSON object")
    if document.get("client_id") != client_id:
        raise DocumentRefused("its metadata document names another client_id")
    if "client_secret" in document or "client_secret_expires_at" in document:
        raise DocumentRefused("a metadata document may not hold a client secret")
    method = document.get("token_endpoint_auth_method", "none")
    if method != "none":
        raise DocumentRefused("a client known by its document authenticates with none")
    uris = document.get("redirect_uris")
    if (
        not isinstance(uris, list)
        or not uris
        or len(uris) > _MAX_REDIRECTS
        or not all(isinstance(uri, str) and redirect_uri_allowed(uri) for uri in uris)
    ):
        raise DocumentRefused("its metadata document has no usable redirect_uris")
    name = document.get("client_name")
    host = urlsplit(client_id).hostname or client_id
    shown = name.strip()[:_MAX_NAME] if isinstance(name, str) and name.strip() else host
    return Client(
        client_id=client_id,
        name=shown,
        redirect_uris=tuple(uris),
        auth_method="none",
        secret_hash=None,
        source="metadata_document",
    )
