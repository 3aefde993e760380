"""What the catalog's definitions cost an agent stays within its bounds (docs/PERFORMANCE.md,
"Tool definitions"): counted by vigil.catalog_sizes, as scripts/tool_sizes.py prints them."""

from __future__ import annotations

import pytest

from vigil import catalog
from vigil.catalog_sizes import output_tokens, shown_tokens, tokens
from vigil.context import Context
from vigil.kit.tooling import Tool

MOST_SHOWN_PER_TOOL = 1_500
# Every tool's name, description, input and output schema, in tokens, as the catalog published
# them at 3e9fb7a (62 tools), before definitions were made short: 56,493. The goal is a third
# of that; what stands above it is the schemas' structure (the types, bounds, enums and required
# lists of some 230 input and 810 output properties), which stays whole so that validation does
# not change. This is where they stand now, so that no change makes them grow unnoticed.
CATALOG_CEILING = 37_000


@pytest.mark.parametrize("tool", catalog.tools(), ids=lambda tool: tool.name)
def test_no_tool_shows_a_model_more_than_its_share(tool: Tool[Context]) -> None:
    assert shown_tokens(tool) <= MOST_SHOWN_PER_TOOL


def test_the_whole_catalog_stays_within_its_ceiling() -> None:
    every = catalog.tools()
    assert sum(shown_tokens(t) + output_tokens(t) for t in every) <= CATALOG_CEILING


def test_a_token_is_four_bytes_of_the_json_as_sent() -> None:
    # The wire escapes what is not ASCII: six bytes for an ellipsis, not three.
    assert tokens({"a": "\u2026"}) == len('{"a":"\\u2026"}') // 4
