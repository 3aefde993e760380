"""vigil plan: its arithmetic, what it asks of AWS for a million agents, and docs/SCALE.md
showing exactly what it prints (its prices against the cost model: tests/integration/
test_costs.py)."""

from __future__ import annotations

import re
import shlex

import pytest

from tests.conftest import ROOT
from vigil.cli import main
from vigil.infra.plan import Fleet, ceilings, per_beat_usd, plan
from vigil.infra.prices import MONTH_SECONDS, PRICE

SCALE = ROOT / "docs" / "SCALE.md"
PERFORMANCE = ROOT / "docs" / "PERFORMANCE.md"


def test_the_load_a_second_follows_the_formulas() -> None:
    found = plan(Fleet(agents=1_000_000, beat_every=30, window=90, batch=50))
    assert found.beats == pytest.approx(33_333.33, abs=0.01)
    assert found.calls == pytest.approx(666.67, abs=0.01)
    assert found.rearms == pytest.approx(16_666.67, abs=0.01)  # 1.5 re-arms a window
    assert found.write_units == pytest.approx(50_000, abs=0.01)
    # Authentication once a call, a read and a write a re-arm, the sweep's reads.
    assert found.read_units == pytest.approx(333.33 + 16_666.67 + 1_700, abs=0.01)
    assert found.api_concurrency == pytest.approx(666.67 * (12 + 49 * 3.8) / 1000, abs=0.01)


def test_a_million_agents_in_batches_of_50_need_no_request_quota_raised() -> None:
    """Only the table's write quota: DynamoDB takes a write per beat whatever the batching;
    API Gateway's and Lambda's defaults carry the requests."""
    found = plan(Fleet(agents=1_000_000, beat_every=30, window=90, batch=50))
    assert [(q.service, q.name, q.needed) for q in found.quotas] == [
        ("Amazon DynamoDB", "Table-level write throughput limit", 63_000)
    ]
    assert found.parameters["ApiRateLimit"] <= 10_000
    single = plan(Fleet(agents=1_000_000, beat_every=30, window=90))
    assert {q.name for q in single.quotas} == {
        "Throttle rate",
        "Concurrent executions",
        "Table-level write throughput limit",
        "Table-level read throughput limit",
    }


def test_the_defaults_carry_10000_agents_beating_every_30_s_with_room() -> None:
    found = plan(Fleet(agents=10_000, beat_every=30, window=90))
    assert found.quotas == []
    assert found.parameters == {
        "ApiRateLimit": 1000,
        "ApiBurstLimit": 2000,
        "QuotaArmedSwitches": 25_000,
        "AlarmConcurrency": 250,
        "TableWarmWriteUnits": 0,
        "TableWarmReadUnits": 0,
    }
    first, *_ = ceilings(Fleet(agents=1, beat_every=30, window=90))
    assert first[0] >= 2 * 10_000


def test_the_month_is_each_beat_priced_as_the_cost_model_prices_it() -> None:
    found = plan(Fleet(agents=100_000, beat_every=30, window=600, batch=50))
    per_beat = sum(per_beat_usd(50).values())
    assert found.monthly_usd["beats"] == pytest.approx(per_beat * found.beats * MONTH_SECONDS)
    # A beat in a batch of 50: within the goal the cost model holds ($0.70 a million).
    assert per_beat * 1e6 < 0.70
    assert per_beat_usd(50)["dynamodb"] >= PRICE["dynamodb_write_unit"]
    assert found.monthly_usd["alarm re-arms"] == pytest.approx(
        1.65e-6 * 1.5 * 100_000 / 600 * MONTH_SECONDS
    )


def test_the_re_arm_prices_are_the_performance_pages() -> None:
    page = PERFORMANCE.read_text()
    assert re.search(r"\| 300 s \| [\d,]+ \| [\d.]+ \| [\d,]+ \| 1\.65 \|", page)
    assert re.search(r"\| 3,600 s \| [\d,]+ \| [\d.]+ \| [\d,]+ \| 4\.11 \|", page)


@pytest.mark.parametrize(
    "arguments",
    [
        ["--agents", "0", "--beat-every", "30", "--window", "90"],
        ["--agents", "10", "--beat-every", "100", "--window", "90"],
        ["--agents", "10", "--beat-every", "30", "--window", "90", "--batch", "101"],
        ["--agents", "10", "--beat-every", "30", "--window", "1"],
    ],
)
def test_a_fleet_that_cannot_be_is_refused(
    arguments: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", *arguments]) == 2
    assert capsys.readouterr().err.startswith("vigil plan: ")


def test_scale_md_shows_what_vigil_plan_prints(capsys: pytest.CaptureFixture[str]) -> None:
    """Each block in docs/SCALE.md that starts with `$ vigil plan ...` is that command's output."""
    blocks = re.findall(r"```text\n\$ (vigil plan [^\n]+)\n(.*?)```", SCALE.read_text(), re.S)
    assert len(blocks) >= 2
    for command, shown in blocks:
        assert main(shlex.split(command)[1:]) == 0
        assert capsys.readouterr().out == shown, command


def test_a_function_url_reserves_ten_requests_a_second_a_unit_twice_over() -> None:
    """A Function URL has no throttle but its reserved concurrency, and Lambda serves at most
    ten requests a second for each unit: 2,500 requests a second need 250 units, 500 with room."""
    found = plan(Fleet(agents=50_000, beat_every=20, window=60, namespaces=5, door="FunctionUrl"))
    assert found.calls == pytest.approx(2500)
    assert found.api_concurrency == pytest.approx(250)
    assert (found.parameters["FrontDoor"], found.parameters["ApiReservedConcurrency"]) == (
        "FunctionUrl",
        500,
    )
    assert "ApiRateLimit" not in found.parameters


def test_a_batch_holds_at_most_the_fleet() -> None:
    small = plan(Fleet(agents=50, beat_every=30, window=90, batch=100))
    assert small.fleet.batch == 50
    assert small.calls == pytest.approx(1 / 30)  # one call of fifty beats every 30 s
