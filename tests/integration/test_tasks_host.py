"""A host that declares the MCP Tasks extension, written on the official Python SDK's client
(its extension hooks: a claim on ``resultType: "task"`` whose resolver polls ``tasks/get``),
against the MCP endpoint behind a real HTTP port, directly and through ``vigil mcp`` (stdio):
it calls ``ask``, polls while a person decides on the console, and gets the decision as the
task's result. The host waits the ``pollIntervalMs`` it is told by moving the clock, never by
sleeping, and what a person does between two polls is the test's."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Literal

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, Request, RequestParams, Result
from pydantic import ConfigDict, TypeAdapter

from tests.conftest import ROOT
from tests.integration.test_console_decisions import decision_form
from tests.integration.test_console_states import signed_in
from tests.liveness_support import World
from tests.support import served_over_http
from vigil.clock import ManualClock
from vigil.transports.router import Router
from vigil.transports.tasks import POLL_INTERVAL_MS, TASKS

MODERN = "2026-07-28"
Between = Callable[[dict[str, Any], ClientSession], Awaitable[None]]


class CreatedTask(Result):
    """A CreateTaskResult: the task, flat, under ``resultType: "task"``."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    poll_interval_ms: int | None = None


class TaskParams(RequestParams):
    task_id: str


class GetTask(Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param = "taskId"


class CancelTask(Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    name_param = "taskId"


ANY_RESULT: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])


class PollingHost(ClientExtension):
    """The host's side of the extension: it declares it on every request, and finishes a task
    by polling tasks/get until the task ends, waiting ``pollIntervalMs`` between polls with
    ``wait`` (which moves the test's clock) once ``between`` has run."""

    identifier = TASKS

    def __init__(self, wait: Callable[[int], object], between: Between) -> None:
        self.wait = wait
        self.between = between
        self.seen: list[dict[str, Any]] = []
        self.waited_ms: list[int] = []

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self.resolve)]

    async def resolve(self, created: CreatedTask, ctx: ClaimContext) -> CallToolResult:
        task = created.model_dump(mode="json", by_alias=True)
        self.seen.append(task)
        while task["status"] in ("working", "input_required"):
            interval = int(task.get("pollIntervalMs") or 1000)
            await self.between(task, ctx.session)
            self.waited_ms.append(interval)
            self.wait(interval)
            polled = GetTask(params=TaskParams(task_id=task["taskId"]))
            task = await ctx.session.send_request(polled, ANY_RESULT)
            self.seen.append(task)
        if task["status"] == "completed":
            return CallToolResult.model_validate(task["result"])
        if task["status"] == "failed":
            error = task["error"]
            raise MCPError(error["code"], error["message"], error.get("data"))
        raise MCPError(-32800, f"the task was {task['status']}")


def moving(clock: ManualClock) -> Callable[[int], object]:
    return lambda ms: clock.advance(ms / 1000)


@pytest.fixture
def world(clock: ManualClock) -> World:
    return World(clock)


@pytest.fixture
def url(world: World) -> Iterator[str]:
    with served_over_http(Router(world.app, frozenset())) as served:
        yield served


@pytest.fixture
def people(world: World) -> dict[str, tuple[str, str]]:
    return {
        "ann": world.tenant.register(name="ann"),
        "pat": world.tenant.register(kind="person", name="Pat Doe"),
    }


def approval(people: dict[str, tuple[str, str]], **more: Any) -> dict[str, Any]:
    target = {"kind": "person", "id": people["pat"][0]}
    return {"target": target, "kind": "approval", "body": "May I deploy?", **more}


def ask_over_http(url: str, secret: str, host: ClientExtension, arguments: dict[str, Any]) -> Any:
    """The call's result, or the MCPError the host ended the task with."""

    async def work() -> Any:
        headers = {"Authorization": f"Bearer {secret}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(
                streamable_http_client(url, http_client=http), mode=MODERN, extensions=[host]
            ) as client,
        ):
            try:
                return await client.call_tool("ask", arguments)
            except MCPError as error:
                return error

    return anyio.run(work)


