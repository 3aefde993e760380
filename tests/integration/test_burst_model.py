"""The model of a burst of deaths (scripts/burst_model.py) on a small burst: every partition the
fires share stays within DynamoDB's limits at the fastest rate the alarm function's concurrency
allows, and the ones a burst shares are the sharded ones. A fire path that wrote one item of
the whole namespace again (a counter, an index, a lease) would fail it."""

from __future__ import annotations

import burst_model
import pytest


def test_a_burst_shares_only_sharded_partitions_each_within_its_limits(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION"):
        monkeypatch.setenv(name, "x")
    assert burst_model.main(["--switches", "30"]) == 0
    printed = capsys.readouterr().out
    assert "Every partition within its limits." in printed
    written = {
        line.split("`")[1]
        for line in printed.splitlines()
        if line.startswith("| `")
        and "| yes |" in line
        and "| 0 | 0% |" not in line.split("yes", 1)[1][:14]
    }
    # What a burst shares and writes is sharded (the deaths' and the sweep's index entries
    # among them); what it shares unsharded it only reads.
    assert written == {"gsi1:NS#<ns>#DEATHS#<k>", "NS#<ns>#QUOTAS#<k>", "gsi2:SWEEP#<k>"}
