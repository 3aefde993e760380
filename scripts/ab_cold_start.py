"""Cold start of two checkouts, side by side: before and after a change.

Usage:
    git worktree add /tmp/before <commit>
    .venv/bin/python scripts/ab_cold_start.py /tmp/before . [--rounds 25]

Each round imports, in fresh interpreters and alternating between the two trees, `boto3`, each
function's handler module, and the handler plus what its first call imports (as each tree's
``scripts/measure.py`` names it), so that both trees meet the same machine load. Prints the
medians and their ratio to `import boto3` of the same tree.
"""

from __future__ import annotations

import argparse
import ast
import statistics
import subprocess
import sys
from pathlib import Path


def first_call(tree: Path) -> str:
    """The statement the tree's measure.py times as a first call's imports."""
    source = (tree / "scripts" / "measure.py").read_text()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "FIRST_CALL" for t in node.targets
        ):
            return str(ast.literal_eval(node.value))
    return "import app, vigil.wiring, boto3"  # what measure.py timed before it named it


def once(tree: Path, statement: str, function: str | None) -> float:
    path = [str(tree / "functions" / function), str(tree / "src")] if function else []
    code = (
        f"import time, sys; sys.path[:0] = {path!r}; t = time.perf_counter(); {statement}; "
        "print((time.perf_counter() - t) * 1000)"
    )
    env = {"PATH": "/usr/bin:/bin", "POWERTOOLS_LOG_LEVEL": "WARNING"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    return float(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rounds", type=int, default=25)
    args = parser.parse_args()
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    rows = {
        "import boto3": lambda tree: ("import boto3", None),
        "API handler module": lambda tree: ("import app", "api"),
        "API handler + first call": lambda tree: (first_call(tree), "api"),
        "alarm handler module": lambda tree: ("import app", "alarm"),
        "alarm handler + first call": lambda tree: (first_call(tree), "alarm"),
    }
    samples: dict[tuple[str, str], list[float]] = {(t, r): [] for t in trees for r in rows}
    for _ in range(args.rounds):
        for row, spec in rows.items():
            for name, tree in trees.items():
                statement, function = spec(tree)
                samples[(name, row)].append(once(tree, statement, function))
    medians = {key: statistics.median(values) for key, values in samples.items()}
    print(f"median of {args.rounds} alternating rounds, ms (x import boto3 of the same tree)")
    for row in rows:
        cells = []
        for name in trees:
            ms, boto3 = medians[(name, row)], medians[(name, "import boto3")]
            cells.append(f"{name} {ms:7.1f} ({ms / boto3:.2f}x)")
        print(f"{row:28} " + "   ".join(cells))


if __name__ == "__main__":
    main()
