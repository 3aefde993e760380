"""Mailbox use cases: ``deliver``, the one way an envelope reaches a mailbox;
``require_registered``, the one rule for which addresses exist; and, for a mailbox's owner,
creating named boxes, receiving leased deliveries, acknowledging them and reading dead letters.

Sending is write-only: whoever queues an envelope never reads the mailbox; only its owner
receives from it.

Exactly once toward the consumer. SQS delivers at least once, and a sender that retries after
a crash (the dead-man switch's alert will) leaves two copies of one envelope in the queue.
Neither SQS nor the moto stand-in saves us from that: moto honours FIFO deduplication only
against messages still in the queue, and a stale receipt handle still deletes a message in
moto (and may in SQS). Correctness therefore comes from our own conditional writes:

- every envelope carries our own id, and the delivery record keyed by that id names the one
  SQS copy (``message_id``) that may be handed out. At hand-out, a copy of an envelope whose
  record names another copy, or which is acknowledged, is deleted and not handed out;
- a hand-out is a conditional write that creates the record at generation 1 or raises the
  generation by one on the version it read, so of two receivers holding the same copy only
  one gets a valid generation, and the other hands nothing out;
- an acknowledgment must echo the current generation while its lease is live. It is recorded
  before the message is deleted, so a crash between the two leaves a copy that the next
  receive deletes;
- the first delivery is recorded as a usage event by a conditional put keyed by envelope id.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import ValidationError

from vigil.alarms.kinds import DEAD_LETTER
from vigil.alarms.timers import Alarms, Timer
from vigil.audit.records import AuditEvent
from vigil.clock import Clock
from vigil.errors import ErrorCode, VigilError, contended, invalid, not_found
from vigil.identity.records import Caller
from vigil.kit.batch import read_once
from vigil.kit.limits import MAX_MESSAGE_BYTES
from vigil.kit.paging import scan_page
from vigil.kit.publish import Publish
from vigil.kit.retry import R, retry_on_conflict
from vigil.kit.uow import Committer, ConditionFailed, UnitOfWork
from vigil.mailboxes.events import DeliveryWaiting
from vigil.mailboxes.queues import MailboxQueues, QueueMessage, QueueRef
from vigil.mailboxes.records import (
    MAX_BOXES_PER_AGENT,
    MAX_HANDOUTS,
    Delivery,
    Envelope,
    Mailbox,
    UsageDay,
    agent_address,
    parse_address,
    queue_name,
)
from vigil.mailboxes.store import AddressRegistry, MailboxPorts, MailboxReadPorts
from vigil.observability import get_logger, log_event, metrics
from vigil.quotas.records import Quotas

log = get_logger("vigil.mailboxes")


def require_registered(store: AddressRegistry, namespace: str, address: str) -> str:
    """The owner of the mailbox at ``address``; not_found unless the address is registered.

    An agent's own address is registered by the agent's principal record; a named box, by
    create_mailbox."""
    parsed = parse_address(address)
    if parsed is None:
        raise not_found("mailbox")
    agent_id, box = parsed
    agent = store.get_principal(namespace, agent_id)
    # A revoked agent's queues are deleted with it, and nothing makes them again.
    registered = agent is not None and agent.kind == "agent" and agent.status == "active"
    if registered and box is not None:
        registered = store.get_mailbox(namespace, address) is not None
    if not registered:
        raise not_found("mailbox")
    return agent_id


def deliver(
    store: AddressRegistry,
    queues: MailboxQueues,
    clock: Clock,
    namespace: str,
    address: str,
    envelope: Envelope,
    tell: Tell | None = None,
) -> Envelope:
    """Queues ``envelope`` into the registered mailbox at ``address`` of ``namespace``, and
    returns it; an address that is not registered is not_found. With ``tell``, its owner's
    event that it waits is written first (``Tell``).

    A sender that may retry after a crash builds the envelope with the same id each time
    (``envelope_id_for``): all its copies are then one envelope, handed out once.
    """
    if (envelope.namespace, envelope.address) != (namespace, address):
        raise ValueError("the envelope is addressed to another mailbox")
    # Once for a batch of timers (vigil.kit.batch): a burst of alerts to one mailbox reads its
    # owner's record once a batch.
    owner = read_once(
        ("registered", namespace, address),
        functools.partial(require_registered, store, namespace, address),
    )
    body = envelope.model_dump_json()
    if len(body.encode()) > MAX_MESSAGE_BYTES:
        raise VigilError(
            ErrorCode.LIMIT_EXCEEDED,
            f"an envelope may take at most {MAX_MESSAGE_BYTES} bytes as JSON",
        )
    if tell is not None:
        tell.waiting(owner, envelope)
    queues.send(queues.ensure(queue_name(queues.prefix, namespace, address)), body)
    metrics.delivered()
    # How long the envelope waited to be queued; for an alert, since its switch fired.
    lag = clock.now() - envelope.sent_at
    log_event(
        log,
        "envelope queued",
        envelope_id=envelope.id,
        kind=envelope.kind,
        sender=envelope.sender,
        lag_ms=round(lag.total_seconds() * 1000),
    )
    return envelope


@dataclass(frozen=True)
class Tell:
    """How a delivery tells its mailbox's owner that it waits: the event, written by
    ``publish`` (for an owner nobody listens for, nothing) and committed before the envelope
    is queued, so that no envelope waits untold. The event's id is the envelope's, so a sender
    that queues again after a crash tells it once; losing the race for the owner's feed to
    another event, it tells again."""

    committer: Committer
    publish: Publish
    clock: Clock

    def waiting(self, owner: str, envelope: Envelope) -> None:
        data = DeliveryWaiting(
            mailbox_owner=owner,
            address=envelope.address,
            envelope_id=envelope.id,
            kind=envelope.kind,
            sender=envelope.sender,
            sent_at=envelope.sent_at,
        )

        def attempt() -> None:
            published = self.publish(
                "delivery.waiting", data, namespace=envelope.namespace, occurred_at=self.clock.now()
            )
            if published.writes:
                self.committer.commit(published.writes)

        retry_on_conflict(attempt, "the mailbox owner's events")


def _stale(delivery: Delivery, why: str) -> VigilError:
    return VigilError(ErrorCode.STALE_GENERATION, why, current_generation=delivery.generation)


class Mailboxes:
    """A mailbox owner's use cases, on the store and the queues."""

    def __init__(
        self,
        store: MailboxPorts,
        *,
        queues: MailboxQueues,
        clock: Clock,
        quotas: Quotas,
        alarms: Alarms | None = None,
    ) -> None:
        self.store = store
        self.queues = queues
        self.clock = clock
        self.quotas = quotas
        # Where the end of an envelope's last hand-out is watched, for its channels.
        self.alarms = alarms

    def remove_all(self, namespace: str, owner: str) -> None:
        """Deletes the queues of every mailbox of ``owner`` (a revoked agent): its own
        address's and its named boxes'. Idempotent, so a replay of the revocation finishes
        what a crash left."""
        addresses = [agent_address(owner)]
        addresses += [
            m.address for m in self.store.list_mailboxes(namespace, owner, self.quotas.mailboxes)
        ]
        for address in addresses:
            self.queues.remove(queue_name(self.queues.prefix, namespace, address))

    def owned(self, caller: Caller, address: str | None) -> Mailbox:
        """The caller's own mailbox at ``address``. Anyone else's is not_found, to operators
        too: whether a mailbox exists is its owner's business."""
        target = address or agent_address(caller.principal_id)
        parsed = parse_address(target)
        if parsed is None or parsed[0] != caller.principal_id:
            raise not_found("mailbox")
        if parsed[1] is None:
            return Mailbox(
                namespace=caller.namespace,
                address=target,
                owner=caller.principal_id,
                queue_name=queue_name(self.queues.prefix, caller.namespace, target),
                created_at=caller.principal.created_at,
            )
        found = self.store.get_mailbox(caller.namespace, target)
        if found is None:
            raise not_found("mailbox")
        return found

    def create(
        self,
        caller: Caller,
        box: str,
        agent_id: str | None,
        *,
        uow: UnitOfWork,
        present: Callable[[Mailbox, bool], R],
    ) -> R:
        """The named box ``box`` of ``agent_id`` (the caller when None), created unless it
        exists; ``present`` is told which."""
        owner_id = agent_id or caller.principal_id
        if owner_id == caller.principal_id:
            owner = caller.principal
            if owner.kind != "agent":
                raise invalid("only agents have mailboxes: name the agent with agent_id")
        else:
            if not caller.is_operator:
                raise not_found("agent")
            found = self.store.get_principal(caller.namespace, owner_id)
            if found is None or found.kind != "agent":
                raise not_found("agent")
            owner = found
        if owner.status != "active":
            raise invalid("the agent is revoked")

        address = agent_address(owner.id, box)
        existing = self.store.get_mailbox(caller.namespace, address)
        if existing is not None:
            return present(existing, False)
        boxes = self.store.list_mailboxes(caller.namespace, owner.id, MAX_BOXES_PER_AGENT)
        if len(boxes) >= MAX_BOXES_PER_AGENT:
            raise VigilError(
                ErrorCode.LIMIT_EXCEEDED,
                f"an agent may have at most {MAX_BOXES_PER_AGENT} named mailboxes",
            )
        mailbox = Mailbox(
            namespace=caller.namespace,
            address=address,
            owner=owner.id,
            queue_name=queue_name(self.queues.prefix, caller.namespace, address),
            created_at=self.clock.now(),
        )
        # The queue first: an address that is registered can always be delivered to.
        self.queues.ensure(mailbox.queue_name)
        result = present(mailbox, True)
        writes = [self.store.add_mailbox(mailbox)]
        if owner.id != caller.principal_id:
            # An operator making a box for another agent: an operator's power, audited.
            event = AuditEvent.of(
                caller.namespace,
                caller.principal_id,
                "create_mailbox",
                "mailbox",
                address,
                None,
                None,
                mailbox.created_at,
            )
            writes.append(self.store.add_audit_event(event))
        limit = self.quotas.mailboxes
        writes.append(self.store.count(caller.namespace, "mailboxes", 1, limit))
        try:
            uow.commit(*writes, result=result)
        except ConditionFailed:
            if self.store.over_quota(caller.namespace, "mailboxes", limit):
                raise self.quotas.exceeded("mailboxes") from None
            try:
                # Decreases counted on the quota's shards made the room, now folded: once more.
                uow.commit(*writes, result=result)
            except ConditionFailed:
                raise contended("the mailbox was created concurrently; retry to read it") from None
        return result

    def receive(
        self,
        caller: Caller,
        address: str | None,
        max_messages: int,
        wait_seconds: int,
        lease_seconds: int,
    ) -> list[tuple[Envelope, Delivery]]:
        """Up to ``max_messages`` envelopes handed out to the caller, each with its delivery."""
        mailbox = self.owned(caller, address)
        ref = self.queues.ensure(mailbox.queue_name)
        messages = self.queues.receive(ref, max_messages, wait_seconds, lease_seconds)
        handed: list[tuple[Envelope, Delivery]] = []
        for message in messages:
            if message.receive_count >= MAX_HANDOUTS:
                metrics.last_handout()
            try:
                one = self._hand_out(ref, mailbox, message, lease_seconds)
            except VigilError as error:
                if not handed:
                    raise
                # What is handed out is the caller's now; the rest comes back when its lease
                # lapses.
                log_event(log, "hand-out cut short", logging.WARNING, code=error.code.value)
                break
            if one is not None:
                handed.append(one)
        return handed

    def _hand_out(
        self, ref: QueueRef, mailbox: Mailbox, message: QueueMessage, lease_seconds: int
    ) -> tuple[Envelope, Delivery] | None:
        envelope = _envelope_of(message, mailbox)
        if envelope is None:
            return None
        now = self.clock.now()
        current = self.store.get_delivery(mailbox.namespace, envelope.id)
        if current is not None and (
            current.state == "acknowledged" or current.message_id != message.message_id
        ):
            self.queues.delete(ref, message.receipt_handle)
            return None
        delivery = Delivery.handed_out(
            current,
            envelope,
            mailbox,
            message.message_id,
            message.receipt_handle,
            lease_seconds,
            now,
        )
        if message.receive_count >= MAX_HANDOUTS and self.alarms is not None:
            # Its last hand-out: unless acknowledged before its lease lapses, it is a dead
            # letter, which the channels that want delivery.dead_lettered are told of. Armed
            # first: a lost race below leaves a timer that finds another generation.
            watch = Timer(
                kind=DEAD_LETTER,
                namespace=delivery.namespace,
                key=f"{envelope.id}/{envelope.kind}",
                generation=delivery.generation,
                due_at=delivery.leased_until,
            )
            self.alarms.arm(watch, now)
        try:
            self.store.lease_delivery(delivery, None if current is None else current.version)
        except ConditionFailed:
            # Another receiver handed it out since we read it: its generation is the valid one.
            return None
        # On every hand-out, not only at generation 1: a crash just before this write would
        # otherwise lose the event for good. The write is conditional, so it happens once.
        self.store.record_usage(delivery.usage(envelope))
        return envelope, delivery

    def acknowledge(self, caller: Caller, envelope_id: str, generation: int) -> None:
        """Finishes the caller's delivery at ``generation``; repeating it is harmless."""
        namespace = caller.namespace
        now = self.clock.now()
        delivery = self.store.get_delivery(namespace, envelope_id)
        if delivery is None or delivery.owner != caller.principal_id:
            raise not_found("delivery")
        if delivery.generation != generation:
            raise _stale(delivery, "this is not the delivery's current generation")
        if delivery.state == "leased":
            if not delivery.leased(now):
                raise _stale(delivery, "the lease lapsed; receive the delivery again")
            try:
                self.store.acknowledge_delivery(delivery.acknowledged(now), now)
            except ConditionFailed:
                current = self.store.get_delivery(namespace, envelope_id) or delivery
                if not (current.generation == generation and current.state == "acknowledged"):
                    raise _stale(
                        current, "the delivery was handed out again since this generation"
                    ) from None
                # A concurrent duplicate of this acknowledgment won: the delivery is done.
        # A repeated acknowledgment of the same generation lands here too, and retries the
        # delete.
        ref = self.queues.find(queue_name(self.queues.prefix, namespace, delivery.address))
        if ref is None:
            return  # the queue is gone (its principal revoked): nothing is left to delete
        try:
            self.queues.delete(ref, delivery.receipt_handle)
        except VigilError as error:
            # The acknowledgment is recorded: a copy left behind is deleted when next received.
            log_event(
                log, "acknowledged message not deleted yet", logging.WARNING, code=error.code.value
            )

    def dead_letters(self, caller: Caller, address: str | None, limit: int) -> list[Envelope]:
        """Envelopes of the caller's mailbox set aside after too many hand-outs, left there."""
        mailbox = self.owned(caller, address)
        # Reading never creates: a mailbox whose queue was never made has no dead letters.
        ref = self.queues.find(mailbox.queue_name)
        if ref is None:
            return []
        letters = [
            _envelope_of(message, mailbox) for message in self.queues.peek_dead_letters(ref, limit)
        ]
        return [letter for letter in letters if letter is not None]


