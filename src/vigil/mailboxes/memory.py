"""Mailboxes in memory: the table's records, and a stand-in for SQS that keeps time by the
injected clock, so tests move the clock instead of sleeping."""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from vigil.clock import Clock
from vigil.errors import unavailable
from vigil.kit.limits import item_bytes, require_message
from vigil.kit.memory import MemoryBase, MemoryWrite
from vigil.kit.uow import ConditionFailed
from vigil.mailboxes.queues import MailboxQueues, QueueMessage, QueueRef
from vigil.mailboxes.records import (
    MAX_HANDOUTS,
    USAGE_KINDS,
    Delivery,
    Mailbox,
    UsageDay,
    UsageEvent,
)
from vigil.mailboxes.store import MailboxStore, usage_counts, usage_pk


class MemoryMailboxes(MemoryBase, MailboxStore):
    def __init__(self) -> None:
        self.mailboxes: dict[tuple[str, str], Mailbox] = {}
        self.deliveries: dict[tuple[str, str], Delivery] = {}
        self.usage: dict[tuple[str, str], UsageEvent] = {}
        super().__init__()

    def add_mailbox(self, mailbox: Mailbox) -> MemoryWrite:
        key = (mailbox.namespace, mailbox.address)

        def check() -> None:
            if key in self.mailboxes:
                raise ConditionFailed(mailbox.address)

        def apply() -> None:
            self.mailboxes[key] = mailbox.model_copy()

        return MemoryWrite(check, apply, (item_bytes(key, mailbox),))

    def get_mailbox(self, namespace: str, address: str) -> Mailbox | None:
        with self._lock:
            found = self.mailboxes.get((namespace, address))
            return found.model_copy() if found else None

    def list_mailboxes(self, namespace: str, owner: str, limit: int) -> list[Mailbox]:
        with self._lock:
            found = sorted(
                (
                    m
                    for (ns, _), m in self.mailboxes.items()
                    if ns == namespace and m.owner == owner
                ),
                key=lambda m: m.address,
            )
        return [m.model_copy() for m in found[:limit]]

    def get_delivery(self, namespace: str, envelope_id: str) -> Delivery | None:
        with self._lock:
            found = self.deliveries.get((namespace, envelope_id))
            return found.model_copy() if found else None

    def lease_delivery(self, delivery: Delivery, expected_version: int | None) -> None:
        with self._lock:
            key = (delivery.namespace, delivery.envelope_id)
            current = self.deliveries.get(key)
            if expected_version is None:
                if current is not None:
                    raise ConditionFailed(delivery.envelope_id)
            elif (
                current is None or current.version != expected_version or current.state != "leased"
            ):
                raise ConditionFailed(delivery.envelope_id)
            self.deliveries[key] = delivery.model_copy()

    def acknowledge_delivery(self, delivery: Delivery, now: datetime) -> None:
        with self._lock:
            key = (delivery.namespace, delivery.envelope_id)
            current = self.deliveries.get(key)
            if (
                current is None
                or current.version != delivery.version - 1
                or current.generation != delivery.generation
                or not current.leased(now)
            ):
                raise ConditionFailed(delivery.envelope_id)
            self.deliveries[key] = delivery.model_copy()

    def record_usage(self, usage: UsageEvent) -> bool:
        key = (usage.namespace, usage.envelope_id)

        def check() -> None:
            if key in self.usage:
                raise ConditionFailed(usage.envelope_id)

        def apply() -> None:
            self.usage[key] = usage.model_copy()

        recorded = MemoryWrite(check, apply, (item_bytes(key, usage),), counts=usage_counts(usage))
        try:
            self.commit([recorded])
        except ConditionFailed:
            return False
        return True

    def usage_days(
        self, namespace: str, first_day: str, last_day: str, after: str | None, limit: int
    ) -> list[UsageDay]:
        pk = usage_pk(namespace)
        with self._lock:
            counted = {(sk, name): n for (p, sk, name), n in self.counters.items() if p == pk}
        positions = sorted(
            sk
            for sk, name in counted
            if name == "deliveries"
            and first_day <= sk[:10] <= last_day
            and (after is None or sk > after)
        )[:limit]
        return [
            UsageDay(
                day=sk[:10],
                principal=sk[11:],
                deliveries=counted[(sk, "deliveries")],
                by_kind={kind: counted.get((sk, kind), 0) for kind in USAGE_KINDS},
            )
            for sk in positions
        ]


