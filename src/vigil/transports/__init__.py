"""Thin transports over vigil.app.App: MCP over HTTP, REST, OpenAPI, stdio."""
