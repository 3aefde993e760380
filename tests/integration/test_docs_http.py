"""The API page at /docs over HTTP, as a browser meets it: the page through the API function
(payload 2.0), the assets it names served from the pinned Swagger UI package under their
digest for a year, the strict headers, the relative addresses that keep any base path, the
refusals, and no cost to other routes (nothing under /docs is imported until it is asked for)."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest

from tests.conftest import ROOT
from tests.integration import test_api_handler
from tests.support import Tenant
from vigil.entrypoints import api
from vigil.kit.http import HttpRequest
from vigil.transports.router import Router

# The API function's environment on moto, as its own tests set it up.
operator_secret = test_api_handler.operator_secret

HOST = "api123.execute-api.us-east-1.amazonaws.com"
PAGE = f"https://{HOST}/docs"
TYPES = {"js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8"}


def call(method: str, path: str) -> dict[str, Any]:
    """The API function's answer to a request as API Gateway (payload 2.0) passes it."""
    event = test_api_handler.sample("openapi.json")
    event["rawPath"] = path
    event["requestContext"]["http"].update(method=method, path=path)
    event["headers"]["host"] = HOST
    return api.handler(event)


class References(HTMLParser):
    """The addresses a page loads: stylesheets, icons and scripts, and any inline script."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.scripts: list[str | None] = []
        self.inline: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "link":
            self.links.append(attributes["href"] or "")
        if tag == "script":
            self.scripts.append(attributes.get("src"))
            self._in_script = True
        assert not any(name.startswith("on") for name in attributes), (tag, attrs)
        assert "style" not in attributes, (tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.inline.append(data)


def references(body: str) -> References:
    parser = References()
    parser.feed(body)
    return parser


@pytest.fixture
def page(operator_secret: str) -> dict[str, Any]:
    return call("GET", "/docs")


def test_the_page_is_html_with_a_strict_policy(page: dict[str, Any]) -> None:
    assert page["statusCode"] == 200
    headers = page["headers"]
    assert headers["content-type"] == "text/html; charset=utf-8"
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"
    policy = dict(
        directive.strip().split(" ", 1)
        for directive in headers["content-security-policy"].split(";")
    )
    assert policy["default-src"] == "'none'"
    assert policy["script-src"] == "'self'"
    assert policy["style-src"] == "'self'"
    assert policy["connect-src"] == "'self'"
    assert policy["frame-ancestors"] == "'none'"
    assert "unsafe" not in headers["content-security-policy"]
    assert headers["cache-control"] == "no-cache"


def test_the_page_carries_no_inline_script_and_names_only_relative_addresses(
    page: dict[str, Any],
) -> None:
    found = references(page["body"])
    assert found.inline == []
    assert len(found.scripts) == 2
    assert all(src is not None for src in found.scripts)
    addresses = [*found.links, *(src or "" for src in found.scripts)]
    for address in addresses:
        if address.startswith("data:"):
            continue
        # Relative, so a base path in front of the service is kept.
        assert not urlsplit(address).scheme, address
        assert not address.startswith("/"), address
        assert urlsplit(urljoin("https://vigil.example/base/docs", address)).path.startswith(
            "/base/docs/assets/"
        )


def test_every_asset_the_page_names_is_served_under_its_digest_for_a_year(
    page: dict[str, Any],
) -> None:
    found = references(page["body"])
    served = {}
    for address in [*found.links, *(src or "" for src in found.scripts)]:
        if address.startswith("data:"):
            continue
        path = urlsplit(urljoin(PAGE, address)).path
        response = call("GET", path)
        assert response["statusCode"] == 200, path
        headers = response["headers"]
        versioned = re.fullmatch(r"/docs/assets/(.+)\.([0-9a-f]{12})\.(\w+)", path)
        assert versioned is not None, path
        name, digest, ext = versioned.groups()
        body = response["body"].encode()
        assert hashlib.sha256(body).hexdigest()[:12] == digest
        assert headers["content-type"] == TYPES[ext]
        assert headers["cache-control"] == "public, max-age=31536000, immutable"
        assert headers["x-content-type-options"] == "nosniff"
        served[f"{name}.{ext}"] = body
    assert set(served) == {"swagger-ui.css", "swagger-ui-bundle.js", "swagger-init.js"}

    # Swagger UI's files are the pinned package's, byte for byte, and its version reads 3.1.
    from swagger_ui_bundle import swagger_ui_path

    for name in ("swagger-ui.css", "swagger-ui-bundle.js"):
        assert served[name] == (swagger_ui_path / name).read_bytes()
    assert re.search(r"swagger-ui-5\.\d+\.\d+$", str(swagger_ui_path))

    # The initializer loads the OpenAPI document beside the page, whatever the base path.
    (url,) = re.findall(r'url: "([^"]+)"', served["swagger-init.js"].decode())
    assert urljoin(PAGE, url) == f"https://{HOST}/openapi.json"
    assert (
        urljoin("https://vigil.example/base/docs", url) == "https://vigil.example/base/openapi.json"
    )
    document = call("GET", urlsplit(urljoin(PAGE, url)).path)
    assert json.loads(document["body"])["openapi"] == "3.1.0"


def test_a_trailing_slash_goes_back_to_the_page(operator_secret: str) -> None:
    response = call("GET", "/docs/")
    assert response["statusCode"] == 308
    location = response["headers"]["location"]
    assert urljoin(f"https://{HOST}/docs/", location) == PAGE
    assert (
        urljoin("https://vigil.example/base/docs/", location) == "https://vigil.example/base/docs"
    )


@pytest.mark.parametrize(
    "path",
    [
        "/docs/assets/swagger-ui-bundle.000000000000.js",
        "/docs/assets/swagger-ui-bundle.js",
        "/docs/x",
    ],
)
def test_an_unknown_path_under_docs_is_a_typed_404(operator_secret: str, path: str) -> None:
    response = call("GET", path)
    assert response["statusCode"] == 404
    assert json.loads(response["body"])["error"]["code"] == "not_found"


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
def test_methods_other_than_get_and_head_are_405(operator_secret: str, method: str) -> None:
    response = call(method, "/docs")
    assert response["statusCode"] == 405
    assert response["headers"]["allow"] == "GET, HEAD"
    assert json.loads(response["body"])["error"]["code"] == "invalid_argument"


def test_head_answers_as_get_does(tenant: Tenant) -> None:
    router = Router(tenant.app, frozenset())
    get = router.handle(HttpRequest("GET", "/docs", {}, b""))
    head = router.handle(HttpRequest("HEAD", "/docs", {}, b""))
    assert (head.status, head.headers) == (get.status, get.headers)


def test_other_routes_never_import_the_page_or_swagger_ui() -> None:
    """Cold starts of the MCP and REST paths pay nothing for the page: a fresh process serves
    them without importing it, and imports it on the first request under /docs."""
    script = """
import sys
from tests.support import Tenant, app_on
from vigil.clock import ManualClock
from vigil.stores.memory import MemoryStore
from vigil.kit.http import HttpRequest
from vigil.transports.router import Router

clock = ManualClock()
tenant = Tenant(app_on(MemoryStore(), clock), clock, "acme")
router = Router(tenant.app, frozenset())
auth = {"authorization": f"Bearer {tenant.operator_secret}"}
statuses = [
    router.handle(HttpRequest("GET", "/", {}, b"")).status,
    router.handle(HttpRequest("GET", "/openapi.json", {}, b"")).status,
    router.handle(HttpRequest("POST", "/v1/whoami", auth, b"{}")).status,
    router.handle(HttpRequest("GET", "/nope", {}, b"")).status,
]
page = ("swagger_ui_bundle", "vigil.transports.docs")
before = sorted(m for m in sys.modules if m.startswith(page))
statuses.append(router.handle(HttpRequest("GET", "/docs", {}, b"")).status)
after = sorted(m for m in sys.modules if m.startswith(page))
print(statuses, before, after)
"""
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == (
        "[200, 200, 200, 404, 200] [] ['swagger_ui_bundle', 'vigil.transports.docs']"
    )
