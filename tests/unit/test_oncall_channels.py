"""PagerDuty, Microsoft Teams and Discord channels: created with their receivers' URLs and keys
(sealed, never shown), each sent its receiver's documented message through the real HTTP
client to a receiver on this machine standing in for the receiver's host, retried on 429 as a
webhook is, told of a switch's recovery, and (PagerDuty) of a person's acknowledgement.

The formats themselves are checked against the receivers' published schemas and SDKs in
``test_receiver_formats.py``; here it is the channel that is tested: what is created, where it
sends, when, and how often."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.support import TEST_KEYS
from tests.unit.test_notification_delivery import Answer, Notifying, Receiver, arm_and_die
from vigil.clock import ManualClock
from vigil.errors import ErrorCode, VigilError
from vigil.notifications.outbound import SendResult, post
from vigil.notifications.sending import Sender

SCOPE = "job-nightly"
ROUTING_KEY = "R0123456789abcdef0123456789ABCDE"
TEAMS_URL = (
    "https://default0a1b.02.environment.api.powerplatform.com:443/powerautomate/automations/"
    "direct/workflows/0123abcd/triggers/manual/paths/invoke?api-version=1&sp=%2Ftriggers"
    "&sv=1.0&sig=teamsSignatureTeamsSignature"
)
DISCORD_URL = "https://discord.com/api/webhooks/123456789012345678/discordTokenDiscordToken-_"


@pytest.fixture
def receiver(clock: ManualClock) -> Iterator[Receiver]:
    found = Receiver(clock)
    yield found
    found.close()


@pytest.fixture
def world(clock: ManualClock, receiver: Receiver) -> Notifying:
    """Notifications leave through the real HTTP client, every receiver's host answered by
    ``receiver``: each request's URL as sent is kept in ``world.sent_to``."""
    found = Notifying(clock)
    sent_to: list[str] = []

    def rerouted(url: str, body: bytes, headers: Any, **options: Any) -> SendResult:
        if url.startswith("http://127.0.0.1:"):  # a webhook channel's own receiver
            return post(url, body, headers, **options)
        sent_to.append(url)
        local = f"{receiver.url}?{urlsplit(url).query}" if urlsplit(url).query else receiver.url
        return post(local, body, headers, **options)

    found.use_sender(
        Sender(
            keys=TEST_KEYS,
            clock=clock,
            console_base="https://vigil.example.com",
            post=rerouted,
            allow_private=True,  # the webhooks beside them are on this machine too
            timeout_seconds=2.0,
        )
    )
    found.sent_to = sent_to  # type: ignore[attr-defined]
    return found


def create(world: Notifying, kind: str, events: list[str], **target: Any) -> dict[str, Any]:
    created = world.call(
        "create_channel", name=f"{kind} on call", kind=kind, rules=[{"events": events}], **target
    )
    channel: dict[str, Any] = created["channel"]
    assert created["signing_secret"] is None  # only a webhook has one
    return channel


def bodies(receiver: Receiver) -> list[dict[str, Any]]:
    return [json.loads(received.body) for received in receiver.received]


def refused(world: Notifying, **arguments: Any) -> str:
    with pytest.raises(VigilError) as caught:
        world.call("create_channel", name="x", rules=[{"events": ["switch.fired"]}], **arguments)
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT
    return json.dumps(caught.value.details)


# -- creating them -------------------------------------------------------------------------------
def test_each_receivers_credential_is_sealed_and_only_its_host_is_shown(
    world: Notifying,
) -> None:
    teams = create(world, "teams", ["switch.fired"], url=TEAMS_URL)
    discord = create(world, "discord", ["switch.fired"], url=DISCORD_URL)
    pager = create(world, "pagerduty", ["switch.fired"], routing_key=ROUTING_KEY)
    europe = create(
        world,
        "pagerduty",
        ["switch.fired"],
        routing_key=ROUTING_KEY,
        url="https://events.eu.pagerduty.com/v2/enqueue",
    )
    assert teams["target"] == "default0a1b.02.environment.api.powerplatform.com"
    assert discord["target"] == "discord.com"
    assert pager["target"] == "https://events.pagerduty.com"
    assert europe["target"] == "https://events.eu.pagerduty.com"
    listed = json.dumps(world.call("list_channels"))
    stored = json.dumps([c.model_dump(mode="json") for c in world.store.list_channels("acme")])
    for secret in ("teamsSignature", "discordToken", ROUTING_KEY):
        assert secret not in listed
        assert secret not in stored


