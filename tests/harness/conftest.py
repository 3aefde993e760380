"""Fixtures of the quality harness (see tests/harness/__init__.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.e2e.conftest import runtime, state  # noqa: F401 - the Inspector test's runtime

if TYPE_CHECKING:
    from tests.harness.scenario import Seeded
    from tests.harness.worlds import HarnessWorld


# Imports inside the fixtures: Hypothesis warns about strategies built while conftest loads.
@pytest.fixture(scope="module")
def home() -> Seeded:
    """A world whose home namespace has one of everything the catalog can make."""
    from tests.harness.scenario import seed
    from tests.harness.walk import walked
    from tests.harness.worlds import HarnessWorld

    return seed(HarnessWorld(), walked())


@pytest.fixture(scope="module")
def twin(home: Seeded) -> HarnessWorld:
    """The same cast at the same time, where the home namespace made nothing: what a stranger
    gets here is what a stranger gets for resources that do not exist."""
    from tests.harness.worlds import HarnessWorld

    world = HarnessWorld()
    world.align_clock(home.world)
    return world
