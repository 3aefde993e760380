"""Prints how many tokens (bytes / 4) of tool definitions each toolset, the default listing and
each principal's full listing show a model, from vigil.transports.tool_sizes; with --write,
replaces the table in the given file (the README). With --per-tool, each tool's size (what a
model is shown, and its output schema) and the catalog's totals quoted in docs/PERFORMANCE.md.

Usage: PYTHONPATH=src .venv/bin/python scripts/tool_sizes.py [--per-tool] [--write README.md]

tests/unit/test_tool_sizes.py fails while the README's table differs from the code's.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vigil.catalog import tools
from vigil.transports.mcp import described
from vigil.transports.tool_sizes import output_tokens, shown_tokens, table, tokens, with_table


def per_tool() -> None:
    catalog = tools()
    print(f"\n{'tool':<26} {'shown':>6} {'output':>6}")
    for tool in sorted(catalog, key=shown_tokens, reverse=True):
        print(f"{tool.name:<26} {shown_tokens(tool):>6,} {output_tokens(tool):>6,}")
    shown = sum(map(shown_tokens, catalog))
    output = sum(map(output_tokens, catalog))
    print(f"{len(catalog)} tools: shown {shown:,}, output {output:,}, both {shown + output:,}")
    print(f"the whole listing: {tokens({'tools': [described(t) for t in catalog]}):,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, help="the file whose table to replace")
    parser.add_argument("--per-tool", action="store_true", help="each tool's size, largest first")
    args = parser.parse_args()
    if args.write:
        args.write.write_text(with_table(args.write.read_text()))
    print(table())
    if args.per_tool:
        per_tool()


if __name__ == "__main__":
    main()
