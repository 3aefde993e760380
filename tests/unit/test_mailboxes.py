"""Mailboxes at the service layer, on the in-memory store and queues, with the clock moved by
hand: leased deliveries, their generations, duplicates, usage and dead letters."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from tests.conftest import create_tables_from_template
from tests.support import Tenant, app_on, error_of
from vigil.app import App
from vigil.clock import ManualClock
from vigil.errors import ErrorCode, VigilError
from vigil.mailboxes.memory import MemoryMailboxQueues
from vigil.mailboxes.records import (
    MAX_BOXES_PER_AGENT,
    MAX_HANDOUTS,
    SYSTEM_SENDER,
    Envelope,
    EnvelopeKind,
    agent_address,
    envelope_id_for,
)
from vigil.mailboxes.service import deliver
from vigil.mailboxes.sqs import SqsMailboxQueues
from vigil.stores.dynamo import DynamoStore
from vigil.stores.memory import MemoryStore


@dataclass(frozen=True)
class Agent:
    id: str
    secret: str

    @property
    def address(self) -> str:
        return agent_address(self.id)


@pytest.fixture
def queues(clock: ManualClock) -> MemoryMailboxQueues:
    return MemoryMailboxQueues(clock)


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def app(store: MemoryStore, clock: ManualClock, queues: MemoryMailboxQueues) -> App:
    return app_on(store, clock, queues=queues)


@pytest.fixture
def acme(app: App, clock: ManualClock) -> Tenant:
    return Tenant(app, clock, "acme")


@pytest.fixture
def globex(app: App, clock: ManualClock) -> Tenant:
    return Tenant(app, clock, "globex")


def agent(tenant: Tenant, name: str = "w") -> Agent:
    return Agent(*tenant.register(name=name))


def send(
    app: App,
    clock: ManualClock,
    namespace: str,
    address: str,
    payload: dict[str, Any] | None = None,
    envelope_id: str | None = None,
    kind: EnvelopeKind = "message",
) -> Envelope:
    assert app.queues is not None
    envelope = Envelope(
        id=envelope_id or envelope_id_for(uuid.uuid4().hex),
        namespace=namespace,
        address=address,
        sender=SYSTEM_SENDER,
        kind=kind,
        payload=payload if payload is not None else {"n": 1},
        sent_at=clock.now(),
    )
    return deliver(app.store, app.queues, clock, namespace, address, envelope)


def poll(tenant: Tenant, who: Agent, **arguments: Any) -> list[dict[str, Any]]:
    deliveries: list[dict[str, Any]] = tenant.call("receive", who.secret, **arguments)["deliveries"]
    return deliveries


def ack(tenant: Tenant, who: Agent, delivery: dict[str, Any]) -> dict[str, Any]:
    return tenant.call(
        "acknowledge", who.secret, id=delivery["id"], generation=delivery["generation"]
    )


def snapshot(store: MemoryStore, queues: MemoryMailboxQueues) -> Any:
    """Everything a mailbox tool can change, to compare before and after."""
    return (
        {key: d.model_dump() for key, d in store.deliveries.items()},
        {key: m.model_dump() for key, m in store.mailboxes.items()},
        {key: u.model_dump() for key, u in store.usage.items()},
        {
            name: [
                (m.message_id, m.receive_count, m.visible_at, tuple(m.receipt_handles))
                for m in queue.messages + queue.dead_letters
            ]
            for name, queue in queues.queues.items()
        },
    )


def messages_in(queues: MemoryMailboxQueues) -> int:
    return sum(len(queue.messages) for queue in queues.queues.values())


# -- hand-out and acknowledgment ----------------------------------------------------------
def test_a_delivery_is_leased_to_the_owner_and_acknowledged_once(
    app: App, acme: Tenant, clock: ManualClock, queues: MemoryMailboxQueues
) -> None:
    me = agent(acme)
    sent = send(app, clock, "acme", me.address, {"text": "hello"}, kind="alert")
    (delivery,) = acme.call("inbox_poll", me.secret, lease_seconds=30)["deliveries"]
    assert delivery == {
        "id": sent.id,
        "generation": 1,
        "address": me.address,
        "sender": "vigil",
        "kind": "alert",
        "payload": {"text": "hello"},
        "sent_at": "2026-01-01T00:00:00Z",
        "lease_expires_at": "2026-01-01T00:00:30Z",
    }
    assert poll(acme, me) == []  # leased: nobody else gets it meanwhile
    assert ack(acme, me, delivery) == {"received": True}
    assert ack(acme, me, delivery) == {"received": True}  # a retried acknowledgment
    assert messages_in(queues) == 0
    clock.advance(31)
    assert poll(acme, me) == []


def test_a_lapsed_lease_returns_the_delivery_with_a_higher_generation(
    app: App, acme: Tenant, clock: ManualClock
) -> None:
    me = agent(acme)
    send(app, clock, "acme", me.address)
    (first,) = poll(acme, me, lease_seconds=10)
    clock.advance(11)
    (second,) = poll(acme, me, lease_seconds=10)
    assert (second["id"], second["generation"]) == (first["id"], 2)

    stale = error_of(ack, acme, me, first)
    assert stale.code is ErrorCode.STALE_GENERATION
    assert stale.details == {"current_generation": 2}
    assert ack(acme, me, second) == {"received": True}


def test_a_stale_acknowledgment_is_refused_and_changes_nothing(
    app: App,
    acme: Tenant,
    clock: ManualClock,
    store: MemoryStore,
    queues: MemoryMailboxQueues,
) -> None:
    me = agent(acme)
    send(app, clock, "acme", me.address)
    (first,) = poll(acme, me, lease_seconds=10)
    clock.advance(11)
    (second,) = poll(acme, me, lease_seconds=10)
    before = snapshot(store, queues)
    for generation in (1, 3):
        error = error_of(acme.call, "acknowledge", me.secret, id=first["id"], generation=generation)
        assert error.code is ErrorCode.STALE_GENERATION
        assert error.details == {"current_generation": 2}
    # The current generation, once its lease has lapsed, is refused too.
    clock.advance(11)
    lapsed = error_of(ack, acme, me, second)
    assert lapsed.code is ErrorCode.STALE_GENERATION
    assert lapsed.details == {"current_generation": 2}
    assert snapshot(store, queues) == before


@pytest.mark.parametrize("redelivery", [False, True], ids=["first hand-out", "redelivery"])
def test_two_receivers_never_both_hold_a_valid_generation(
    app: App,
    acme: Tenant,
    clock: ManualClock,
    store: MemoryStore,
    monkeypatch: pytest.MonkeyPatch,
    redelivery: bool,
) -> None:
    me = agent(acme)
    send(app, clock, "acme", me.address)
    if redelivery:
        poll(acme, me, lease_seconds=10)
        clock.advance(11)
    lease_delivery = store.lease_delivery
    other: list[dict[str, Any]] = []

    def interleaved(delivery: Any, expected_version: int | None) -> None:
        monkeypatch.setattr(store, "lease_delivery", lease_delivery)
        # Receiver A read the record and is about to write its hand-out; meanwhile A's SQS
        # lease lapses and receiver B takes the same message, all the way through.
        clock.advance(11)
        other.extend(poll(acme, me, lease_seconds=10))
        lease_delivery(delivery, expected_version)

    monkeypatch.setattr(store, "lease_delivery", interleaved)
    first = poll(acme, me, lease_seconds=10)
    assert first == []
    (winner,) = other
    assert winner["generation"] == (2 if redelivery else 1)
    assert ack(acme, me, winner) == {"received": True}


def test_a_concurrent_duplicate_acknowledgment_is_told_the_delivery_is_done(
    app: App,
    acme: Tenant,
    clock: ManualClock,
    store: MemoryStore,
    queues: MemoryMailboxQueues,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    me = agent(acme)
    send(app, clock, "acme", me.address)
    (delivery,) = poll(acme, me, lease_seconds=30)
    acknowledge_delivery = store.acknowledge_delivery
    duplicate: list[dict[str, Any]] = []

    def interleaved(*args: Any) -> None:
        monkeypatch.setattr(store, "acknowledge_delivery", acknowledge_delivery)
        # This call read the leased delivery; the same acknowledgment, sent twice by a client
        # that retried, gets there first and finishes it.
        duplicate.append(ack(acme, me, delivery))
        acknowledge_delivery(*args)

    monkeypatch.setattr(store, "acknowledge_delivery", interleaved)
    assert ack(acme, me, delivery) == {"received": True}
    assert duplicate == [{"received": True}]
    assert messages_in(queues) == 0
    stored = store.get_delivery("acme", delivery["id"])
    assert stored is not None
    assert (stored.state, stored.generation) == ("acknowledged", 1)


def test_an_opaque_id_of_no_delivery_is_not_found(acme: Tenant) -> None:
    me = agent(acme)
    for unknown in ("x", "REPLACE_WITH_RETURNED_ID", "env_" + "a" * 40, "ä/+= id"):
        error = error_of(acme.call, "acknowledge", me.secret, id=unknown, generation=1)
        assert error.code is ErrorCode.NOT_FOUND


def test_a_duplicate_copy_of_an_envelope_is_handed_out_once(
    app: App, acme: Tenant, clock: ManualClock, store: MemoryStore, queues: MemoryMailboxQueues
) -> None:
    me = agent(acme)
    # A sender that crashed after sending retries with the same envelope id.
    envelope_id = envelope_id_for("acme/deploy/7")
    send(app, clock, "acme", me.address, envelope_id=envelope_id)
    send(app, clock, "acme", me.address, envelope_id=envelope_id)
    (delivery,) = poll(acme, me, max_messages=10)
    assert delivery["id"] == envelope_id
    assert messages_in(queues) == 1  # the other copy was deleted, not handed out

    clock.advance(61)
    (again,) = poll(acme, me, max_messages=10)
    assert again["generation"] == 2
    ack(acme, me, again)
    send(app, clock, "acme", me.address, envelope_id=envelope_id)  # a retry even later
    assert poll(acme, me, max_messages=10) == []
    assert messages_in(queues) == 0
    assert list(store.usage) == [("acme", envelope_id)]


def test_the_first_delivery_is_recorded_once_across_redeliveries(
    app: App, acme: Tenant, clock: ManualClock, store: MemoryStore
) -> None:
    me = agent(acme)
    sent = send(app, clock, "acme", me.address)
    first_delivered_at = clock.advance(5)
    for _ in range(3):
        poll(acme, me, lease_seconds=10)
        clock.advance(11)
    (last,) = poll(acme, me)
    ack(acme, me, last)
    (usage,) = store.usage.values()
    assert (usage.envelope_id, usage.recipient, usage.sender, usage.kind) == (
        sent.id,
        me.id,
        "vigil",
        "message",
    )
    assert usage.delivered_at == first_delivered_at


def test_a_crash_before_the_usage_record_still_records_it_once(
    app: App, acme: Tenant, clock: ManualClock, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    me = agent(acme)
    send(app, clock, "acme", me.address)
    record_usage = store.record_usage

    def crash(usage: Any) -> bool:
        monkeypatch.setattr(store, "record_usage", record_usage)
        raise RuntimeError("the function died here")

    monkeypatch.setattr(store, "record_usage", crash)
    assert error_of(poll, acme, me, lease_seconds=10).code is ErrorCode.UNAVAILABLE
    clock.advance(11)
    (delivery,) = poll(acme, me)
    assert delivery["generation"] == 2
    assert len(store.usage) == 1


def test_a_crash_before_the_delete_leaves_a_copy_that_is_never_handed_out(
    app: App,
    acme: Tenant,
    clock: ManualClock,
    queues: MemoryMailboxQueues,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    me = agent(acme)
    send(app, clock, "acme", me.address)
    (delivery,) = poll(acme, me, lease_seconds=10)

    def unreachable(ref: Any, receipt_handle: str) -> None:
        raise VigilError(ErrorCode.UNAVAILABLE, "the queue is unreachable")

    monkeypatch.setattr(queues, "delete", unreachable)
    assert ack(acme, me, delivery) == {"received": True}  # recorded; the delete comes later
    monkeypatch.undo()
    clock.advance(11)
    assert poll(acme, me) == []
    assert messages_in(queues) == 0


def test_a_failure_midway_keeps_what_was_handed_out(
    app: App, acme: Tenant, clock: ManualClock, store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    me = agent(acme)
    sent = [send(app, clock, "acme", me.address, {"n": n}) for n in range(3)]
    record_usage = store.record_usage
    recorded: list[Any] = []

    def throttled_after_one(usage: Any) -> bool:
        if recorded:
            raise VigilError(ErrorCode.THROTTLED, "the store is busy")
        recorded.append(usage)
        return record_usage(usage)

    monkeypatch.setattr(store, "record_usage", throttled_after_one)
    (first,) = poll(acme, me, max_messages=10, lease_seconds=10)
    monkeypatch.undo()
    ack(acme, me, first)
    # The others stay hidden in SQS until their lease lapses, then come back.
    assert poll(acme, me, max_messages=10) == []
    clock.advance(11)
    rest = poll(acme, me, max_messages=10)
    assert sorted(d["id"] for d in [first, *rest]) == sorted(e.id for e in sent)
    assert len(store.usage) == 3


# -- dead letters -------------------------------------------------------------------------
def test_dead_letters_after_five_lapses_are_inspectable_by_the_owner_only(
    app: App, acme: Tenant, clock: ManualClock
) -> None:
    me, other = agent(acme), agent(acme)
    sent = send(app, clock, "acme", me.address, {"job": 7})
    for generation in range(1, MAX_HANDOUTS + 1):
        (delivery,) = poll(acme, me, lease_seconds=10)
        assert delivery["generation"] == generation
        clock.advance(11)
    assert poll(acme, me) == []
    for _ in range(2):  # looking does not consume
        letters = acme.call("list_dead_letters", me.secret)["dead_letters"]
        assert letters == [
            {
                "id": sent.id,
                "address": me.address,
                "sender": "vigil",
                "kind": "message",
                "payload": {"job": 7},
                "sent_at": "2026-01-01T00:00:00Z",
            }
        ]
    for secret in (other.secret, acme.operator_secret):
        error = error_of(acme.call, "list_dead_letters", secret, address=me.address)
        assert error.code is ErrorCode.NOT_FOUND
    assert error_of(ack, acme, me, delivery).code is ErrorCode.STALE_GENERATION


# -- who may do what ----------------------------------------------------------------------
def test_only_the_owner_polls(app: App, acme: Tenant, clock: ManualClock) -> None:
    me, other = agent(acme), agent(acme)
    acme.call("create_mailbox", me.secret, box="alerts")
    send(app, clock, "acme", me.address)
    send(app, clock, "acme", agent_address(me.id, "alerts"))
    for address in (me.address, agent_address(me.id, "alerts")):
        for secret in (other.secret, acme.operator_secret):
            error = error_of(acme.call, "receive", secret, address=address)
            assert error.code is ErrorCode.NOT_FOUND
    # A box that does not exist reads the same as one that is not yours.
    missing = error_of(acme.call, "receive", me.secret, address=agent_address(me.id, "nope"))
    theirs = error_of(acme.call, "receive", other.secret, address=me.address)
    assert missing.to_dict() == theirs.to_dict()
    # A person has no mailbox of its own.
    assert error_of(acme.call, "receive").code is ErrorCode.NOT_FOUND
    # Nothing was taken by the refused polls.
    assert [d["generation"] for d in poll(acme, me)] == [1]
    assert [d["generation"] for d in poll(acme, me, address=agent_address(me.id, "alerts"))] == [1]


def test_nobody_else_acknowledges_a_delivery(app: App, acme: Tenant, clock: ManualClock) -> None:
    me, other = agent(acme), agent(acme)
    send(app, clock, "acme", me.address)
    (delivery,) = poll(acme, me)
    for secret in (other.secret, acme.operator_secret):
        error = error_of(
            acme.call, "acknowledge", secret, id=delivery["id"], generation=delivery["generation"]
        )
        assert error.code is ErrorCode.NOT_FOUND
    unknown = error_of(
        acme.call, "acknowledge", me.secret, id=envelope_id_for(uuid.uuid4().hex), generation=1
    )
    assert unknown.code is ErrorCode.NOT_FOUND
    assert ack(acme, me, delivery) == {"received": True}


def test_other_namespaces_see_not_found(
    app: App, acme: Tenant, globex: Tenant, clock: ManualClock
) -> None:
    me, stranger = agent(acme), agent(globex)
    acme.call("create_mailbox", me.secret, box="alerts")
    send(app, clock, "acme", me.address)
    (delivery,) = poll(acme, me)

    for address in (me.address, agent_address(me.id, "alerts")):
        assert error_of(send, app, clock, "globex", address).code is ErrorCode.NOT_FOUND
        for secret in (stranger.secret, globex.operator_secret):
            for tool in ("receive", "list_dead_letters"):
                error = error_of(globex.call, tool, secret, address=address)
                assert error.code is ErrorCode.NOT_FOUND
    error = error_of(globex.call, "acknowledge", stranger.secret, id=delivery["id"], generation=1)
    assert error.code is ErrorCode.NOT_FOUND
    error = error_of(globex.call, "create_mailbox", box="x", agent_id=me.id)
    assert error.code is ErrorCode.NOT_FOUND
    assert ack(acme, me, delivery) == {"received": True}


# -- create_mailbox and deliver -----------------------------------------------------------
def test_named_mailboxes_are_created_by_their_agent_or_an_operator(
    app: App, acme: Tenant, clock: ManualClock, store: MemoryStore, queues: MemoryMailboxQueues
) -> None:
    me, other = agent(acme), agent(acme)
    created = acme.call("create_mailbox", me.secret, box="alerts")
    assert created["created"] is True
    assert created["mailbox"]["address"] == f"agent:{me.id}/alerts"
    assert created["mailbox"]["owner"] == me.id
    (mailbox,) = store.mailboxes.values()
    assert mailbox.queue_name in queues.queues  # the queue exists as soon as the address

    clock.advance(5)
    again = acme.call("create_mailbox", me.secret, box="alerts")
    assert again == {**created, "created": False}
    by_operator = acme.call("create_mailbox", box="builds", agent_id=me.id)
    assert by_operator["mailbox"]["owner"] == me.id

    error = error_of(acme.call, "create_mailbox", other.secret, box="x", agent_id=me.id)
    assert error.code is ErrorCode.NOT_FOUND
    person, _ = acme.register(kind="person")
    error = error_of(acme.call, "create_mailbox", box="x", agent_id=person)
    assert error.code is ErrorCode.NOT_FOUND
    # An operator who is a person has no mailbox and must name the agent.
    assert error_of(acme.call, "create_mailbox", box="x").code is ErrorCode.INVALID_ARGUMENT

    send(app, clock, "acme", agent_address(me.id, "builds"), {"build": 1})
    (delivery,) = poll(acme, me, address=agent_address(me.id, "builds"))
    assert delivery["payload"] == {"build": 1}
    assert poll(acme, me) == []  # each box is its own queue


def test_create_mailbox_replays_an_idempotency_key(acme: Tenant, store: MemoryStore) -> None:
    me = agent(acme)
    first = acme.call("create_mailbox", me.secret, box="alerts", idempotency_key="k")
    assert acme.call("create_mailbox", me.secret, box="alerts", idempotency_key="k") == first
    error = error_of(acme.call, "create_mailbox", me.secret, box="other", idempotency_key="k")
    assert error.code is ErrorCode.IDEMPOTENCY_MISMATCH
    assert len(store.mailboxes) == 1


def test_an_agent_has_a_bounded_number_of_named_mailboxes(acme: Tenant, store: MemoryStore) -> None:
    me = agent(acme)
    for n in range(MAX_BOXES_PER_AGENT):
        acme.call("create_mailbox", me.secret, box=f"box-{n}")
    error = error_of(acme.call, "create_mailbox", me.secret, box="one-more")
    assert error.code is ErrorCode.LIMIT_EXCEEDED
    assert len(store.mailboxes) == MAX_BOXES_PER_AGENT


def test_deliver_needs_a_registered_address(
    app: App, acme: Tenant, clock: ManualClock, queues: MemoryMailboxQueues
) -> None:
    me = agent(acme)
    person, _ = acme.register(kind="person")
    for address in (
        agent_address("agt_aaaaaaaaaaaaaaaa"),
        agent_address(me.id, "never-created"),
        f"agent:{person}",
        "not an address",
    ):
        assert error_of(send, app, clock, "acme", address).code is ErrorCode.NOT_FOUND
    assert messages_in(queues) == 0
    too_big = {"text": "x" * 256 * 1024}
    assert error_of(send, app, clock, "acme", me.address, too_big).code is (
        ErrorCode.LIMIT_EXCEEDED
    )
    assert messages_in(queues) == 0


def test_deliver_refuses_an_envelope_addressed_elsewhere(
    app: App, acme: Tenant, clock: ManualClock
) -> None:
    me, other = agent(acme), agent(acme)
    assert app.queues is not None
    envelope = Envelope(
        id=envelope_id_for(uuid.uuid4().hex),
        namespace="acme",
        address=other.address,
        sender=me.id,
        kind="message",
        payload={},
        sent_at=clock.now(),
    )
    with pytest.raises(ValueError, match="another mailbox"):
        deliver(app.store, app.queues, clock, "acme", me.address, envelope)


VALID_ID = "env_" + "a" * 26


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("receive", {"max_messages": 0}),
        ("receive", {"max_messages": 11}),
        ("receive", {"max_messages": "1"}),
        ("inbox_poll", {"lease_seconds": 0}),
        ("inbox_poll", {"lease_seconds": 901}),
        ("receive", {"wait_seconds": 21}),
        ("receive", {"wait_seconds": -1}),
        ("receive", {"address": "agent:nobody"}),
        ("receive", {"address": "agent:agt_aaaaaaaaaaaaaaaa/Bad"}),
        ("receive", {"surprise": 1}),
        ("acknowledge", {"id": VALID_ID}),
        ("acknowledge", {"generation": 1}),
        ("acknowledge", {"id": "", "generation": 1}),
        ("acknowledge", {"id": VALID_ID, "generation": 0}),
        ("acknowledge", {"id": VALID_ID, "generation": True}),
        ("create_mailbox", {"box": "Alerts"}),
        ("create_mailbox", {"box": ""}),
        ("create_mailbox", {"box": "-x"}),
        ("create_mailbox", {"box": "a" * 33}),
        ("create_mailbox", {"box": "ok", "agent_id": "agt_short"}),
        ("list_dead_letters", {"max_messages": 11}),
    ],
)
def test_bad_inputs_are_invalid_and_change_nothing(
    app: App,
    acme: Tenant,
    clock: ManualClock,
    store: MemoryStore,
    queues: MemoryMailboxQueues,
    tool: str,
    arguments: dict[str, Any],
) -> None:
    me = agent(acme)
    send(app, clock, "acme", me.address, envelope_id=VALID_ID)
    poll(acme, me, lease_seconds=10)
    clock.advance(11)  # so that a poll which got through would hand it out again
    before = snapshot(store, queues)
    error = error_of(acme.call, tool, me.secret, **arguments)
    assert error.code is ErrorCode.INVALID_ARGUMENT
    assert snapshot(store, queues) == before


def test_the_whole_path_on_aws(aws: None, clock: ManualClock) -> None:
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    store = DynamoStore(dynamodb, create_tables_from_template(dynamodb)["VigilTable"])
    sqs = SqsMailboxQueues(boto3.client("sqs", region_name="us-east-1"), "test-mb")
    app = app_on(store, clock, queues=sqs)
    acme = Tenant(app, clock, "acme")
    me = agent(acme)
    acme.call("create_mailbox", me.secret, box="alerts")
    alerts = agent_address(me.id, "alerts")
    envelope_id = envelope_id_for("acme/deploy/1")
    send(app, clock, "acme", alerts, {"text": "down"}, envelope_id=envelope_id, kind="alert")
    send(app, clock, "acme", alerts, {"text": "down"}, envelope_id=envelope_id, kind="alert")

    (delivery,) = poll(acme, me, address=alerts, max_messages=10)
    assert (delivery["id"], delivery["generation"], delivery["kind"]) == (envelope_id, 1, "alert")
    assert ack(acme, me, delivery) == {"received": True}
    assert poll(acme, me, address=alerts, max_messages=10) == []
    assert acme.call("list_dead_letters", me.secret, address=alerts) == {"dead_letters": []}


def test_listing_dead_letters_creates_no_queue(acme: Tenant, queues: MemoryMailboxQueues) -> None:
    me = agent(acme, "never-polled")
    before = set(queues.queues)
    assert acme.call("list_dead_letters", me.secret) == {"dead_letters": []}
    assert set(queues.queues) == before


def test_revoking_an_agent_deletes_its_queues_and_nothing_makes_them_again(
    app: App, clock: ManualClock, acme: Tenant, queues: MemoryMailboxQueues
) -> None:
    me = agent(acme, "leaving")
    acme.call("create_mailbox", me.secret, box="builds")
    named = agent_address(me.id, "builds")
    send(app, clock, acme.namespace, me.address)
    send(app, clock, acme.namespace, named)
    assert len(queues.queues) == 2
    version = acme.call("whoami", me.secret)["principal"]["version"]

    acme.call("revoke_principal", principal_id=me.id, version=version, idempotency_key="bye")

    assert queues.queues == {}
    for address in (me.address, named):
        refused = error_of(send, app, clock, acme.namespace, address)
        assert refused.code.value == "not_found"
    assert queues.queues == {}


def test_a_revocation_replayed_after_a_crash_deletes_what_the_crash_left(
    acme: Tenant, queues: MemoryMailboxQueues, monkeypatch: pytest.MonkeyPatch
) -> None:
    me = agent(acme, "leaving")
    poll(acme, me)
    assert len(queues.queues) == 1
    version = acme.call("whoami", me.secret)["principal"]["version"]

    def crash(name: str) -> None:
        raise ConnectionError("lost between the commit and the queue's deletion")

    with monkeypatch.context() as patched:
        patched.setattr(queues, "remove", crash)
        with pytest.raises(VigilError) as failed:
            acme.call("revoke_principal", principal_id=me.id, version=version, idempotency_key="k")
        assert failed.value.code.value == "unavailable"
    assert len(queues.queues) == 1  # committed, the queue still there

    replay = acme.call("revoke_principal", principal_id=me.id, version=version, idempotency_key="k")
    assert replay["principal"]["status"] == "revoked"
    assert queues.queues == {}
