"""Prints how many tokens (bytes / 4) of tool definitions each toolset, the default listing and
each principal's full listing show a model, from vigil.transports.tool_sizes; with --write,
replaces the table in the given file (the README). With --per-tool, each tool's size too.

Usage: PYTHONPATH=src .venv/bin/python scripts/tool_sizes.py [--per-tool] [--write README.md]

tests/unit/test_tool_sizes.py fails while the README's table differs from the code's.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vigil.catalog import tools
from vigil.transports.tool_sizes import size_of, table, with_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, help="the file whose table to replace")
    parser.add_argument("--per-tool", action="store_true", help="each tool's size, largest first")
    args = parser.parse_args()
    if args.write:
        args.write.write_text(with_table(args.write.read_text()))
    print(table())
    if args.per_tool:
        sized = sorted(((size_of([t]).tokens, t.name) for t in tools()), reverse=True)
        for tokens, name in sized:
            print(f"{tokens:>6,}  {name}")


if __name__ == "__main__":
    main()
