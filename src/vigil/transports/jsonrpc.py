"""What the MCP endpoint, its tasks and the stdio bridge share: JSON-RPC 2.0 error codes, a
typed refusal as a JSON-RPC error, a tool's result as MCP carries it, and the header that
chooses a connection's toolsets."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vigil.errors import VigilError

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# MCP's code for headers that are missing, malformed or disagree with the body (2026-07-28).
HEADER_MISMATCH = -32020
# MCP's code for a protocol revision the server does not speak.
UNSUPPORTED_VERSION = -32022
# MCP's code for a request the server serves only to a client that declares a capability.
MISSING_REQUIRED_CAPABILITY = -32021

# Where a connection chooses its toolsets, comma-separated: the header GitHub's MCP server reads.
TOOLSETS_HEADER = "x-mcp-toolsets"


def refusal(request_id: Any, code: int, refused: VigilError) -> dict[str, Any]:
    """A typed refusal as a JSON-RPC error response: its message, and the refusal itself as
    ``data``, so that a client reads its code, retryable and details as a REST caller does."""
    error = {"code": code, "message": refused.message, "data": refused.to_dict()}
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def tool_result(payload: dict[str, Any], is_error: bool) -> dict[str, Any]:
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": is_error}
    if not is_error:
        # Errors travel as JSON text only: some clients validate any structuredContent against
        # the tool's output schema, which describes success.
        result["structuredContent"] = payload
    return result
