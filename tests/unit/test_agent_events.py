"""Events for agents (the MCP Events extension): an agent's own news, a delivery waiting in one of
its mailboxes or a request it asked decided or expiring, read by poll with a resumable cursor
or received by a signed webhook, on a moved clock; written by the notifications' outbox with
what it tells of, bounded by quotas, and never more than its reader may see."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from tests.liveness_support import World
from tests.support import MODERN_META, TEST_KEYS, modern_headers
from tests.unit.test_notification_delivery import Answer, Receiver
from vigil.clock import ManualClock
from vigil.notifications.sending import Sender
from vigil.quotas.records import Quotas
from vigil.stores.memory import MemoryStore
from vigil.transports.mcp import McpEndpoint

MODERN = "2026-07-28"
EXTENSION = "io.modelcontextprotocol/events"
SECRET = "whsec_" + "c2VjcmV0LW9mLXRoZS1zdWJzY3JpYmVyLWhvc3QtMzI="
OTHER_SECRET = "whsec_" + "YW5vdGhlci1zZWNyZXQtb2YtYW5vdGhlci1ob3N0LTE="


class Agents(World):
    """A namespace with two agents, ``ann`` and ``bob``, and an MCP endpoint to reach it."""

    def __init__(self, clock: ManualClock, store: MemoryStore | None = None) -> None:
        super().__init__(clock, store)
        self.use_sender(Sender(keys=TEST_KEYS, clock=clock, allow_private=True, timeout_seconds=2))
        self.endpoint = McpEndpoint(self.app)
        self.ids: dict[str, str] = {}
        self.secrets: dict[str, str] = {}
        for label in ("ann", "bob"):
            self.ids[label], self.secrets[label] = self.tenant.register(name=label)

    def rpc(self, who: str | None, method: str, **params: Any) -> dict[str, Any]:
        """One 2026-07-28 request of ``method``, with ``who``'s credential."""
        from vigil.kit.http import HttpRequest

        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": method,
            "params": {**params, "_meta": MODERN_META},
        }
        headers = {"content-type": "application/json", **modern_headers(message)}
        if who is not None:
            secret = self.secrets.get(who, who)
            headers["authorization"] = f"Bearer {secret}"
        response = self.endpoint.handle(
            HttpRequest("POST", "/mcp", headers, json.dumps(message).encode())
        )
        return dict(json.loads(response.body))

    def poll(self, who: str, cursor: str | None, name: str = "delivery.waiting") -> dict[str, Any]:
        reply = self.rpc(who, "events/poll", name=name, arguments={}, cursor=cursor)
        assert "result" in reply, reply
        return dict(reply["result"])

    def send(self, sender: str, to: str, body: str = "hello") -> None:
        target = {"kind": "agent", "id": self.ids[to]}
        self.call("send", self.secrets[sender], target=target, body=body, reuse_direct=True)

    def subscribe(self, who: str, url: str, secret: str = SECRET, **more: Any) -> dict[str, Any]:
        delivery = {"mode": "webhook", "url": url, "secret": secret}
        return self.rpc(
            who,
            "events/subscribe",
            name="delivery.waiting",
            arguments={},
            delivery=delivery,
            **more,
        )


@pytest.fixture
def agents(clock: ManualClock) -> Agents:
    return Agents(clock)


@pytest.fixture
def receiver(clock: ManualClock) -> Any:
    found = Receiver(clock)
    yield found
    found.close()