def test_the_host_gets_the_decision_made_on_the_console_as_the_tasks_result(
    world: World, url: str, people: dict[str, tuple[str, str]], clock: ManualClock
) -> None:
    decided_by_then: list[str] = []

    async def pat_decides_on_the_console(task: dict[str, Any], session: ClientSession) -> None:
        if len(decided_by_then) == 2:  # the person decides after the host has waited twice
            pat = signed_in(world, people["pat"][1])
            form = decision_form(pat, task["taskId"], "approved")
            assert pat.post("/console/requests/reply", {**form, "confirm": "yes"}).status == 303
        decided_by_then.append(task["status"])

    host = PollingHost(moving(clock), pat_decides_on_the_console)
    result = ask_over_http(url, people["ann"][1], host, approval(people))
    assert result.is_error is False
    decided = result.structured_content
    assert (decided["state"], decided["response"]["by"]) == ("approved", people["pat"][0])
    assert json.loads(result.content[0].text) == decided
    assert decided["id"] == host.seen[0]["taskId"]
    assert [task["status"] for task in host.seen] == ["working"] * 3 + ["completed"]
    assert host.waited_ms == [POLL_INTERVAL_MS] * 3


def test_expiry_fails_the_hosts_task_with_a_typed_error(
    url: str, people: dict[str, tuple[str, str]], clock: ManualClock
) -> None:
    async def nobody_decides(task: dict[str, Any], session: ClientSession) -> None:
        pass

    host = PollingHost(moving(clock), nobody_decides)
    failed = ask_over_http(url, people["ann"][1], host, approval(people, expires_in_seconds=12))
    assert isinstance(failed, MCPError)
    assert failed.error.data["code"] == "version_conflict"
    assert failed.error.data["details"] == {"state": "expired"}
    assert host.waited_ms == [POLL_INTERVAL_MS] * 3  # 15 s: past the deadline at 12 s


def test_cancelling_the_task_withdraws_the_request(
    world: World, url: str, people: dict[str, tuple[str, str]], clock: ManualClock
) -> None:
    async def the_host_gives_up(task: dict[str, Any], session: ClientSession) -> None:
        cancel = CancelTask(params=TaskParams(task_id=task["taskId"]))
        assert await session.send_request(cancel, ANY_RESULT) == {"resultType": "complete"}

    host = PollingHost(moving(clock), the_host_gives_up)
    cancelled = ask_over_http(url, people["ann"][1], host, approval(people))
    assert isinstance(cancelled, MCPError)
    assert host.seen[-1]["status"] == "cancelled"
    request = world.call("get_request", people["ann"][1], id=host.seen[0]["taskId"])
    assert request["state"] == "withdrawn"
    events = world.call("list_audit_events")["events"]
    withdrawals = [e["target"] for e in events if e["action"] == "withdraw_request"]
    assert withdrawals == [request["id"]]


def test_a_host_that_declares_nothing_gets_the_open_request(
    url: str, people: dict[str, tuple[str, str]]
) -> None:
    async def work() -> Any:
        headers = {"Authorization": f"Bearer {people['ann'][1]}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(url, http_client=http), mode=MODERN) as client,
        ):
            return await client.call_tool("ask", approval(people))

    result = anyio.run(work)
    assert result.is_error is False
    assert result.structured_content["state"] == "open"


def test_the_stdio_bridge_passes_the_task_through(
    world: World, url: str, people: dict[str, tuple[str, str]], clock: ManualClock
) -> None:
    async def pat_replies(task: dict[str, Any], session: ClientSession) -> None:
        world.call("reply", people["pat"][1], id=task["taskId"], version=1, outcome="denied")

    host = PollingHost(moving(clock), pat_replies)
    bridge = StdioServerParameters(
        command=sys.executable,
        args=["-m", "vigil", "mcp", "--endpoint", url],
        env={**os.environ, "VIGIL_SECRET": people["ann"][1]},
        cwd=str(ROOT),
    )

    async def work() -> Any:
        async with Client(bridge, mode=MODERN, extensions=[host]) as client:
            return await client.call_tool("ask", approval(people))

    result = anyio.run(work)
    assert result.structured_content["state"] == "denied"
    assert [task["status"] for task in host.seen] == ["working", "completed"]
