"""Lambda entry point for the HTTP API (MCP, REST, OpenAPI)."""
from vigil.entrypoints.api import handler

__all__ = ["handler"]