# -- negotiated ------------------------------------------------------------------------------------
def test_the_extension_is_offered_in_discovery_and_nowhere_a_host_did_not_ask(
    agents: Agents,
) -> None:
    discovered = agents.rpc(None, "server/discover")["result"]
    offered = discovered["capabilities"]["extensions"][EXTENSION]
    assert offered == {}
    listed = agents.rpc("ann", "events/list")["result"]["events"]
    names = {event["name"] for event in listed}
    assert {"delivery.waiting", "request.answered", "request.expiring"} <= names
    for event in listed:
        assert sorted(event["delivery"]) == ["poll", "webhook"]
        assert event["inputSchema"]["additionalProperties"] is False
        assert event["payloadSchema"]["type"] == "object"

    # The handshake era knows no extension: its answers are what they were.
    from vigil.kit.http import HttpRequest

    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {}},
    }
    response = agents.endpoint.handle(
        HttpRequest("POST", "/mcp", {"content-type": "application/json"}, json.dumps(init).encode())
    )
    assert json.loads(response.body)["result"]["capabilities"] == {"tools": {"listChanged": False}}
    old = {"jsonrpc": "2.0", "id": 2, "method": "events/poll", "params": {"name": "x"}}
    response = agents.endpoint.handle(
        HttpRequest(
            "POST",
            "/mcp",
            {
                "content-type": "application/json",
                "authorization": f"Bearer {agents.secrets['ann']}",
            },
            json.dumps(old).encode(),
        )
    )
    assert json.loads(response.body)["error"]["code"] == -32601


def test_events_need_a_credential(agents: Agents) -> None:
    reply = agents.rpc(None, "events/poll", name="delivery.waiting", arguments={}, cursor=None)
    assert reply["error"]["code"] == -32600
    assert reply["error"]["data"]["code"] == "unauthenticated"


# -- by poll ---------------------------------------------------------------------------------------
def test_a_poller_reads_each_new_delivery_once_and_nothing_again_past_its_cursor(
    agents: Agents,
) -> None:
    started = agents.poll("ann", None)
    assert started["events"] == []
    assert started["truncated"] is False

    agents.send("bob", "ann", "first")
    agents.send("bob", "ann", "second")
    page = agents.poll("ann", started["cursor"])
    assert [e["name"] for e in page["events"]] == ["delivery.waiting", "delivery.waiting"]
    assert page["hasMore"] is False
    assert page["truncated"] is False
    first = page["events"][0]
    assert set(first) == {"eventId", "name", "timestamp", "data", "cursor"}
    assert first["data"]["address"] == f"agent:{agents.ids['ann']}"
    assert first["data"]["sender"] == agents.ids["bob"]
    # What waits is said; the message itself is for receive: no body travels in an event.
    assert "first" not in json.dumps(page)

    again = agents.poll("ann", page["cursor"])
    assert again["events"] == []
    # Resuming from the first event's own cursor gives the second, and only it.
    resumed = agents.poll("ann", first["cursor"])
    assert [e["eventId"] for e in resumed["events"]] == [page["events"][1]["eventId"]]

    envelopes = agents.call("receive", agents.secrets["ann"], max_messages=10)["deliveries"]
    assert sorted(e["id"] for e in envelopes) == sorted(
        e["data"]["envelope_id"] for e in page["events"]
    )


def test_an_agent_that_listens_to_nothing_has_nothing_written(clock: ManualClock) -> None:
    agents = Agents(clock)
    agents.send("bob", "ann")
    assert agents.store.notifications == {}
    assert agents.store.feeds == {}


def test_events_survive_a_restart_and_resume_from_the_cursor(clock: ManualClock) -> None:
    store = MemoryStore()
    before = Agents(clock, store)
    cursor = before.poll("ann", None)["cursor"]
    before.send("bob", "ann", "while it was down")
    # A new process on the same table: nothing is kept but what was written.
    after = McpEndpoint(before.app.__class__(store, clock, **_parts(before)))
    before.endpoint = after
    page = before.poll("ann", cursor)
    assert len(page["events"]) == 1


def _parts(world: World) -> dict[str, Any]:
    return {
        "queues": world.queues,
        "alarms": world.alarms,
        "blobs": world.blobs,
        "keys": TEST_KEYS,
        "sender": world.sender,
    }


def test_events_kept_are_bounded_and_a_poller_left_behind_is_told_it_was(
    agents: Agents,
) -> None:
    agents.app.quotas = Quotas(events_kept=3)
    cursor = agents.poll("ann", None)["cursor"]
    for number in range(5):
        agents.send("bob", "ann", f"message {number}")
    page = agents.poll("ann", cursor)
    assert page["truncated"] is True
    assert len(page["events"]) == 3
    assert agents.poll("ann", page["cursor"])["events"] == []


