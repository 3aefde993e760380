"""Fetching a client's metadata document: the guarded GET against a real server on loopback
(its size and time limits, no redirect followed, the address guard), and the rules on what
a document's URL and Cache-Control may be."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from vigil.notifications.outbound import Fetched, get
from vigil.oauth.documents import (
    MAX_CACHE_SECONDS,
    MAX_DOCUMENT_BYTES,
    MIN_CACHE_SECONDS,
    DocumentRefused,
    Documents,
    HostRule,
    is_document_url,
    redirect_uri_allowed,
)

DOCUMENT = {"client_id": "x", "redirect_uris": ["https://host.example/cb"]}
URL = "https://host.example/client.json"
NOW = datetime(2026, 12, 7, tzinfo=UTC)


class Handler(http.server.BaseHTTPRequestHandler):
    release = threading.Event()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/slow":
            self.release.wait(5)
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/doc")
            self.end_headers()
            return
        body = {
            "/doc": json.dumps(DOCUMENT).encode(),
            "/big": b" " * (MAX_DOCUMENT_BYTES + 1),
            "/exact": b" " * MAX_DOCUMENT_BYTES,
            "/slow": b"{}",
        }.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header("Cache-Control", "max-age=600")
        self.end_headers()
        self.wfile.write(body or b"")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    running = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{running.server_address[1]}"
    Handler.release.set()
    running.shutdown()


def fetch(url: str, allow_private: bool = True, timeout: float = 2) -> Fetched:
    return get(
        url,
        max_bytes=MAX_DOCUMENT_BYTES,
        timeout_seconds=timeout,
        accept="application/json",
        allow_private=allow_private,
    )


def test_a_document_is_read_with_its_headers(server: str) -> None:
    fetched = fetch(f"{server}/doc")
    assert json.loads(fetched.body or b"") == DOCUMENT
    assert fetched.headers["cache-control"] == "max-age=600"


def test_a_document_over_the_limit_is_refused_and_one_at_it_is_read(server: str) -> None:
    assert (
        fetch(f"{server}/big").problem == f"the document is larger than {MAX_DOCUMENT_BYTES} bytes"
    )
    assert fetch(f"{server}/exact").body == b" " * MAX_DOCUMENT_BYTES


def test_a_slow_server_is_given_up_on_at_the_time_limit(server: str) -> None:
    started = time.monotonic()
    fetched = fetch(f"{server}/slow", timeout=0.5)
    assert fetched.body is None
    assert fetched.problem == "no answer within 0.5 s"
    assert time.monotonic() - started < 2


def test_a_redirect_is_not_followed(server: str) -> None:
    assert fetch(f"{server}/redirect").problem == "HTTP 302: a redirect, not followed"


def test_another_status_is_a_problem(server: str) -> None:
    assert fetch(f"{server}/missing").problem == "HTTP 404"


def test_a_private_address_is_refused_without_connecting(server: str) -> None:
    fetched = fetch(f"{server}/doc", allow_private=False)
    assert fetched.problem == "the host resolves to a private or reserved address"


@pytest.mark.parametrize(
    ("client_id", "usable"),
    [
        ("https://host.example/client.json", True),
        ("https://host.example", False),  # no path
        ("https://host.example/", False),
        ("http://host.example/client.json", False),
        ("https://host.example/client.json#x", False),
        ("https://user:pw@host.example/client.json", False),
        ("https://host.example/a/../client.json", False),
        ("vgc_aaaaaaaaaaaaaaaa", False),
    ],
)
def test_which_client_ids_are_document_urls(client_id: str, usable: bool) -> None:
    assert is_document_url(client_id) is usable


@pytest.mark.parametrize(
    ("uri", "allowed"),
    [
        ("https://claude.ai/api/mcp/auth_callback", True),
        ("http://127.0.0.1:33418/callback", True),
        ("http://localhost:6274/oauth/callback", True),
        ("cursor://anysphere.cursor-mcp/oauth/callback", True),
        ("com.example.app:/callback", True),
        ("http://host.example/callback", False),
        ("javascript:alert(1)", False),
        ("https://host.example/cb#x", False),
        ("myapp:/callback", False),  # a private-use scheme is named after a domain
    ],
)
def test_which_redirect_uris_a_client_may_use(uri: str, allowed: bool) -> None:
    assert redirect_uri_allowed(uri) is allowed


class Counting:
    def __init__(self, cache_control: str = "max-age=600") -> None:
        self.calls = 0
        self.cache_control = cache_control

    def __call__(self, url: str) -> Fetched:
        self.calls += 1
        document = {"client_id": url, "redirect_uris": ["https://host.example/cb"]}
        return Fetched(json.dumps(document).encode(), "", {"cache-control": self.cache_control})


@pytest.mark.parametrize(
    ("cache_control", "kept_seconds"),
    [
        ("max-age=600", 600),
        ("public, max-age=5", MIN_CACHE_SECONDS),
        ("max-age=999999", MAX_CACHE_SECONDS),
        ("", MIN_CACHE_SECONDS),
        ("no-store", 0),
        ("no-cache, max-age=600", 0),
    ],
)
def test_a_document_is_kept_as_its_cache_control_says_within_bounds(
    cache_control: str, kept_seconds: int
) -> None:
    fetch = Counting(cache_control)
    documents = Documents(fetch)
    documents.client(URL, NOW)
    documents.client(URL, NOW + timedelta(seconds=kept_seconds - 1))
    assert fetch.calls == (1 if kept_seconds > 1 else 2)
    documents.client(URL, NOW + timedelta(seconds=kept_seconds))
    assert fetch.calls == (2 if kept_seconds > 1 else 3)


def test_a_document_with_no_name_is_named_by_its_host() -> None:
    client = Documents(Counting()).client(URL, NOW)
    assert client.name == "host.example"
    assert client.source == "metadata_document"


def test_an_operator_rule_decides_before_anything_is_fetched() -> None:
    fetch = Counting()
    documents = Documents(fetch, HostRule.parse("claude.ai, chatgpt.com", "evil.claude.ai"))
    with pytest.raises(DocumentRefused, match="not accepted here"):
        documents.client(URL, NOW)
    with pytest.raises(DocumentRefused, match="not accepted here"):
        documents.client("https://evil.claude.ai/x.json", NOW)
    documents.client("https://app.claude.ai/x.json", NOW)
    assert fetch.calls == 1
