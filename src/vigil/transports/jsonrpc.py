"""What the MCP endpoint and the stdio bridge share: JSON-RPC 2.0 error codes, and the header
that chooses a connection's toolsets."""

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# MCP's code for a protocol revision the server does not speak.
UNSUPPORTED_VERSION = -32022

# Where a connection chooses its toolsets, comma-separated: the header GitHub's MCP server reads.
TOOLSETS_HEADER = "x-mcp-toolsets"