def test_a_page_is_bounded_and_says_there_is_more(agents: Agents) -> None:
    cursor = agents.poll("ann", None)["cursor"]
    for number in range(3):
        agents.send("bob", "ann", f"message {number}")
    reply = agents.rpc(
        "ann", "events/poll", name="delivery.waiting", arguments={}, cursor=cursor, maxEvents=2
    )
    page = reply["result"]
    assert len(page["events"]) == 2
    assert page["hasMore"] is True
    rest = agents.poll("ann", page["cursor"])
    assert len(rest["events"]) == 1
    assert rest["hasMore"] is False


def test_a_poller_stops_listening_when_it_stops_polling(agents: Agents) -> None:
    cursor = agents.poll("ann", None)["cursor"]
    agents.clock.advance(timedelta(hours=1).total_seconds())
    agents.send("bob", "ann")
    assert agents.poll("ann", cursor)["events"] == []


# -- what a reader may see -------------------------------------------------------------------------
def test_another_principal_or_namespace_reads_none_of_an_agents_events(
    agents: Agents,
) -> None:
    ann_cursor = agents.poll("ann", None)["cursor"]
    bob_cursor = agents.poll("bob", None)["cursor"]
    from tests.support import Tenant

    stranger = Tenant(agents.app, agents.clock, "globex")
    _, foreign = stranger.register(name="ann")
    foreign_cursor = agents.poll(foreign, None)["cursor"]

    agents.send("bob", "ann", "for ann only")
    assert agents.poll("bob", bob_cursor)["events"] == []
    assert agents.poll(foreign, foreign_cursor)["events"] == []
    # Another's cursor names its feed: refused, not read.
    stolen = agents.rpc(
        "bob", "events/poll", name="delivery.waiting", arguments={}, cursor=ann_cursor
    )
    assert stolen["error"]["code"] == -32602
    assert len(agents.poll("ann", ann_cursor)["events"]) == 1


def test_a_requester_hears_its_request_decided_and_the_decider_does_not(agents: Agents) -> None:
    ann_cursor = agents.poll("ann", None)["cursor"]
    bob_cursor = agents.poll("bob", None)["cursor"]
    asked = agents.call(
        "ask",
        agents.secrets["ann"],
        target={"kind": "agent", "id": agents.ids["bob"]},
        body="ship it?",
    )
    agents.call(
        "reply", agents.secrets["bob"], id=asked["id"], version=1, outcome="answered", answer="yes"
    )
    decided = agents.poll("ann", ann_cursor, name="request.answered")["events"]
    assert [e["data"]["request_id"] for e in decided] == [asked["id"]]
    assert decided[0]["data"]["outcome"] == "answered"
    assert agents.poll("bob", bob_cursor, name="request.answered")["events"] == []


# -- by webhook ------------------------------------------------------------------------------------
def test_a_webhook_subscriber_receives_one_signed_event_per_delivery(
    agents: Agents, receiver: Receiver
) -> None:
    subscribed = agents.subscribe("ann", receiver.url)["result"]
    assert subscribed["id"].startswith("sub_")
    cursor = agents.poll("ann", None)["cursor"]
    agents.send("bob", "ann", "one")
    agents.send("bob", "ann", "two")
    agents.advance(2)

    bodies = receiver.verified(SECRET)
    polled = agents.poll("ann", cursor)["events"]
    assert [b["eventId"] for b in bodies] == [e["eventId"] for e in polled]
    assert receiver.ids() == [e["eventId"] for e in polled]
    assert {r.headers["x-mcp-subscription-id"] for r in receiver.received} == {subscribed["id"]}
    # The secret is kept sealed: nothing stored shows it.
    assert SECRET.removeprefix("whsec_") not in repr(agents.store.feeds)


