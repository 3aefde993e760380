"""Waiting on a request as an MCP task, on the local runtime (DynamoDB Local): a host on the
official Python SDK's client declares the Tasks extension, calls ``ask`` and polls the task,
while a person, in another HTTP client, decides on the console; the host gets the decision as
the task's result. Another host cancels its task, and the request is withdrawn."""

from __future__ import annotations

import html
import re
from contextlib import AsyncExitStack
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.e2e.clients import open_session
from tests.e2e.test_console_sign_out import Client as Browser
from tests.integration.test_tasks_host import (
    ANY_RESULT,
    CancelTask,
    PollingHost,
    TaskParams,
)
from vigil.transports.tasks import POLL_INTERVAL_MS

pytestmark = pytest.mark.e2e


def field(text: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]*)"', text)
    assert found is not None, name
    return html.unescape(found.group(1))


def decide_on_the_console(base: str, secret: str, request_id: str, outcome: str) -> None:
    browser = Browser(base)
    csrf = browser.csrf("/console/sign-in")
    assert browser.send("POST", "/console/sign-in", {"csrf": csrf, "secret": secret})[0] == 303
    status, page = browser.send("GET", f"/console/request?id={request_id}")
    assert status == 200
    form = {name: field(page, name) for name in ("csrf", "id", "version")}
    decided = {**form, "outcome": outcome, "confirm": "yes"}
    assert browser.send("POST", "/console/requests/reply", decided)[0] == 303


def people(state: dict[str, Any]) -> dict[str, dict[str, Any]]:
    async def register() -> dict[str, dict[str, Any]]:
        async with AsyncExitStack() as stack:
            operator = await open_session(stack, state["mcp_url"], state["operator_secret"])
            ann = await operator.call("register", kind="agent", name="task-host")
            pat = await operator.call("register", kind="person", name="Pat Tasks")
            return {"ann": ann, "pat": pat}

    return anyio.run(register)


def ask_as_a_task(url: str, secret: str, host: PollingHost, arguments: dict[str, Any]) -> Any:
    async def work() -> Any:
        headers = {"Authorization": f"Bearer {secret}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(
                streamable_http_client(url, http_client=http),
                mode="2026-07-28",
                extensions=[host],
            ) as client,
        ):
            try:
                return await client.call_tool("ask", arguments)
            except MCPError as error:
                return error

    return anyio.run(work)


def test_a_host_waits_on_a_task_while_a_person_decides_on_the_console(
    state: dict[str, Any],
) -> None:
    url = state["mcp_url"]
    who = people(state)
    pat = who["pat"]["principal"]["id"]
    approval = {"target": {"kind": "person", "id": pat}, "kind": "approval", "body": "Ship?"}

    async def pat_decides(task: dict[str, Any], session: ClientSession) -> None:
        decide_on_the_console(
            url.removesuffix("/mcp"), who["pat"]["secret"], task["taskId"], "approved"
        )

    # The person decides before the first poll: the host need not wait in real time.
    host = PollingHost(lambda ms: None, pat_decides)
    result = ask_as_a_task(url, who["ann"]["secret"], host, approval)
    assert result.structured_content["state"] == "approved"
    assert result.structured_content["response"]["by"] == pat
    assert [task["status"] for task in host.seen] == ["working", "completed"]
    assert host.waited_ms == [POLL_INTERVAL_MS]

    async def gives_up(task: dict[str, Any], session: ClientSession) -> None:
        await session.send_request(
            CancelTask(params=TaskParams(task_id=task["taskId"])), ANY_RESULT
        )

    quitter = PollingHost(lambda ms: None, gives_up)
    assert isinstance(ask_as_a_task(url, who["ann"]["secret"], quitter, approval), MCPError)
    assert quitter.seen[-1]["status"] == "cancelled"

    async def read(request_id: str) -> dict[str, Any]:
        async with AsyncExitStack() as stack:
            ann = await open_session(stack, url, who["ann"]["secret"])
            return await ann.call("get_request", id=request_id)

    withdrawn = anyio.run(read, quitter.seen[0]["taskId"])
    assert (withdrawn["state"], withdrawn["history"][-1]["kind"]) == ("withdrawn", "withdrawn")
