"""MCP SDK sessions for the end-to-end tests: one per principal, over streamable HTTP."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


class Session:
    """One principal's MCP session."""

    def __init__(self, client: Any) -> None:
        self.client = client

    async def attempt(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """The structured result of a tool, or ``{"error": ...}`` for a typed refusal."""
        result = await self.client.call_tool(tool, arguments)
        if result.is_error:
            return {"error": json.loads(result.content[0].text)["error"]}
        data: dict[str, Any] = result.structured_content
        assert json.loads(result.content[0].text) == data
        return data

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """The structured result of a tool that must succeed."""
        data = await self.attempt(tool, **arguments)
        assert "error" not in data, data
        return data


async def open_session(stack: AsyncExitStack, url: str, secret: str) -> Session:
    http = await stack.enter_async_context(
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=30)
    )
    client = await stack.enter_async_context(Client(streamable_http_client(url, http_client=http)))
    return Session(client)
