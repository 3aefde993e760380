"""A switch that dies again and again flaps: its channels are told so once, in place of the
death that made it so; its deaths and recoveries after that are recorded, not told; once it
goes a whole FLAP_WINDOW without dying it settles, and that is told too. Played on a moved
clock, against a receiver that verifies each delivery, and against PagerDuty's incident
lifecycle (one incident, resolved as it settles)."""

from __future__ import annotations

import json
from typing import Any

from tests.unit.test_notification_delivery import Notifying, Receiver
from tests.unit.test_oncall_channels import ROUTING_KEY, bodies, create
from tests.unit.test_oncall_channels import receiver as receiver
from tests.unit.test_oncall_channels import world as world
from vigil.switches.records import FLAP_DEATHS, FLAP_WINDOW

SCOPE = "job-flaky"
WINDOW = 10


def die_and_recover(world: Notifying, secret: str) -> None:
    """The switch misses its deadline, fires, and is beaten again a second later."""
    world.advance(WINDOW + 1)
    world.call("heartbeat", secret, scope=SCOPE, expect_within_seconds=WINDOW)
    world.advance(1)


def keep_beating(world: Notifying, secret: str, seconds: float) -> None:
    """Beats in time, every third of a 10-minute window, for ``seconds``."""
    while seconds > 0:
        world.call("heartbeat", secret, scope=SCOPE, expect_within_seconds=600)
        world.advance(200)
        seconds -= 200


def told(world: Notifying, receiver: Receiver, signing: str) -> list[str]:
    return [event["type"] for event in receiver.verified(signing)]


def test_a_flapping_switch_is_told_once_then_quiet_until_it_settles(
    world: Notifying,
) -> None:
    hook = Receiver(world.clock)
    try:
        _, signing = world.channel(hook.url, ["switch.fired"])
        _, secret = world.tenant.register(name="worker")
        world.call("heartbeat", secret, scope=SCOPE, expect_within_seconds=WINDOW)
        for _ in range(FLAP_DEATHS + 1):
            die_and_recover(world, secret)
        # Two deaths told with their ends; the third made it flap, told once; the fourth quiet.
        assert told(world, hook, signing) == [
            "switch.fired",
            "switch.recovered",
            "switch.fired",
            "switch.recovered",
            "switch.flapping",
        ]
        deaths = world.call("list_deaths")["deaths"]
        assert len(deaths) == FLAP_DEATHS + 1  # every death is recorded all the same
        [flapping] = [e for e in hook.verified(signing) if e["type"] == "switch.flapping"]
        assert flapping["data"]["deaths"] == FLAP_DEATHS

        keep_beating(world, secret, FLAP_WINDOW.total_seconds() + 1200)
        events = hook.verified(signing)
        assert [e["type"] for e in events][5:] == ["switch.settled"]
        assert events[-1]["data"]["flapping_event_id"] == flapping["id"]

        # Settled: the next death is told as any death is.
        world.advance(601)
        assert told(world, hook, signing)[-1] == "switch.fired"
    finally:
        hook.close()


def test_pagerduty_gets_one_incident_for_the_flapping_resolved_as_it_settles(
    world: Notifying,
    receiver: Receiver,
) -> None:
    create(world, "pagerduty", ["switch.fired"], routing_key=ROUTING_KEY)
    _, secret = world.tenant.register(name="worker")
    world.call("heartbeat", secret, scope=SCOPE, expect_within_seconds=WINDOW)
    for _ in range(FLAP_DEATHS + 2):
        die_and_recover(world, secret)
    keep_beating(world, secret, FLAP_WINDOW.total_seconds() + 1200)
    sent: list[dict[str, Any]] = bodies(receiver)
    actions = [(m["event_action"], m["dedup_key"]) for m in sent]
    # trigger/resolve, trigger/resolve, then one trigger for the flapping and its resolve.
    assert [action for action, _ in actions] == ["trigger", "resolve"] * 3
    assert actions[0][1] == actions[1][1] != actions[2][1] == actions[3][1]
    assert actions[4][1] == actions[5][1]
    assert "flapping" in json.dumps(sent[4]["payload"]["summary"]).lower()


def test_a_flapping_that_ended_unseen_is_said_settled_before_the_next_death(
    world: Notifying,
) -> None:
    hook = Receiver(world.clock)
    try:
        _, signing = world.channel(hook.url, ["switch.fired"])
        _, secret = world.tenant.register(name="worker")
        world.call("heartbeat", secret, scope=SCOPE, expect_within_seconds=WINDOW)
        for _ in range(FLAP_DEATHS):
            die_and_recover(world, secret)
        # A long window, never beaten again: no alarm comes in the hour without a death.
        world.call("heartbeat", secret, scope=SCOPE, expect_within_seconds=7200)
        world.advance(7201)
        assert told(world, hook, signing)[-3:] == [
            "switch.flapping",
            "switch.settled",
            "switch.fired",
        ]
        death = world.store.latest_death("acme", SCOPE)
        assert death is not None
        assert death.flapping == "ended"
        # Armed again, it flaps no more: its next deaths are told.
        world.call("heartbeat", secret, scope=SCOPE, expect_within_seconds=WINDOW)
        switch = world.store.get_switch("acme", SCOPE)
        assert switch is not None
        assert switch.flapping_since is None
    finally:
        hook.close()