def _envelope_of(message: QueueMessage, mailbox: Mailbox) -> Envelope | None:
    try:
        envelope = Envelope.model_validate_json(message.body)
    except ValidationError:
        envelope = None
    if envelope is None or (envelope.namespace, envelope.address) != (
        mailbox.namespace,
        mailbox.address,
    ):
        # Only Vigil writes to these queues, so this is a defect, never a caller's doing: the
        # message is left alone and reaches the dead-letter queue for someone to look at.
        log_event(log, "unreadable mailbox message", logging.WARNING, message_id=message.message_id)
        return None
    return envelope


# A page of get_usage, and how many usage days one call examines when a principal is named.
USAGE_PAGE = 100
USAGE_SCAN_BUDGET = 1_000


def usage_page(
    namespace: str,
    first_day: str,
    last_day: str,
    principal: str | None,
    after: str | None,
    *,
    store: MailboxReadPorts,
) -> tuple[list[UsageDay], str | None]:
    """A page of the namespace's usage days from ``first_day`` to ``last_day`` (of
    ``principal`` only, if named), in day then principal order, and the position to continue
    after, or None at the end. A principal not of the namespace is not found, as anywhere."""
    if principal is not None and store.get_principal(namespace, principal) is None:
        raise not_found("principal")
    return scan_page(
        lambda start, size: store.usage_days(namespace, first_day, last_day, start, size),
        position=lambda day: f"{day.day}#{day.principal}",
        keep=lambda day: principal is None or day.principal == principal,
        after=after,
        size=USAGE_PAGE,
        budget=USAGE_SCAN_BUDGET,
    )
