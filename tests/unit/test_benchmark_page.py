"""docs/BENCHMARKS.md shows the AWS calls each tool makes, and their price, as they are now:
every scenario of every tool of the catalog (tests/faults/scenarios.py) is called once on moto
and its calls counted at the botocore layer, by service and operation, by scripts/bench.py's own
``count``, without the benchmark's slow parts (timings, throughput, lateness, cold start).

The price is compared too: it derives from the calls and the sizes of the items they read and
write, and those sizes are the same in every fresh world (fixed names, a fixed clock, random ids
of fixed lengths)."""

from __future__ import annotations

import functools

import bench
import pytest

from tests.conftest import ROOT
from tests.faults.scenarios import Scenario, every_scenario

PAGE = ROOT / "docs" / "BENCHMARKS.md"
REGENERATE = "make bench (.venv/bin/python scripts/bench.py --write docs/BENCHMARKS.md)"
SCENARIOS = every_scenario()


@functools.cache
def rows_on_the_page() -> dict[str, list[str]]:
    return bench.tools_on(PAGE.read_text())


def test_the_page_has_a_row_for_every_case_of_every_tool() -> None:
    # every_scenario has at least one case for each tool of the catalog (one built from the
    # tool's input schema where none is written), so a new tool needs a row here at once.
    shown = set(rows_on_the_page())
    expected = {bench.row_name(scenario) for scenario in SCENARIOS}
    missing, stale = sorted(expected - shown), sorted(shown - expected)
    assert (missing, stale) == ([], []), (
        f"docs/BENCHMARKS.md has no row for {missing} and rows of no case for {stale}: {REGENERATE}"
    )


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda scenario: scenario.name)
def test_the_page_shows_the_aws_calls_a_tool_makes(aws: None, scenario: Scenario) -> None:
    counted, _ = bench.count(scenario)
    assert counted.outcome == "ok", (
        f"{scenario.name}: answered {counted.outcome}, so it measures an error: "
        "fix its scenario in tests/faults/scenarios.py"
    )
    name, calls, price = counted.cells()
    shown = rows_on_the_page().get(name)
    assert shown is not None, f"docs/BENCHMARKS.md has no row for {name}: {REGENERATE}"
    assert shown == [name, calls, price], (
        f"{name}: docs/BENCHMARKS.md says {shown[1]} (USD {shown[2]} per million); "
        f"one call makes {calls} (USD {price} per million): {REGENERATE}"
    )
