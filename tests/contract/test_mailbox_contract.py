"""Mailboxes honour one contract in memory and on AWS (moto): the table's records through the
store, and the queues through MemoryMailboxQueues and SqsMailboxQueues."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import boto3
import pytest

from vigil.clock import ManualClock
from vigil.kit.idempotency import IdempotencyRecord
from vigil.kit.uow import ConditionFailed
from vigil.mailboxes.memory import MemoryMailboxQueues
from vigil.mailboxes.queues import MailboxQueues
from vigil.mailboxes.records import (
    MAX_HANDOUTS,
    Delivery,
    Mailbox,
    UsageEvent,
    agent_address,
    envelope_id_for,
)
from vigil.mailboxes.sqs import SqsMailboxQueues
from vigil.store import Store

OWNER = "agt_aaaaaaaaaaaaaaaa"
OTHER = "agt_bbbbbbbbbbbbbbbb"


# -- the table ----------------------------------------------------------------------------
def mailbox(clock: ManualClock, box: str, owner: str = OWNER, ns: str = "acme") -> Mailbox:
    address = agent_address(owner, box)
    return Mailbox(
        namespace=ns, address=address, owner=owner, queue_name=f"q-{box}", created_at=clock.now()
    )


def delivery(clock: ManualClock, envelope_id: str, lease_seconds: int = 30) -> Delivery:
    now = clock.now()
    return Delivery(
        namespace="acme",
        envelope_id=envelope_id,
        address=agent_address(OWNER),
        owner=OWNER,
        message_id="m-1",
        receipt_handle="r-1",
        generation=1,
        state="leased",
        leased_until=now + timedelta(seconds=lease_seconds),
        first_delivered_at=now,
        version=1,
    )


def handed_again(clock: ManualClock, previous: Delivery, lease_seconds: int = 30) -> Delivery:
    return previous.model_copy(
        update={
            "receipt_handle": f"r-{previous.generation + 1}",
            "generation": previous.generation + 1,
            "leased_until": clock.now() + timedelta(seconds=lease_seconds),
            "version": previous.version + 1,
        }
    )


def acknowledged(clock: ManualClock, current: Delivery) -> Delivery:
    return current.model_copy(
        update={
            "state": "acknowledged",
            "acknowledged_at": clock.now(),
            "version": current.version + 1,
        }
    )


def test_mailbox_is_created_once_and_listed_for_its_owner(store: Store, clock: ManualClock) -> None:
    alerts = mailbox(clock, "alerts")
    store.commit([store.add_mailbox(alerts)])
    with pytest.raises(ConditionFailed):
        store.commit([store.add_mailbox(alerts)])
    store.commit([store.add_mailbox(mailbox(clock, "builds"))])
    store.commit([store.add_mailbox(mailbox(clock, "alerts", owner=OTHER))])
    store.commit([store.add_mailbox(mailbox(clock, "alerts", ns="globex"))])

    assert store.get_mailbox("acme", alerts.address) == alerts
    assert store.get_mailbox("globex", agent_address(OTHER, "alerts")) is None
    listed = store.list_mailboxes("acme", OWNER, 10)
    assert [m.address for m in listed] == [
        agent_address(OWNER, "alerts"),
        agent_address(OWNER, "builds"),
    ]
    assert len(store.list_mailboxes("acme", OWNER, 1)) == 1


def test_mailbox_creation_is_atomic_with_its_idempotency_record(
    store: Store, clock: ManualClock
) -> None:
    now = clock.now()
    lost = IdempotencyRecord(
        namespace="acme",
        principal_id=OWNER,
        tool="create_mailbox",
        key="k",
        fingerprint="f",
        status="completed",
        token="never-claimed",
        locked_until=now,
        expires_at=now + timedelta(days=1),
        result={},
    )
    with pytest.raises(ConditionFailed):
        store.commit([store.add_mailbox(mailbox(clock, "alerts"))], lost)
    assert store.get_mailbox("acme", agent_address(OWNER, "alerts")) is None


def test_delivery_is_created_at_generation_one_only_once(store: Store, clock: ManualClock) -> None:
    first = delivery(clock, envelope_id_for(uuid.uuid4().hex))
    store.lease_delivery(first, None)
    with pytest.raises(ConditionFailed):
        store.lease_delivery(first.model_copy(update={"message_id": "m-2"}), None)
    assert store.get_delivery("acme", first.envelope_id) == first
    assert store.get_delivery("globex", first.envelope_id) is None


def test_a_hand_out_needs_the_version_read(store: Store, clock: ManualClock) -> None:
    first = delivery(clock, envelope_id_for(uuid.uuid4().hex))
    store.lease_delivery(first, None)
    second = handed_again(clock, first)
    store.lease_delivery(second, first.version)
    # A receiver that read generation 1 loses to the one that already raised it.
    with pytest.raises(ConditionFailed):
        store.lease_delivery(handed_again(clock, first), first.version)
    assert store.get_delivery("acme", first.envelope_id) == second


def test_an_acknowledged_delivery_is_never_handed_out_again(
    store: Store, clock: ManualClock
) -> None:
    first = delivery(clock, envelope_id_for(uuid.uuid4().hex))
    store.lease_delivery(first, None)
    done = acknowledged(clock, first)
    store.acknowledge_delivery(done, clock.now())
    with pytest.raises(ConditionFailed):
        store.lease_delivery(handed_again(clock, done), done.version)
    assert store.get_delivery("acme", first.envelope_id) == done


def test_acknowledgment_needs_the_current_generation_and_a_live_lease(
    store: Store, clock: ManualClock
) -> None:
    first = delivery(clock, envelope_id_for(uuid.uuid4().hex), lease_seconds=30)
    store.lease_delivery(first, None)
    second = handed_again(clock, first)
    store.lease_delivery(second, first.version)

    stale = acknowledged(clock, first).model_copy(update={"version": second.version + 1})
    with pytest.raises(ConditionFailed):
        store.acknowledge_delivery(stale, clock.now())
    lapsed = clock.now() + timedelta(seconds=30)
    with pytest.raises(ConditionFailed):
        store.acknowledge_delivery(acknowledged(clock, second), lapsed)
    assert store.get_delivery("acme", first.envelope_id) == second

    done = acknowledged(clock, second)
    store.acknowledge_delivery(done, clock.now())
    with pytest.raises(ConditionFailed):
        store.acknowledge_delivery(acknowledged(clock, done), clock.now())
    assert store.get_delivery("acme", first.envelope_id) == done


def test_usage_is_recorded_once_per_envelope(store: Store, clock: ManualClock) -> None:
    usage = UsageEvent(
        namespace="acme",
        envelope_id=envelope_id_for(uuid.uuid4().hex),
        address=agent_address(OWNER),
        recipient=OWNER,
        sender="vigil",
        kind="alert",
        delivered_at=clock.now(),
    )
    assert store.record_usage(usage) is True
    assert store.record_usage(usage.model_copy(update={"delivered_at": clock.advance(5)})) is False
    assert store.record_usage(usage.model_copy(update={"namespace": "globex"})) is True


# -- the queues ---------------------------------------------------------------------------
@dataclass
class Queues:
    """A queue backend and how to let a hidden message become visible on it: the fake keeps
    time by the clock; moto keeps real time, so there a lapse is a visibility of 0."""

    port: MailboxQueues
    visibility: int
    lapse: Callable[[], None]


@pytest.fixture(params=["memory", "sqs"])
def queues(request: pytest.FixtureRequest, clock: ManualClock) -> Queues:
    if request.param == "memory":

        def lapse() -> None:
            clock.advance(31)

        return Queues(MemoryMailboxQueues(clock), 30, lapse)
    request.getfixturevalue("aws")
    client = boto3.client("sqs", region_name="us-east-1")
    return Queues(SqsMailboxQueues(client, "test-mb"), 0, lambda: None)


def test_ensure_is_idempotent(queues: Queues) -> None:
    ref = queues.port.ensure("test-mb-one")
    assert queues.port.ensure("test-mb-one") == ref
    assert ref.name == "test-mb-one"
    assert ref.url != ref.dlq_url
    assert queues.port.ensure("test-mb-two").url != ref.url


def test_find_never_creates_a_queue(queues: Queues) -> None:
    assert queues.port.find("test-mb-never") is None
    assert queues.port.find("test-mb-never") is None  # still not there: the look-up made none
    made = queues.port.ensure("test-mb-made")
    assert queues.port.find("test-mb-made") == made


def test_send_receive_and_delete(queues: Queues) -> None:
    port = queues.port
    ref = port.ensure("test-mb-one")
    sent = [port.send(ref, "a"), port.send(ref, "b")]
    got = port.receive(ref, 10, 0, 30)
    assert sorted((m.message_id, m.body, m.receive_count) for m in got) == sorted(
        [(sent[0], "a", 1), (sent[1], "b", 1)]
    )
    assert port.receive(ref, 10, 0, 30) == []  # both hidden while received
    for message in got:
        port.delete(ref, message.receipt_handle)
        port.delete(ref, message.receipt_handle)  # deleting again is no error
    assert port.receive(ref, 10, 0, 0) == []


def test_max_messages_is_honoured(queues: Queues) -> None:
    port = queues.port
    ref = port.ensure("test-mb-one")
    for body in "abc":
        port.send(ref, body)
    assert len(port.receive(ref, 2, 0, 30)) == 2
    assert len(port.receive(ref, 2, 0, 30)) == 1


def test_a_message_not_deleted_comes_back_after_its_visibility(queues: Queues) -> None:
    port = queues.port
    ref = port.ensure("test-mb-one")
    message_id = port.send(ref, "a")
    (first,) = port.receive(ref, 1, 0, queues.visibility)
    queues.lapse()
    (again,) = port.receive(ref, 1, 0, queues.visibility)
    assert (again.message_id, again.receive_count) == (message_id, 2)
    assert again.receipt_handle != first.receipt_handle
    # A stale handle still deletes (moto does; SQS may): correctness must not rest on it.
    port.delete(ref, first.receipt_handle)
    queues.lapse()
    assert port.receive(ref, 1, 0, queues.visibility) == []


def test_a_message_received_too_often_moves_to_the_dead_letters(queues: Queues) -> None:
    port = queues.port
    ref = port.ensure("test-mb-one")
    message_id = port.send(ref, json.dumps({"n": 1}))
    for count in range(1, MAX_HANDOUTS + 1):
        (message,) = port.receive(ref, 1, 0, queues.visibility)
        assert message.receive_count == count
        queues.lapse()
    assert port.peek_dead_letters(ref, 10) == []  # moved only by the receive that finds it
    assert port.receive(ref, 1, 0, queues.visibility) == []
    for _ in range(2):  # peeking does not consume
        (dead,) = port.peek_dead_letters(ref, 10)
        assert (dead.message_id, dead.body) == (message_id, '{"n": 1}')


def test_sqs_queues_are_encrypted_and_redrive_after_the_handout_limit(aws: None) -> None:
    client = boto3.client("sqs", region_name="us-east-1")
    ref = SqsMailboxQueues(client, "test-mb").ensure("test-mb-one")
    attributes = client.get_queue_attributes(QueueUrl=ref.url, AttributeNames=["All"])["Attributes"]
    dlq_arn = client.get_queue_attributes(QueueUrl=ref.dlq_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    assert attributes["SqsManagedSseEnabled"] == "true"
    assert json.loads(attributes["RedrivePolicy"]) == {
        "deadLetterTargetArn": dlq_arn,
        "maxReceiveCount": MAX_HANDOUTS,
    }
    # Created again by another sandbox: the same queues.
    assert SqsMailboxQueues(client, "test-mb").ensure("test-mb-one") == ref


def test_sqs_queues_are_tagged_with_their_stack_and_refuse_plain_http(aws: None) -> None:
    client = boto3.client("sqs", region_name="us-east-1")
    ref = SqsMailboxQueues(client, "test-mb", stack="vigil-prod").ensure("test-mb-one")
    for url in (ref.url, ref.dlq_url):
        assert client.list_queue_tags(QueueUrl=url)["Tags"] == {"vigil:stack": "vigil-prod"}
        attributes = client.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])
        arn = attributes["Attributes"]["QueueArn"]
        (statement,) = json.loads(attributes["Attributes"]["Policy"])["Statement"]
        assert statement == {
            "Sid": "DenyInsecureTransport",
            "Effect": "Deny",
            "Principal": "*",
            "Action": "sqs:*",
            "Resource": arn,
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        }


def test_sqs_queue_left_with_other_attributes_is_brought_in_line(aws: None) -> None:
    client = boto3.client("sqs", region_name="us-east-1")
    client.create_queue(QueueName="test-mb-one", Attributes={"MessageRetentionPeriod": "60"})
    ref = SqsMailboxQueues(client, "test-mb").ensure("test-mb-one")
    attributes = client.get_queue_attributes(QueueUrl=ref.url, AttributeNames=["All"])["Attributes"]
    assert attributes["MessageRetentionPeriod"] == str(4 * 24 * 3600)
    assert json.loads(attributes["RedrivePolicy"])["maxReceiveCount"] == MAX_HANDOUTS
    assert "Policy" in attributes


def test_sqs_prefix_must_leave_room_for_the_queue_names(aws: None) -> None:
    client = boto3.client("sqs", region_name="us-east-1")
    with pytest.raises(ValueError, match="too long"):
        SqsMailboxQueues(client, "x" * 44)
    SqsMailboxQueues(client, "x" * 43)


def test_usage_is_counted_per_principal_and_day_once_per_envelope(
    store: Store, clock: ManualClock
) -> None:
    other = "agt_bbbbbbbbbbbbbbbb"

    def first_delivery(recipient: str, kind: str) -> UsageEvent:
        return UsageEvent(
            namespace="acme",
            envelope_id=envelope_id_for(uuid.uuid4().hex),
            address=agent_address(recipient),
            recipient=recipient,
            sender="vigil",
            kind=kind,  # type: ignore[arg-type]
            delivered_at=clock.now(),
        )

    day_one = clock.now().date().isoformat()
    counted = first_delivery(OWNER, "alert")
    assert store.record_usage(counted)
    assert not store.record_usage(counted)  # a redelivery counts nothing
    store.record_usage(first_delivery(OWNER, "message"))
    store.record_usage(first_delivery(other, "message"))
    clock.advance(86_400)
    day_two = clock.now().date().isoformat()
    store.record_usage(first_delivery(OWNER, "request"))
    store.record_usage(first_delivery(OWNER, "alert").model_copy(update={"namespace": "globex"}))

    days = store.usage_days("acme", "0000-01-01", "9999-12-31", None, 10)
    assert [(d.day, d.principal, d.deliveries) for d in days] == sorted(
        [(day_one, OWNER, 2), (day_one, other, 1), (day_two, OWNER, 1)]
    )
    mine = next(d for d in days if (d.day, d.principal) == (day_one, OWNER))
    assert mine.by_kind == {"alert": 1, "message": 1, "request": 0, "response": 0}
    # A day range, and a page continued after a position.
    assert [d.day for d in store.usage_days("acme", day_two, day_two, None, 10)] == [day_two]
    first = store.usage_days("acme", "0000-01-01", "9999-12-31", None, 1)
    rest = store.usage_days(
        "acme", "0000-01-01", "9999-12-31", f"{first[0].day}#{first[0].principal}", 10
    )
    assert first + rest == days
    assert [d.deliveries for d in store.usage_days("globex", day_two, day_two, None, 10)] == [1]