def test_a_url_that_is_not_the_receivers_is_refused_and_nothing_is_created(
    world: Notifying,
) -> None:
    assert "Workflows" in refused(world, kind="teams", url="https://example.com/hook?sig=x")
    assert "Discord" in refused(world, kind="webhook", url=DISCORD_URL)  # never kept readable
    assert "Teams" in refused(world, kind="webhook", url=TEAMS_URL)
    assert "Teams" in refused(
        world, kind="teams", url="https://evil.logic.azure.com.example.com/x?sig=x"
    )
    assert "Discord" in refused(world, kind="discord", url="https://discord.com/api/users/1")
    assert "Discord" in refused(
        world, kind="discord", url="http://discord.com/api/webhooks/1/token"
    )
    assert "PagerDuty" in refused(
        world, kind="pagerduty", routing_key=ROUTING_KEY, url="https://events.example.com"
    )
    assert "routing_key" in refused(world, kind="pagerduty")
    assert "routing_key" in refused(world, kind="discord", url=DISCORD_URL, routing_key=ROUTING_KEY)
    assert "routing_key" in refused(
        world, kind="pagerduty", routing_key="short"
    )  # not an integration's key
    assert world.call("list_channels")["channels"] == []


# -- what each is sent -----------------------------------------------------------------------------
def test_pagerduty_is_triggered_by_a_death_and_resolved_by_its_recovery_under_one_key(
    world: Notifying, receiver: Receiver
) -> None:
    create(world, "pagerduty", ["switch.fired"], routing_key=ROUTING_KEY)
    secret = arm_and_die(world)
    world.advance(11)
    world.call("heartbeat", secret, scope=SCOPE, expect_within_seconds=60)
    world.advance(1)
    trigger, resolve = bodies(receiver)
    death = world.store.latest_death("acme", SCOPE)
    assert death is not None
    fired_id = death.done["notify"]["event_id"]
    assert world.sent_to == ["https://events.pagerduty.com/v2/enqueue"] * 2  # type: ignore[attr-defined]
    assert trigger["routing_key"] == ROUTING_KEY  # opened from its seal at send time only
    assert (trigger["event_action"], trigger["dedup_key"]) == ("trigger", fired_id)
    assert trigger["payload"]["severity"] == "critical"
    assert resolve == {"routing_key": ROUTING_KEY, "event_action": "resolve", "dedup_key": fired_id}


def test_a_persons_acknowledgement_acknowledges_the_incident_and_nothing_else_hears_of_it(
    world: Notifying, receiver: Receiver
) -> None:
    slack_like = Receiver(world.clock)
    try:
        pager = create(world, "pagerduty", ["switch.fired"], routing_key=ROUTING_KEY)
        _, signing = world.channel(slack_like.url, ["switch.fired"])
        person, person_secret = world.tenant.register(kind="person", name="pat")
        arm_and_die(world)
        world.advance(11)
        [trigger] = bodies(receiver)
        acknowledged = world.call("acknowledge_alert", person_secret, event_id=trigger["dedup_key"])
        world.call("acknowledge_alert", person_secret, event_id=trigger["dedup_key"])  # again
        world.advance(1)
        _, acknowledge = bodies(receiver)
        assert acknowledged["acknowledged_by"] == person
        assert acknowledge == {
            "routing_key": ROUTING_KEY,
            "event_action": "acknowledge",
            "dedup_key": trigger["dedup_key"],
        }
        # The webhook was told of the death alone: an acknowledgement is for on-call services.
        assert [event["type"] for event in slack_like.verified(signing)] == ["switch.fired"]
        failures = world.call("list_delivery_failures", channel_id=pager["id"])
        assert failures["failures"] == []
    finally:
        slack_like.close()


def test_an_escalation_to_pagerduty_is_acknowledged_there_too(
    world: Notifying, receiver: Receiver
) -> None:
    first = Receiver(world.clock)
    try:
        pager = create(world, "pagerduty", ["request.expired"], routing_key=ROUTING_KEY)
        world.channel(
            first.url, ["switch.fired"], escalate_after_minutes=5, escalate_to=pager["id"]
        )
        _, person_secret = world.tenant.register(kind="person", name="pat")
        arm_and_die(world)
        world.advance(11 + 5 * 60)
        [escalated] = bodies(receiver)
        assert escalated["event_action"] == "trigger"
        world.call("acknowledge_alert", person_secret, event_id=escalated["dedup_key"])
        world.advance(1)
        assert bodies(receiver)[-1]["event_action"] == "acknowledge"
        assert bodies(receiver)[-1]["dedup_key"] == escalated["dedup_key"]
    finally:
        first.close()


def test_teams_gets_an_adaptive_card_and_discord_an_embed_of_the_death_and_of_its_end(
    world: Notifying, receiver: Receiver
) -> None:
    create(world, "teams", ["switch.fired"], url=TEAMS_URL)
    secret = arm_and_die(world)
    world.advance(11)
    world.call("heartbeat", secret, scope=SCOPE, expect_within_seconds=60)
    world.advance(1)
    fired, recovered = bodies(receiver)
    assert world.sent_to == [TEAMS_URL, TEAMS_URL]  # type: ignore[attr-defined]
    for message, title in ((fired, "Switch fired"), (recovered, "Switch recovered")):
        [attachment] = message["attachments"]
        assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
        assert title in json.dumps(attachment["content"])


