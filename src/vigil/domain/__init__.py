"""The domain: plain Python and pydantic, with no knowledge of AWS, Lambda or MCP."""
