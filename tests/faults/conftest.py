"""The faults' runs, each making its AWS calls in one order."""

from __future__ import annotations

import pytest

from vigil.kit import fanout


@pytest.fixture(autouse=True)
def calls_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fault is planned at the n-th AWS call: the pieces of a call that run side by side
    elsewhere (a batch's beats) run in order here, so that every run of a scenario makes its
    calls in the same order. Their concurrency is tested on its own (tests/unit)."""
    monkeypatch.setattr(fanout, "serial", True)