def test_a_refused_attempt_is_retried_with_backoff_under_the_same_id(
    agents: Agents, receiver: Receiver
) -> None:
    agents.subscribe("ann", receiver.url)
    receiver.script = [Answer(status=503)]
    agents.send("bob", "ann")
    agents.advance(2)
    assert len(receiver.received) == 1
    agents.advance(45)
    assert len(receiver.received) == 2
    first, second = receiver.received
    assert first.headers["webhook-id"] == second.headers["webhook-id"]
    assert len(receiver.verified(SECRET)) == 2


def test_a_subscription_not_refreshed_lapses_and_a_refresh_keeps_it(
    agents: Agents, receiver: Receiver
) -> None:
    subscribed = agents.subscribe("ann", receiver.url, ttlMs=120_000)["result"]
    agents.clock.advance(100)
    refreshed = agents.subscribe("ann", receiver.url, ttlMs=120_000)["result"]
    assert refreshed["id"] == subscribed["id"]
    assert refreshed["expiresAt"] > subscribed["expiresAt"]
    agents.clock.advance(100)
    agents.send("bob", "ann")
    agents.advance(2)
    assert len(receiver.received) == 1
    agents.clock.advance(200)
    agents.send("bob", "ann")
    agents.advance(2)
    assert len(receiver.received) == 1


def test_an_unsubscribed_host_receives_nothing_more(agents: Agents, receiver: Receiver) -> None:
    agents.subscribe("ann", receiver.url)
    delivery = {"mode": "webhook", "url": receiver.url, "secret": SECRET}
    reply = agents.rpc(
        "ann", "events/unsubscribe", name="delivery.waiting", arguments={}, delivery=delivery
    )
    assert reply["result"] == {"resultType": "complete"}
    agents.send("bob", "ann")
    agents.advance(2)
    assert receiver.received == []


def test_subscriptions_per_principal_have_a_quota_and_a_refresh_is_not_counted(
    agents: Agents,
) -> None:
    agents.app.quotas = Quotas(subscriptions=2)
    for port in (1, 2):
        assert "result" in agents.subscribe("ann", f"http://127.0.0.1:{port}/hook")
    assert "result" in agents.subscribe("ann", "http://127.0.0.1:1/hook", OTHER_SECRET)
    refused = agents.subscribe("ann", "http://127.0.0.1:3/hook")
    assert refused["error"]["data"]["code"] == "limit_exceeded"
    assert refused["error"]["data"]["details"]["quota"] == "subscriptions"
    assert "result" in agents.subscribe("bob", "http://127.0.0.1:3/hook")


@pytest.mark.parametrize(
    "delivery",
    [
        {"mode": "webhook", "url": "http://127.0.0.1:1/hook", "secret": "not-a-secret"},
        {"mode": "webhook", "url": "ftp://example.com/hook", "secret": SECRET},
        {"mode": "webhook", "url": "http://127.0.0.1:1/hook", "secret": SECRET, "extra": 1},
        {"mode": "push", "url": "http://127.0.0.1:1/hook", "secret": SECRET},
    ],
)
def test_a_bad_subscription_is_refused_and_changes_nothing(
    agents: Agents, delivery: dict[str, Any]
) -> None:
    reply = agents.rpc(
        "ann", "events/subscribe", name="delivery.waiting", arguments={}, delivery=delivery
    )
    assert reply["error"]["code"] == -32602
    assert agents.store.feeds == {}


def test_an_unknown_event_or_arguments_are_refused(agents: Agents) -> None:
    unknown = agents.rpc("ann", "events/poll", name="switch.exploded", arguments={}, cursor=None)
    assert unknown["error"]["code"] == -32602
    extra = agents.rpc(
        "ann", "events/poll", name="delivery.waiting", arguments={"box": "x"}, cursor=None
    )
    assert extra["error"]["code"] == -32602


