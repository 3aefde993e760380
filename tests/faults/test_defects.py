"""Defects of src/ that the fault injector exposed. Each test states the behaviour we want; a
defect still open carries a strict xfail, which turns red (XPASS) the day it is fixed so that the
marker goes with it; a fixed one stays as its regression test."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.faults.injector import Fault
from tests.faults.world import World
from vigil.errors import VigilError


def _index_of(world: World, operation: str, action: Callable[[], Any]) -> int:
    """The index, within one clean call of ``action``, of its first ``operation`` AWS call.
    Run it on a probe world before the world under test: a new world empties moto."""
    world.injector.reset()
    action()
    return world.injector.calls.index(operation)


def test_a_timed_out_delete_does_not_fail_a_recorded_acknowledgment(aws: None) -> None:
    probe = World()
    probe.send("worker")
    (seen,) = probe.call("receive", "worker", lease_seconds=900)["deliveries"]
    index = _index_of(
        probe,
        "sqs.DeleteMessage",
        lambda: probe.call("acknowledge", "worker", id=seen["id"], generation=seen["generation"]),
    )
    world = World()
    world.send("worker")
    (delivery,) = world.call("receive", "worker", lease_seconds=900)["deliveries"]
    world.injector.plan(index, Fault("timeout", 1))  # the delete is lost on the way
    result = world.call(
        "acknowledge", "worker", id=delivery["id"], generation=delivery["generation"]
    )
    assert result == {"received": True}


def test_rotating_your_own_secret_survives_a_lost_answer(aws: None) -> None:
    arguments = {"version": 1, "idempotency_key": "rotate-1"}
    probe = World()
    index = _index_of(
        probe,
        "dynamodb.TransactWriteItems",
        lambda: probe.call("rotate_secret", "worker", **arguments),
    )
    world = World()
    world.injector.plan(index, Fault("crash"))
    with pytest.raises(VigilError):
        world.call("rotate_secret", "worker", **arguments)
    world.restart()
    try:
        replayed = world.call("rotate_secret", "worker", **arguments)
    except VigilError as error:
        pytest.fail(f"the retry with the same key answered {error.code.value}")
    assert replayed["principal"]["version"] == 2
    assert world.app.call("whoami", {}, replayed["secret"], via="rest")["principal"]["version"] == 2
