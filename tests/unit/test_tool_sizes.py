"""The README's table of toolset sizes is the code's: what a model is shown of the tools, as
the server sends it, measured by vigil.transports.tool_sizes; and the default stays small."""

from __future__ import annotations

import json

from tests.conftest import ROOT
from tests.support import Tenant
from vigil import catalog
from vigil.kit.http import HttpRequest
from vigil.transports.mcp import McpEndpoint
from vigil.transports.tool_sizes import BEGIN, END, listing_sizes, shown, table

REGENERATE = "PYTHONPATH=src .venv/bin/python scripts/tool_sizes.py --write README.md"


def test_the_readme_shows_the_sizes_the_code_has() -> None:
    readme = (ROOT / "README.md").read_text()
    start, end = readme.index(BEGIN), readme.index(END) + len(END)
    assert readme[start:end] == table(), f"the README's sizes are out of date: {REGENERATE}"


def test_a_connection_that_chooses_nothing_is_shown_at_most_40_tools() -> None:
    (default, *_) = listing_sizes().values()
    assert default.tools <= 40


def test_what_is_measured_is_what_the_server_sends(tenant: Tenant) -> None:
    headers = {"authorization": f"Bearer {tenant.operator_secret}", "x-mcp-toolsets": "all"}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    response = McpEndpoint(tenant.app).handle(HttpRequest("POST", "/mcp", headers, body))
    sent = json.loads(response.body)["result"]["tools"]
    for listed, tool in zip(sent, catalog.tools(), strict=True):
        seen = {key: listed[key] for key in ("name", "description", "inputSchema")}
        assert shown(tool) == json.dumps(seen, separators=(",", ":")).encode()
