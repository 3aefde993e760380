"""One deployment on moto, in-process: the real DynamoStore, SqsMailboxQueues and AwsAlarms on
hooked boto3 clients, the App on top, and the principals scenarios call as.

A world also reads back everything that was stored (the table, every queue's messages, the
schedules) and plays what time would do to the mailboxes: leases lapse, deliveries come back.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3

from tests.conftest import create_tables_from_template
from tests.faults.injector import NO_RETRIES, FaultInjector
from tests.support import TEST_KEYS, app_on
from vigil.alarms.aws import AwsAlarms, Destination
from vigil.alarms.kinds import NOTIFY, WATCH_KINDS
from vigil.attachments.blobs import S3Blobs
from vigil.bootstrap import bootstrap_operator
from vigil.clock import ManualClock
from vigil.errors import ErrorCode, VigilError
from vigil.kit.dynamo import Backoff
from vigil.mailboxes.records import Envelope, agent_address, envelope_id_for, queue_name
from vigil.mailboxes.service import deliver
from vigil.mailboxes.sqs import SqsMailboxQueues
from vigil.notifications.outbound import SendResult
from vigil.notifications.outbox import Outbox
from vigil.notifications.sending import Sender
from vigil.stores.dynamo import DynamoStore
from vigil.switches.engine import SwitchEngine

ACCOUNT = "123456789012"  # moto's
REGION = "us-east-1"
NAMESPACE = "acme"
GROUP = "alarms"
PREFIX = "vigil-mb"
TIMER_QUEUE = "timers"
NOTIFY_QUEUE = "notify"
WATCH_QUEUE = "watch"
NOTIFY_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:notify"
NOTIFY_DLQ_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:notify-dlq"
BUCKET = "attachments"
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
# Longest lease a delivery can have; lapsing every lease moves the clock past it.
_MAX_LEASE_SECONDS = 900
_DRAIN_ROUNDS = 8
# Generated ids as they appear anywhere, in keys, documents, addresses and results: principal
# ids and other prefixed random ids (not envelope ids, which scenarios derive from keys), and
# UUIDs. Two runs of one scenario generate different ones; the world names them.
ID = re.compile(
    r"\b(?:(?!env_)[a-z]{2,4}_[a-z2-7]{16,32}"
    r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b"
)


def _reset_moto() -> None:
    """Empties the three services this world uses, so that every world starts alike."""
    from moto.dynamodb.models import dynamodb_backends
    from moto.scheduler.models import scheduler_backends
    from moto.sqs.models import sqs_backends

    for backends in (dynamodb_backends, sqs_backends, scheduler_backends):
        backends[ACCOUNT][REGION].reset()


def _moto_queues() -> dict[str, Any]:
    from moto.sqs.models import sqs_backends

    queues: dict[str, Any] = sqs_backends[ACCOUNT][REGION].queues
    return queues


@dataclass
class Snapshot:
    """Everything stored, as read back: table items, each queue's message bodies (in flight
    and delayed ones included) and the schedules with their inputs."""

    items: list[dict[str, Any]]
    queues: dict[str, list[str]]
    schedules: list[dict[str, Any]]


def _delivered(url: str, body: bytes, headers: Any, **options: Any) -> SendResult:
    return SendResult("delivered", 204, "HTTP 204")


@dataclass(frozen=True)
class _Clients:
    injector: FaultInjector
    dynamodb: Any
    sqs: Any
    scheduler: Any
    s3: Any


@functools.cache
def _hooked_clients() -> _Clients:
    """The boto3 clients of every world in this process, hooked to one injector (which each
    world resets). Building them is most of what a new world costs, and a fault scenario
    makes one world per fault; they hold no state of their own: moto does."""
    injector = FaultInjector()

    def hooked(service: str) -> Any:
        return injector.hook(boto3.client(service, region_name=REGION, config=NO_RETRIES))

    return _Clients(injector, hooked("dynamodb"), hooked("sqs"), hooked("scheduler"), hooked("s3"))


class World:
    def __init__(self) -> None:
        _reset_moto()
        self.clock = ManualClock(START)
        clients = _hooked_clients()
        self.injector = clients.injector
        self.dynamodb = clients.dynamodb
        self.sqs = clients.sqs
        self.scheduler = clients.scheduler
        self.s3 = clients.s3
        self.s3.create_bucket(Bucket=BUCKET)
        self.table = create_tables_from_template(self.dynamodb)["VigilTable"]
        self.timer_queue_url = self.sqs.create_queue(QueueName=TIMER_QUEUE)["QueueUrl"]
        self.notify_queue_url = self.sqs.create_queue(QueueName=NOTIFY_QUEUE)["QueueUrl"]
        self.watch_queue_url = self.sqs.create_queue(QueueName=WATCH_QUEUE)["QueueUrl"]
        self.scheduler.create_schedule_group(Name=GROUP)
        self.labels: dict[str, str] = {}  # principal id -> label
        self.ids: dict[str, str] = {}  # label -> principal id
        self.secrets: dict[str, str] = {}  # label -> secret
        self.kinds: dict[str, str] = {}  # label -> kind
        self.sent: list[str] = []  # envelope ids queued by scenarios
        self.acked: list[str] = []  # envelope ids acknowledged, each time
        self._counter = itertools.count(1)
        self.restart()
        operator, secret = bootstrap_operator(self.store, self.clock, NAMESPACE, "Ops")
        self._know("operator", operator.id, secret, "person")
        self.register("worker")
        self.register("watcher")

    # -- the sandbox --------------------------------------------------------------------------
    def restart(self) -> None:
        """A fresh sandbox after a crash: new adapters and App on the same clients, so nothing
        the dead one cached (queue URLs, the last lease read) carries over."""
        self.injector.reset()
        self.store = DynamoStore(self.dynamodb, self.table)
        # A busy item's request goes again at once: the pauses are the backoff's own business
        # (tests/unit/test_store_busy.py), and the world's clock stands still between them.
        self.store.backoff = Backoff(sleep=lambda _: None)
        self.queues = SqsMailboxQueues(self.sqs, PREFIX)
        self.alarms = AwsAlarms(
            self.sqs,
            self.scheduler,
            self.timer_queue_url,
            GROUP,
            f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:alarm",
            f"arn:aws:iam::{ACCOUNT}:role/scheduler",
            f"arn:aws:sqs:{REGION}:{ACCOUNT}:alarm-dlq",
            by_kind={
                NOTIFY: Destination(self.notify_queue_url, NOTIFY_ARN, NOTIFY_DLQ_ARN),
                **dict.fromkeys(
                    WATCH_KINDS, Destination(self.watch_queue_url, NOTIFY_ARN, NOTIFY_DLQ_ARN)
                ),
            },
        )
        self.blobs = S3Blobs(self.s3, BUCKET)
        self.app = app_on(
            self.store,
            self.clock,
            queues=self.queues,
            alarms=self.alarms,
            blobs=self.blobs,
            # Receivers answer at once, and nothing leaves the machine.
            sender=Sender(keys=TEST_KEYS, clock=self.clock, post=_delivered),
        )
        self.switch_engine = SwitchEngine(
            store=self.store,
            clock=self.clock,
            alarms=self.alarms,
            queues=self.queues,
            publish=Outbox(self.store, self.clock, self.alarms),
        )

    # -- principals and calls -----------------------------------------------------------------
    def unique(self, stem: str) -> str:
        return f"{stem}-{next(self._counter)}"

    def _know(self, label: str, principal_id: str, secret: str | None, kind: str) -> None:
        self.labels[principal_id] = label
        self.ids[label] = principal_id
        self.kinds[label] = kind
        if secret is not None:
            self.secrets[label] = secret

    def register(self, label: str, kind: str = "agent", role: str = "worker") -> str:
        issued = self.call("register", "operator", kind=kind, name=label, role=role)
        self._know(label, issued["principal"]["id"], issued["secret"], kind)
        return str(issued["principal"]["id"])

    def address(self, label: str, box: str | None = None) -> str:
        return agent_address(self.ids[label], box)

    def call(self, tool: str, caller: str, **arguments: Any) -> dict[str, Any]:
        return self.app.call(tool, arguments, self.secrets[caller], via="rest")

    def learn(self, result: Any) -> None:
        """Names the ids a result reveals for the first time (register's new principal, a new
        run), in the order they appear, so that two runs of a scenario name them alike."""
        text = json.dumps(result, sort_keys=True)
        for found in ID.findall(text):
            if found not in self.labels:
                self.labels[found] = f"new-{len(self.labels)}"

    def send(self, to: str, box: str | None = None) -> str:
        """Queues one envelope into ``to``'s mailbox through the one delivery path there is."""
        key = self.unique("envelope")
        address = self.address(to, box)
        envelope = Envelope(
            id=envelope_id_for(key),
            namespace=NAMESPACE,
            address=address,
            sender=self.ids["operator"],
            kind="message",
            payload={"n": key},
            sent_at=self.clock.now(),
        )
        deliver(self.store, self.queues, self.clock, NAMESPACE, address, envelope)
        self.sent.append(envelope.id)
        return envelope.id

    # -- what time does to mailboxes ------------------------------------------------------------
    def lapse_leases(self) -> None:
        """Every delivery lease runs out: in-flight messages become visible again in moto,
        whose visibility runs on the wall clock, and our clock passes the longest lease."""
        for name, queue in _moto_queues().items():
            if name.startswith(PREFIX):
                for message in queue._messages:
                    message.visible_at = 0.0
        self.clock.advance(_MAX_LEASE_SECONDS + 1)

    def in_flight(self) -> int:
        return sum(
            len(queue._messages)
            for name, queue in _moto_queues().items()
            if name.startswith(PREFIX) and not name.endswith("-dlq")
        )

    def acknowledge_all(self, caller: str, deliveries: list[dict[str, Any]]) -> None:
        for delivery in deliveries:
            self.call("acknowledge", caller, id=delivery["id"], generation=delivery["generation"])
            self.acked.append(delivery["id"])

    def drain(self) -> None:
        """Receives and acknowledges everything in every mailbox whose owner can still call,
        letting leases lapse between rounds, until nothing is left in flight."""
        if not self.in_flight():
            return
        owners = {
            queue_name(PREFIX, NAMESPACE, address): (label, address)
            for label, address in self._addresses()
        }
        for _ in range(_DRAIN_ROUNDS):
            waiting = [
                owners[name]
                for name, queue in _moto_queues().items()
                if name in owners and queue.messages
            ]
            for label, address in waiting:
                self._drain_one(label, address)
            if not self.in_flight():
                return
            self.lapse_leases()

    def _addresses(self) -> list[tuple[str, str]]:
        found = []
        for label, kind in self.kinds.items():
            if kind == "agent" and label in self.secrets:
                boxes = self.store.list_mailboxes(NAMESPACE, self.ids[label], 20)
                found += [(label, self.address(label)), *((label, b.address) for b in boxes)]
        return found

    def _drain_one(self, label: str, address: str) -> None:
        for _ in range(50):
            try:
                got = self.call(
                    "receive", label, address=address, max_messages=10, lease_seconds=900
                )
            except VigilError as error:
                if error.code is ErrorCode.UNAUTHENTICATED:
                    return  # revoked or rotated away: nobody can receive from it any more
                raise
            if not got["deliveries"]:
                return
            self.acknowledge_all(label, got["deliveries"])

    # -- reading back -------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        items: list[dict[str, Any]] = []
        request: dict[str, Any] = {"TableName": self.table, "ConsistentRead": True}
        while True:
            page = self.dynamodb.scan(**request)
            items += page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                break
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        queues = {
            name: [message.body for message in queue._messages]
            for name, queue in _moto_queues().items()
        }
        schedules = []
        for summary in self.scheduler.list_schedules(GroupName=GROUP).get("Schedules", []):
            found = self.scheduler.get_schedule(GroupName=GROUP, Name=summary["Name"])
            schedules.append({"name": found["Name"], "input": found["Target"]["Input"]})
        return Snapshot(items=items, queues=queues, schedules=schedules)

    def twice_acknowledged(self) -> list[str]:
        return sorted(e for e, n in Counter(self.acked).items() if n > 1)