# -- through the stdio bridge ---------------------------------------------------------------------
def test_the_stdio_bridge_passes_events_through(agents: Agents) -> None:
    from io import StringIO

    from tests.support import served_over_http
    from vigil.transports.router import Router
    from vigil.transports.stdio import StdioBridge

    meta = MODERN_META

    def line(request_id: int, method: str, **params: Any) -> str:
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        return json.dumps({**message, "params": {**params, "_meta": meta}}) + "\n"

    with served_over_http(Router(agents.app, frozenset())) as url:
        bridge = StdioBridge(url, agents.secrets["ann"])
        out = StringIO()
        bridge.serve(StringIO(line(1, "server/discover")), out)
        bridge.serve(StringIO(line(2, "events/poll", name="delivery.waiting", arguments={})), out)
        discovered, started = (json.loads(reply) for reply in out.getvalue().splitlines())
        assert EXTENSION in discovered["result"]["capabilities"]["extensions"]
        agents.send("bob", "ann")
        out = StringIO()
        polled = line(3, "events/poll", name="delivery.waiting", cursor=started["result"]["cursor"])
        bridge.serve(StringIO(polled), out)
    (event,) = json.loads(out.getvalue())["result"]["events"]
    assert event["data"]["sender"] == agents.ids["bob"]


def test_a_requester_hears_its_request_expiring_and_expired(agents: Agents) -> None:
    cursor = agents.poll("ann", None)["cursor"]
    asked = agents.call(
        "ask",
        agents.secrets["ann"],
        target={"kind": "agent", "id": agents.ids["bob"]},
        body="still there?",
        expires_in_seconds=600,
    )
    agents.advance(601)
    for name in ("request.expiring", "request.expired"):
        (event,) = agents.poll("ann", cursor, name=name)["events"]
        assert event["data"]["request_id"] == asked["id"]
    assert agents.poll("bob", agents.poll("bob", None)["cursor"])["events"] == []


def test_two_events_racing_for_one_feed_both_land_in_order(clock: ManualClock) -> None:
    store = MemoryStore()
    agents = Agents(clock, store)
    cursor = agents.poll("ann", None)["cursor"]
    reading = store.get_feed
    raced: list[bool] = []

    def read_then_lose(namespace: str, principal: str) -> Any:
        found = reading(namespace, principal)
        if not raced and principal == agents.ids["ann"]:
            # Another event takes the feed's next number between this read and its write.
            raced.append(True)
            agents.send("bob", "ann", "the interloper")
        return found

    store.get_feed = read_then_lose  # type: ignore[method-assign]
    agents.send("bob", "ann", "the first")
    store.get_feed = reading  # type: ignore[method-assign]
    events = agents.poll("ann", cursor)["events"]
    assert raced == [True]
    assert len({e["eventId"] for e in events}) == 2
    cursors = [e["cursor"] for e in events]
    assert agents.poll("ann", cursors[0])["events"] == events[1:]


def test_an_expiring_request_that_loses_the_feed_to_another_event_is_told_again(
    clock: ManualClock,
) -> None:
    store = MemoryStore()
    agents = Agents(clock, store)
    cursor = agents.poll("ann", None)["cursor"]
    asked = agents.call(
        "ask",
        agents.secrets["ann"],
        target={"kind": "agent", "id": agents.ids["bob"]},
        body="still there?",
        expires_in_seconds=600,
    )
    reading = store.get_feed
    raced: list[bool] = []

    def read_then_lose(namespace: str, principal: str) -> Any:
        found = reading(namespace, principal)
        if not raced and principal == agents.ids["ann"]:
            raced.append(True)
            agents.send("bob", "ann", "meanwhile")
        return found

    store.get_feed = read_then_lose  # type: ignore[method-assign]
    agents.advance(590)
    store.get_feed = reading  # type: ignore[method-assign]
    assert raced == [True]
    (event,) = agents.poll("ann", cursor, name="request.expiring")["events"]
    assert event["data"]["request_id"] == asked["id"]