def test_discord_asks_for_its_link_buttons_and_says_the_downtime(
    world: Notifying, receiver: Receiver
) -> None:
    create(world, "discord", ["switch.fired"], url=DISCORD_URL)
    secret = arm_and_die(world)
    world.advance(11)
    world.call("heartbeat", secret, scope=SCOPE, expect_within_seconds=60)
    world.advance(1)
    fired, recovered = bodies(receiver)
    assert world.sent_to == [f"{DISCORD_URL}?with_components=true"] * 2  # type: ignore[attr-defined]
    assert fired["allowed_mentions"] == {"parse": []}
    assert "Switch fired" in fired["embeds"][0]["title"]
    assert "Switch recovered" in recovered["embeds"][0]["title"]
    assert "1 s" in json.dumps(recovered["embeds"][0])  # down since its deadline, 10 s in


# -- retried, and given up on ----------------------------------------------------------------------
def test_a_429_from_pagerduty_is_retried_after_the_backoff(
    world: Notifying, receiver: Receiver
) -> None:
    create(world, "pagerduty", ["switch.fired"], routing_key=ROUTING_KEY)
    receiver.script = [Answer(429)]
    arm_and_die(world)
    world.advance(11)
    assert len(receiver.received) == 1
    world.advance(60)  # past the first backoff (30 s, give or take a quarter)
    first, again = bodies(receiver)
    assert first == again  # the same event, the same key: PagerDuty deduplicates it
    [notification] = world.store.notifications.values()  # type: ignore[attr-defined]
    [delivery] = notification.deliveries.values()
    assert [a.outcome for a in delivery.attempts] == ["retry", "delivered"]


def test_a_deleted_discord_webhook_disables_its_channel(
    world: Notifying, receiver: Receiver
) -> None:
    discord = create(world, "discord", ["switch.fired"], url=DISCORD_URL)
    # Discord's answer for a webhook deleted (code 10015).
    receiver.script = [Answer(404, body=b'{"message": "Unknown Webhook", "code": 10015}')]
    arm_and_die(world)
    world.advance(11)
    [listed] = world.call("list_channels")["channels"]
    assert (listed["id"], listed["state"]) == (discord["id"], "disabled")
    assert "404" in listed["disabled_reason"]


def test_test_channel_reaches_each_kind_and_pagerduty_pages_nobody(
    world: Notifying, receiver: Receiver
) -> None:
    channels = [
        create(world, "pagerduty", ["switch.fired"], routing_key=ROUTING_KEY),
        create(world, "teams", ["switch.fired"], url=TEAMS_URL),
        create(world, "discord", ["switch.fired"], url=DISCORD_URL),
    ]
    results = [world.call("test_channel", id=c["id"]) for c in channels]
    assert [r["outcome"] for r in results] == ["delivered"] * 3
    change, card, embed = bodies(receiver)
    # A change event: on the service's timeline, no incident, nobody woken.
    assert world.sent_to[0] == "https://events.pagerduty.com/v2/change/enqueue"  # type: ignore[attr-defined]
    assert "event_action" not in change
    assert change["payload"]["summary"].startswith("Test notification")
    assert "Test notification" in json.dumps(card)
    assert "Test notification" in embed["embeds"][0]["title"]


def test_a_resolve_never_overtakes_its_trigger(world: Notifying, receiver: Receiver) -> None:
    """The trigger is answered 429 and retried after its backoff; the switch is beaten again
    meanwhile: the resolve waits for the trigger, uncounted, then follows it."""
    create(world, "pagerduty", ["switch.fired"], routing_key=ROUTING_KEY)
    receiver.script = [Answer(429)]
    secret = arm_and_die(world)
    world.advance(11)
    world.call("heartbeat", secret, scope=SCOPE, expect_within_seconds=600)
    world.advance(60)
    actions = [body["event_action"] for body in bodies(receiver)]
    assert actions == ["trigger", "trigger", "resolve"]


def test_an_incident_opened_by_escalation_is_resolved_by_the_recovery(
    world: Notifying, receiver: Receiver
) -> None:
    first = Receiver(world.clock)
    try:
        # PagerDuty's own rules take nothing of switches: it is only escalated to.
        pager = create(world, "pagerduty", ["request.expired"], routing_key=ROUTING_KEY)
        escalation = {"escalate_after_minutes": 5, "escalate_to": pager["id"]}
        world.channel(first.url, ["switch.fired"], **escalation)
        secret = arm_and_die(world)
        world.advance(11 + 5 * 60)
        world.call("heartbeat", secret, scope=SCOPE, expect_within_seconds=600)
        world.advance(1)
        trigger, resolve = bodies(receiver)
        assert (trigger["event_action"], resolve["event_action"]) == ("trigger", "resolve")
        assert resolve["dedup_key"] == trigger["dedup_key"]
    finally:
        first.close()
