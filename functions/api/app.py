"""Lambda entry point for the HTTP API (MCP, REST, OpenAPI).

Importing it is the function's init phase, which SnapStart snapshots: it builds the router and
the AWS clients, so that requests find them built."""

from vigil.entrypoints.api import handler, init

init()

__all__ = ["handler"]
