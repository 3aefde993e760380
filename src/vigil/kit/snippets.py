"""What a person pastes to connect an agent to Vigil with its secret, in the shapes MCP hosts
read: a host's JSON configuration (Claude Desktop, Cursor and the like read ``mcpServers``;
VS Code reads ``servers``) and Claude Code's command. One wording for the console and the
CLI."""

from __future__ import annotations

import json
import shlex


def mcp_config(mcp_url: str, secret: str) -> str:
    """The ``mcpServers`` entry of a host that speaks streamable HTTP with a header."""
    server = {"type": "http", "url": mcp_url, "headers": {"Authorization": f"Bearer {secret}"}}
    return json.dumps({"mcpServers": {"vigil": server}}, indent=2)


def claude_code_command(mcp_url: str, secret: str) -> str:
    """Claude Code's command that adds the same server."""
    header = shlex.quote(f"Authorization: Bearer {secret}")
    return f"claude mcp add --transport http vigil {shlex.quote(mcp_url)} --header {header}"
