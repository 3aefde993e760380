"""Prints what each tool's definition costs an agent, in tokens (bytes / 4 of the JSON as
tools/list sends it), and the totals quoted in docs/PERFORMANCE.md.
Usage: PYTHONPATH=src .venv/bin/python scripts/tool_sizes.py

"shown" is what a model is shown (name, description, input schema); "output" the output
schema; "listing" the whole tools/list result, titles and annotations included.
"""

from __future__ import annotations

from vigil.catalog import tools
from vigil.catalog_sizes import output_tokens, shown_tokens, tokens
from vigil.transports.mcp import tool_listing


def main() -> None:
    catalog = tools()
    print(f"{'tool':<26} {'shown':>6} {'output':>6}")
    for tool in sorted(catalog, key=shown_tokens, reverse=True):
        print(f"{tool.name:<26} {shown_tokens(tool):>6} {output_tokens(tool):>6}")
    shown = sum(map(shown_tokens, catalog))
    output = sum(map(output_tokens, catalog))
    print(f"{len(catalog)} tools: shown {shown}, output {output}, shown + output {shown + output}")
    print(f"the whole listing: {tokens({'tools': tool_listing()})}")


if __name__ == "__main__":
    main()