# -- the other kinds: an instruction posted, a switch watched fired ------------------------------
def test_an_agent_hears_an_instruction_posted_to_its_session_and_not_its_text(
    agents: Agents,
) -> None:
    agents.call(
        "session_heartbeat", agents.secrets["ann"], sessionId="s-1", idempotencyKey="beat-1"
    )
    ann_cursor = agents.poll("ann", None, name="instruction.posted")["cursor"]
    bob_cursor = agents.poll("bob", None, name="instruction.posted")["cursor"]
    posted = agents.call("post_instruction", None, sessionId="s-1", body="stop the deploy")
    (event,) = agents.poll("ann", ann_cursor, name="instruction.posted")["events"]
    assert event["data"]["instruction_id"] == posted["id"]
    assert event["data"]["session_id"] == "s-1"
    assert "stop the deploy" not in json.dumps(event)
    assert agents.poll("bob", bob_cursor, name="instruction.posted")["events"] == []


def test_an_agent_hears_a_switch_it_watches_fire_and_the_holder_does_not(
    agents: Agents,
) -> None:
    ann_cursor = agents.poll("ann", None, name="switch.fired")["cursor"]
    bob_cursor = agents.poll("bob", None, name="switch.fired")["cursor"]
    agents.call(
        "heartbeat",
        agents.secrets["bob"],
        scope="nightly",
        expect_within_seconds=10,
        on_expiry=["queue_alert"],
        notify_address=f"agent:{agents.ids['ann']}",
    )
    agents.advance(11)
    (event,) = agents.poll("ann", ann_cursor, name="switch.fired")["events"]
    assert event["data"]["scope"] == "nightly"
    assert event["data"]["holder"] == agents.ids["bob"]
    assert agents.poll("bob", bob_cursor, name="switch.fired")["events"] == []
    # The alert it watches for waits in its mailbox too.
    waiting = agents.poll("ann", ann_cursor)["events"]
    assert [e["data"]["kind"] for e in waiting] == ["alert"]


def test_however_high_the_quota_a_feeds_subscriptions_fit_its_record(agents: Agents) -> None:
    # The fake refuses an item over DynamoDB's 400 KB, as DynamoDB would.
    agents.app.quotas = Quotas(subscriptions=1000)
    long = "http://127.0.0.1:1/" + "p" * 1970
    for number in range(100):
        assert "result" in agents.subscribe("ann", f"{long}{number:03d}")
    refused = agents.subscribe("ann", f"{long}100")
    assert refused["error"]["data"]["details"]["limit"] == 100
    feed = agents.store.get_feed("acme", agents.ids["ann"])
    assert feed is not None
    assert len(feed.subscriptions) == 100


def test_a_watched_switchs_firing_reaches_a_webhook_when_no_channel_takes_it(
    agents: Agents, receiver: Receiver
) -> None:
    delivery = {"mode": "webhook", "url": receiver.url, "secret": SECRET}
    agents.rpc("ann", "events/subscribe", name="switch.fired", arguments={}, delivery=delivery)
    agents.call(
        "heartbeat",
        agents.secrets["bob"],
        scope="nightly",
        expect_within_seconds=10,
        on_expiry=["queue_alert"],
        notify_address=f"agent:{agents.ids['ann']}",
    )
    agents.advance(13)
    (body,) = receiver.verified(SECRET)
    assert body["name"] == "switch.fired"
    assert body["data"]["scope"] == "nightly"


def test_a_ring_written_over_while_a_poll_reads_it_repeats_nothing(clock: ManualClock) -> None:
    store = MemoryStore()
    agents = Agents(clock, store)
    agents.app.quotas = Quotas(events_kept=3)
    cursor = agents.poll("ann", None)["cursor"]
    for number in range(3):
        agents.send("bob", "ann", f"early {number}")
    reading = store.get_feed
    raced: list[bool] = []

    def read_then_overwrite(namespace: str, principal: str) -> Any:
        found = reading(namespace, principal)
        if not raced:
            raced.append(True)
            for number in range(3):
                agents.send("bob", "ann", f"late {number}")
        return found

    store.get_feed = read_then_overwrite  # type: ignore[method-assign]
    first = agents.poll("ann", cursor)
    store.get_feed = reading  # type: ignore[method-assign]
    second = agents.poll("ann", first["cursor"])
    assert first["truncated"] is True
    seen = [e["eventId"] for e in first["events"] + second["events"]]
    assert len(seen) == len(set(seen)) == 3
