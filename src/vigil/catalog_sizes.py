"""What each tool's definition costs an agent, in tokens, counted as bytes / 4 of the JSON as
tools/list sends it (compact, ASCII with escapes).

A model is shown a tool's name, description and input schema on every turn; its output schema
is listed too, and some hosts show it. scripts/tool_sizes.py prints these figures and
tests/unit/test_tool_sizes.py keeps them within their goals (docs/PERFORMANCE.md).
"""

from __future__ import annotations

import json
from typing import Any

from vigil.context import Context
from vigil.kit.tooling import Tool

BYTES_PER_TOKEN = 4


def tokens(document: Any) -> int:
    """``document``'s size in tokens, as the server writes it on the wire."""
    return len(json.dumps(document, separators=(",", ":")).encode()) // BYTES_PER_TOKEN


def shown_tokens(tool: Tool[Context]) -> int:
    """What a model is shown of ``tool``: its name, description and input schema."""
    return tokens(
        {"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema()}
    )


def output_tokens(tool: Tool[Context]) -> int:
    """``tool``'s output schema."""
    return tokens(tool.output_schema())