@dataclass
class _Message:
    message_id: str
    body: str
    visible_at: datetime
    receipt_handles: list[str] = field(default_factory=list)  # every one issued, latest last
    receive_count: int = 0

    def received(self, visible_at: datetime) -> QueueMessage:
        self.receive_count += 1
        self.visible_at = visible_at
        self.receipt_handles.append(uuid.uuid4().hex)
        return QueueMessage(
            message_id=self.message_id,
            receipt_handle=self.receipt_handles[-1],
            body=self.body,
            receive_count=self.receive_count,
        )


@dataclass
class _Queue:
    messages: list[_Message] = field(default_factory=list)
    dead_letters: list[_Message] = field(default_factory=list)


class MemoryMailboxQueues(MailboxQueues):
    """SQS as the mailboxes use it: visibility timeouts, a move to the dead-letter queue on
    the receive after ``MAX_HANDOUTS``, and deletion by any receipt handle a message was ever
    given (as moto does, and as SQS may). A receive never waits: waiting would be sleeping."""

    def __init__(self, clock: Clock, prefix: str = "memory-mb") -> None:
        super().__init__(prefix)
        self.clock = clock
        self.queues: dict[str, _Queue] = {}
        self._lock = threading.Lock()

    def _queue(self, ref: QueueRef) -> _Queue:
        found = self.queues.get(ref.name)
        if found is None:
            raise unavailable("the mailbox queue is temporarily unavailable; retry later")
        return found

    def ensure(self, name: str) -> QueueRef:
        with self._lock:
            self.queues.setdefault(name, _Queue())
        return QueueRef(name=name, url=f"memory://{name}", dlq_url=f"memory://{name}-dlq")

    def find(self, name: str) -> QueueRef | None:
        with self._lock:
            if name not in self.queues:
                return None
        return QueueRef(name=name, url=f"memory://{name}", dlq_url=f"memory://{name}-dlq")

    def remove(self, name: str) -> None:
        with self._lock:
            self.queues.pop(name, None)

    def send(self, ref: QueueRef, body: str) -> str:
        require_message(body)
        message = _Message(message_id=str(uuid.uuid4()), body=body, visible_at=self.clock.now())
        with self._lock:
            self._queue(ref).messages.append(message)
        return message.message_id

    def receive(
        self, ref: QueueRef, max_messages: int, wait_seconds: int, visibility_seconds: int
    ) -> list[QueueMessage]:
        now = self.clock.now()
        received: list[QueueMessage] = []
        with self._lock:
            queue = self._queue(ref)
            for message in list(queue.messages):
                if len(received) == max_messages:
                    break
                if message.visible_at > now:
                    continue
                if message.receive_count >= MAX_HANDOUTS:
                    queue.messages.remove(message)
                    queue.dead_letters.append(message)
                    continue
                received.append(message.received(now + timedelta(seconds=visibility_seconds)))
        return received

    def delete(self, ref: QueueRef, receipt_handle: str) -> None:
        with self._lock:
            queue = self._queue(ref)
            queue.messages = [m for m in queue.messages if receipt_handle not in m.receipt_handles]

    def depth(self, ref: QueueRef) -> int:
        with self._lock:
            return len(self._queue(ref).messages)

    def peek_dead_letters(self, ref: QueueRef, max_messages: int) -> list[QueueMessage]:
        now = self.clock.now()
        with self._lock:
            return [m.received(now) for m in self._queue(ref).dead_letters[:max_messages]]
