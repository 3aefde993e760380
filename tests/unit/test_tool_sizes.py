"""What the tools' definitions cost an agent stays within its goals, counted as the server sends
them by vigil.transports.tool_sizes (docs/PERFORMANCE.md, "Tool definitions"): each tool, the
listing of a connection that chooses nothing, the whole catalog; and the README's table of
toolset sizes is the code's."""

from __future__ import annotations

import json

import pytest

from tests.conftest import ROOT
from tests.support import Tenant
from vigil import catalog
from vigil.context import Context
from vigil.kit.http import HttpRequest
from vigil.kit.tooling import Tool
from vigil.transports.mcp import McpEndpoint
from vigil.transports.tool_sizes import (
    BEGIN,
    END,
    listing_sizes,
    shown,
    shown_tokens,
    size_of,
    table,
    tokens,
)

REGENERATE = "PYTHONPATH=src .venv/bin/python scripts/tool_sizes.py --write README.md"
MOST_SHOWN_PER_TOOL = 1_500
MOST_SHOWN_BY_DEFAULT = 8_000
# The whole tools/list result for an operator who chooses every toolset (names, descriptions,
# input and output schemas, titles and annotations), in tokens, as the catalog published it at
# 3e9fb7a (62 tools, before definitions were made short): 59,355. The goal is a third of it.
WHOLE_LISTING_BEFORE = 59_355


@pytest.mark.parametrize("tool", catalog.tools(), ids=lambda tool: tool.name)
def test_no_tool_shows_a_model_more_than_its_share(tool: Tool[Context]) -> None:
    assert shown_tokens(tool) <= MOST_SHOWN_PER_TOOL


def test_a_connection_that_chooses_nothing_is_shown_little() -> None:
    (default, *_) = listing_sizes().values()
    assert default.tools <= 40
    assert default.tokens <= MOST_SHOWN_BY_DEFAULT


def test_an_operators_whole_listing_is_at_most_a_third_of_what_it_was() -> None:
    (*_, operator) = listing_sizes().values()
    assert operator.tools == len(catalog.tools())
    assert operator.listing_tokens <= WHOLE_LISTING_BEFORE // 3


def test_a_token_is_four_bytes_of_the_json_as_sent() -> None:
    # The wire escapes what is not ASCII: six bytes for an ellipsis, not three.
    assert tokens({"a": "\u2026"}) == -(-len('{"a":"\\u2026"}') // 4)


def test_the_readme_shows_the_sizes_the_code_has() -> None:
    readme = (ROOT / "README.md").read_text()
    start, end = readme.index(BEGIN), readme.index(END) + len(END)
    assert readme[start:end] == table(), f"the README's sizes are out of date: {REGENERATE}"


def test_what_is_measured_is_what_the_server_sends(tenant: Tenant) -> None:
    headers = {"authorization": f"Bearer {tenant.operator_secret}", "x-mcp-toolsets": "all"}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    response = McpEndpoint(tenant.app).handle(HttpRequest("POST", "/mcp", headers, body))
    sent = json.loads(response.body)["result"]["tools"]
    for listed, tool in zip(sent, catalog.tools(), strict=True):
        seen = {key: listed[key] for key in ("name", "description", "inputSchema")}
        assert shown(tool) == json.dumps(seen, separators=(",", ":")).encode()
    whole = json.dumps({"tools": sent}, separators=(",", ":")).encode()
    assert len(whole) == size_of(catalog.tools()).listing_bytes
