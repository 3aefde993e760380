"""Toolsets chosen per connection and listings filtered by who asks: what ``tools/list`` shows,
read from each request's URL and header (MCP is stateless here), and what it does not change
(who may call what)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.support import Tenant, served_over_http
from vigil import catalog
from vigil.kit.http import HttpRequest
from vigil.transports.router import Router

SRC = ROOT / "src"
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
# What only operators may call, and what people may call too, as the README lists them.
OPERATORS_ONLY = {
    "register",
    "get_usage",
    "list_audit_events",
    "create_channel",
    "list_channels",
    "rotate_channel_secret",
    "set_channel_state",
    "delete_channel",
    "test_channel",
    "list_delivery_failures",
    "replay_delivery",
    "pause_switches",
    "resume_switches",
}
OVERSIGHT = {
    "post_instruction",
    "list_sessions",
    "acknowledge_alert",
    "list_switches",
    "list_deaths",
    "list_pauses",
}


class Door:
    """The MCP endpoint behind the router, as a host reaches it: a URL, headers and a body."""

    def __init__(self, tenant: Tenant) -> None:
        self.router = Router(tenant.app, frozenset())

    def post(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        secret: str | None = None,
        query: dict[str, str] | None = None,
        header: str | None = None,
    ) -> tuple[int, dict[str, Any]]:
        headers = dict(HEADERS)
        if secret:
            headers["authorization"] = f"Bearer {secret}"
        if header is not None:
            headers["x-mcp-toolsets"] = header
        message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
        request = HttpRequest("POST", "/mcp", headers, json.dumps(message).encode())
        request.query = query or {}
        response = self.router.handle(request)
        return response.status, json.loads(response.body)

    def listed(self, **options: Any) -> list[str]:
        status, reply = self.post("tools/list", **options)
        assert status == 200, reply
        return [tool["name"] for tool in reply["result"]["tools"]]

    def call(self, name: str, arguments: dict[str, Any], **options: Any) -> dict[str, Any]:
        status, reply = self.post("tools/call", {"name": name, "arguments": arguments}, **options)
        assert status == 200, reply
        result: dict[str, Any] = reply["result"]
        return result


@pytest.fixture
def door(tenant: Tenant) -> Door:
    return Door(tenant)


def in_toolsets(*names: str) -> list[str]:
    chosen = {
        name for toolset in catalog.TOOLSETS if toolset.name in names for name in toolset.tools
    }
    return [name for name in catalog.DECLARED_IN if name in chosen]


def refusal(result: dict[str, Any]) -> str:
    assert result["isError"] is True
    return str(json.loads(result["content"][0]["text"])["error"]["code"])


# -- the toolsets -------------------------------------------------------------------------


def test_every_tool_is_in_exactly_one_toolset_and_each_says_what_it_is_for() -> None:
    named = [name for toolset in catalog.TOOLSETS for name in toolset.tools]
    assert sorted(named) == sorted(catalog.DECLARED_IN)
    for toolset in catalog.TOOLSETS:
        assert toolset.tools, toolset.name
        assert toolset.summary
        assert "\n" not in toolset.summary
    assert {"all", "default"}.isdisjoint(toolset.name for toolset in catalog.TOOLSETS)


def test_the_default_is_what_a_worker_needs_and_at_most_40_tools() -> None:
    default = in_toolsets(*catalog.DEFAULT_TOOLSETS)
    assert len(default) <= 40
    # Stay alive, take leases, receive, ask (and answer what it is asked).
    needed = {"heartbeat", "acquire_lease", "session_heartbeat", "receive", "acknowledge", "ask"}
    assert needed <= set(default)
    assert not (OPERATORS_ONLY | OVERSIGHT) & set(default)


# -- listings by who asks -----------------------------------------------------------------


def test_without_a_credential_the_listing_is_the_agent_default(door: Door) -> None:
    assert door.listed() == in_toolsets(*catalog.DEFAULT_TOOLSETS)


def test_a_credential_that_is_not_valid_is_shown_no_listing(door: Door, tenant: Tenant) -> None:
    """A bad credential is answered 401, never with another principal's listing: the host
    learns that it must sign in again (a credential left out is the anonymous case above)."""
    forged = tenant.operator_secret[:-4] + "AAAA"
    status, reply = door.post("tools/list", secret=forged, query={"toolsets": "all"})
    assert status == 401
    assert "result" not in reply
    assert reply["error"]["data"]["code"] == "unauthenticated"


def test_a_worker_agent_never_sees_operator_or_overseer_tools(door: Door, tenant: Tenant) -> None:
    _, agent = tenant.register(kind="agent")
    _, service = tenant.register(kind="service")
    for secret in (agent, service):
        listed = door.listed(secret=secret, query={"toolsets": "all"})
        assert not (OPERATORS_ONLY | OVERSIGHT) & set(listed)
        # Its own secret is its to rotate: that administration tool it may call, so it sees it.
        assert {"heartbeat", "ask", "stage_attachment", "rotate_secret"} <= set(listed)
        assert door.listed(secret=secret) == in_toolsets(*catalog.DEFAULT_TOOLSETS)


def test_a_person_sees_what_people_may_call(door: Door, tenant: Tenant) -> None:
    _, person = tenant.register(kind="person")
    listed = set(door.listed(secret=person, query={"toolsets": "all"}))
    assert listed >= OVERSIGHT
    assert not OPERATORS_ONLY & listed


def test_an_operator_may_list_every_tool(door: Door, tenant: Tenant) -> None:
    everything = door.listed(secret=tenant.operator_secret, query={"toolsets": "all"})
    assert everything == list(catalog.DECLARED_IN)
    # Administration is chosen, never the default, even for an operator.
    assert door.listed(secret=tenant.operator_secret) == in_toolsets(*catalog.DEFAULT_TOOLSETS)


# The tools people oversee with, and a call of each that a person may make.
OVERSEEING = [
    ("list_switches", {}),
    ("list_deaths", {}),
    ("list_pauses", {}),
    ("list_sessions", {}),
    ("post_instruction", {"sessionId": "s-1", "body": "stop", "idempotencyKey": "k"}),
    ("acknowledge_alert", {"event_id": "evt_" + "a" * 26}),
]


@pytest.mark.parametrize(("name", "arguments"), OVERSEEING, ids=[n for n, _ in OVERSEEING])
def test_what_a_worker_agent_is_not_shown_it_is_refused_and_a_person_is_not(
    door: Door, tenant: Tenant, name: str, arguments: dict[str, Any]
) -> None:
    """The listing and the refusal read one declaration, so they cannot disagree."""
    _, agent = tenant.register(kind="agent")
    _, person = tenant.register(kind="person")
    assert name not in door.listed(secret=agent, query={"toolsets": "all"})
    assert refusal(door.call(name, arguments, secret=agent)) == "forbidden"
    assert name in door.listed(secret=person, query={"toolsets": "all"})
    answer = door.call(name, arguments, secret=person)
    assert not answer["isError"] or refusal(answer) == "not_found"


# -- choosing toolsets --------------------------------------------------------------------


def test_toolsets_are_chosen_on_the_url(door: Door, tenant: Tenant) -> None:
    chosen = door.listed(secret=tenant.operator_secret, query={"toolsets": "liveness,requests"})
    assert chosen == in_toolsets("liveness", "requests")


def test_toolsets_are_chosen_in_a_header(door: Door, tenant: Tenant) -> None:
    chosen = door.listed(secret=tenant.operator_secret, header=" files , administration ")
    assert chosen == in_toolsets("files", "administration")


def test_the_url_and_the_header_add_up_and_default_names_the_default(door: Door) -> None:
    chosen = door.listed(query={"toolsets": "files"}, header="default")
    assert chosen == in_toolsets("files", *catalog.DEFAULT_TOOLSETS)
    assert door.listed(query={"toolsets": ""}) == in_toolsets(*catalog.DEFAULT_TOOLSETS)


def test_each_request_carries_its_own_choice(door: Door, tenant: Tenant) -> None:
    secret = tenant.operator_secret
    assert door.listed(secret=secret, header="liveness") == in_toolsets("liveness")
    assert door.listed(secret=secret, header="files") == in_toolsets("files")
    assert door.listed(secret=secret) == in_toolsets(*catalog.DEFAULT_TOOLSETS)


@pytest.mark.parametrize("method", ["initialize", "ping", "tools/list", "tools/call"])
def test_an_unknown_toolset_is_refused_naming_the_valid_ones(
    door: Door, tenant: Tenant, method: str
) -> None:
    before = tenant.call("list_agents")
    params = {"name": "register", "arguments": {"kind": "agent", "name": "x"}}
    status, reply = door.post(
        method,
        params if method == "tools/call" else {},
        secret=tenant.operator_secret,
        query={"toolsets": "liveness,livenes"},
    )
    assert status == 400
    assert reply["error"]["code"] == -32602
    assert "livenes" in reply["error"]["message"]
    data = reply["error"]["data"]
    assert data["unknown"] == ["livenes"]
    assert data["valid"] == [t.name for t in catalog.TOOLSETS] + ["all", "default"]
    assert tenant.call("list_agents") == before
    status, reply = door.post(method, {}, header="Liveness")
    assert (status, reply["error"]["data"]["unknown"]) == (400, ["Liveness"])


def test_a_tool_outside_the_chosen_toolsets_is_callable_by_who_may_call_it(
    door: Door, tenant: Tenant
) -> None:
    """The listing is about the model's context, not authority: the credential's role
    decides what runs, whatever the connection lists."""
    _, agent = tenant.register(kind="agent")
    assert "whoami" not in door.listed(secret=agent, header="liveness")
    me = door.call("whoami", {}, secret=agent, header="liveness")
    assert me["isError"] is False
    assert "register" not in door.listed(secret=agent, query={"toolsets": "all"})
    refused = door.call("register", {"kind": "agent", "name": "x"}, secret=agent, header="all")
    assert refusal(refused) == "forbidden"


def test_the_browser_may_send_the_toolsets_header(door: Door) -> None:
    request = HttpRequest("OPTIONS", "/mcp", {"origin": "https://app.example"}, b"")
    door.router.allowed_origins = frozenset({"https://app.example"})
    allowed = door.router.handle(request).headers["access-control-allow-headers"]
    assert "x-mcp-toolsets" in allowed.split(", ")


# -- the stdio bridge ---------------------------------------------------------------------


@pytest.fixture
def served(door: Door) -> Iterator[str]:
    with served_over_http(door.router) as url:
        yield url


def bridge(url: str, secret: str, *options: str, lines: list[dict[str, Any]]) -> Any:
    """``vigil mcp`` in its own process, as a host launches it."""
    done = subprocess.run(
        [sys.executable, "-m", "vigil", "mcp", "--endpoint", url, *options],
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(SRC), "VIGIL_SECRET": secret},
        check=False,
    )
    return done


def test_vigil_mcp_passes_its_toolsets_upstream(served: str, tenant: Tenant) -> None:
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    done = bridge(served, tenant.operator_secret, "--toolsets", "liveness,files", lines=[listing])
    assert done.returncode == 0, done.stderr
    names = [tool["name"] for tool in json.loads(done.stdout)["result"]["tools"]]
    assert names == in_toolsets("liveness", "files")


def test_vigil_mcp_says_an_unknown_toolset_in_one_line(served: str, tenant: Tenant) -> None:
    done = bridge(served, tenant.operator_secret, "--toolsets", "nope", lines=[])
    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: ")
    assert "nope" in line
    assert "liveness" in line
