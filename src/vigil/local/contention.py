"""DynamoDB under load, played by the local DynamoDB's front (``vigil local --contention``).

DynamoDB Local commits one request after another: it never cancels a transaction for a
conflict and never throttles. DynamoDB does both, and code that is correct on DynamoDB Local
may not be on DynamoDB. With contention on, the front refuses what DynamoDB would, in
DynamoDB's own wire shapes, before the request reaches the engine:

- **Transaction conflicts.** A ``TransactWriteItems`` holds each of its items from when the
  front receives it until the engine has answered and ``hold_seconds`` more (a DynamoDB
  transaction takes tens of milliseconds, DynamoDB Local one; the hold is bookkeeping, the
  engine is not slowed). A single-item write holds its item while it is on its way. A
  transaction that meets a held item is cancelled (``TransactionCanceledException``, reason
  ``TransactionConflict`` at that item, ``None`` at the others), so is a ``TransactGetItems``
  that meets an item any write holds; a ``PutItem``, ``UpdateItem`` or ``DeleteItem`` that
  meets an item a transaction holds gets ``TransactionConflictException``, and so does a
  ``BatchWriteItem`` whose every request met one (the others come back in
  ``UnprocessedItems``).
- **Partition throughput.** Each partition (a partition key value of a table, or of a global
  secondary index for a ``Query`` on it) has a write and a read token bucket filling at
  DynamoDB's per-partition rates, 1,000 WCU/s and 3,000 RCU/s, times ``scale`` (1/20 by
  default: 50 and 150), holding ``burst_seconds`` of that rate (1 s by default). A put costs a
  write unit per KB of its item (twice in a transaction), an update, a delete or a condition
  check one (two in a transaction: the item's size is not in the request), a strongly
  consistent read one unit, an eventually consistent one half, a transactional one two (again
  whatever the item's size, which the request does not tell). A request its partition cannot
  pay for is refused with ``ProvisionedThroughputExceededException``, cancelled with
  ``ThrottlingError`` in a transaction, and in a batch the requests that cannot be paid for
  come back unprocessed (the exception when none could be).

What is refused is counted, by operation and by error code (``stats``); the front reports the
counts in its log and serves them at ``GET /contention``. See "Contention, locally" in
docs/DESIGN.md for what is not played (adaptive capacity, partition splits, table-level
limits, PartiQL and Scan).
"""

from __future__ import annotations

import heapq
import json
import math
import re
import threading
import time
import uuid
import zlib
from base64 import b64decode
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

# DynamoDB's per-partition limits, in capacity units a second.
PARTITION_WCU = 1000.0
PARTITION_RCU = 3000.0
ERROR_PREFIX = "com.amazonaws.dynamodb.v20120810#"
CONFLICT_MESSAGE = "Transaction is ongoing for the item"
THROTTLED_MESSAGE = (
    "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically "
    "scaling your table or index so please try again shortly. If exceptions persist, check if "
    "you have a hot key: "
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html."
)
_TOKEN = re.compile(r"[#:]?[\w.-]+|\S")
# Buckets of partitions no longer used are dropped once there are this many.
_BUCKETS_KEPT = 10_000


@dataclass(frozen=True)
class ContentionSettings:
    """How hard the local DynamoDB pushes back: DynamoDB's per-partition rates times ``scale``,
    buckets of ``burst_seconds`` of that rate, and transactions holding their items
    ``hold_seconds`` after the engine answered."""

    scale: float = 1 / 20
    burst_seconds: float = 1.0
    hold_seconds: float = 0.020

    @property
    def write_rate(self) -> float:
        return PARTITION_WCU * self.scale

    @property
    def read_rate(self) -> float:
        return PARTITION_RCU * self.scale

    def described(self) -> str:
        return (
            f"{self.write_rate:g} WCU/s and {self.read_rate:g} RCU/s a partition, "
            f"{self.burst_seconds:g} s of burst, transactions holding their items "
            f"{self.hold_seconds * 1000:g} ms after the answer"
        )


@dataclass(frozen=True)
class TableKeys:
    """What the front needs of a table's schema: its key, and each global index's partition key."""

    partition: str
    sort: str | None = None
    indexes: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def described(cls, table: Mapping[str, Any]) -> TableKeys:
        """From DescribeTable's ``Table``."""

        def key(schema: list[Mapping[str, str]], kind: str) -> str | None:
            return next((k["AttributeName"] for k in schema if k["KeyType"] == kind), None)

        partition = key(table["KeySchema"], "HASH")
        if partition is None:
            raise ValueError("a table without a partition key")
        indexes = {
            index["IndexName"]: key(index["KeySchema"], "HASH")
            for index in table.get("GlobalSecondaryIndexes") or []
        }
        return cls(
            partition,
            key(table["KeySchema"], "RANGE"),
            {name: hash_key for name, hash_key in indexes.items() if hash_key},
        )

    @property
    def names(self) -> tuple[str, ...]:
        return (self.partition,) if self.sort is None else (self.partition, self.sort)


Schemas = Callable[[str], TableKeys | None]
# (table, canonical JSON of the key) and (table, index or "", canonical JSON of the value).
ItemId = tuple[str, str]
Partition = tuple[str, str, str]


@dataclass(frozen=True)
class Touch:
    """What one item of a request costs, and where."""

    item: ItemId | None
    partition: Partition
    units: float


class TokenBucket:
    """Capacity that fills at ``rate`` a second up to ``capacity``. A request larger than the
    whole bucket passes when the bucket is full and leaves it in debt, so that no item is too
    large ever to be written."""

    def __init__(self, rate: float, capacity: float, now: float) -> None:
        self.rate = rate
        self.capacity = capacity
        self.tokens = capacity
        self.at = now

    def _refill(self, now: float) -> None:
        if now > self.at:
            self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.rate)
            self.at = now

    def can_pay(self, units: float, now: float) -> bool:
        self._refill(now)
        # Within a rounding error of the clock's sums: 1000.02 - 1000 is not quite 0.02.
        return self.tokens >= min(units, self.capacity) - 1e-9

    def pay(self, units: float) -> None:
        self.tokens -= units

    def full(self, now: float) -> bool:
        self._refill(now)
        return self.tokens >= self.capacity


@dataclass
class _Hold:
    item: ItemId
    transaction: bool
    # While the request is on its way: None; then the time the hold ends.
    until: float | None = None


@dataclass
class Verdict:
    """The front's answer to a request: a refusal to send back as it is, or the request to
    forward (``body``, when the front left some of a batch out), the holds to release once the
    engine has answered, and what the front left out, to add to the engine's answer."""

    refusal: bytes | None = None
    body: bytes | None = None
    holds: list[_Hold] = field(default_factory=list)
    unprocessed: tuple[str, dict[str, Any]] | None = None


def error_body(kind: str, message: str, **fields: Any) -> bytes:
    return json.dumps({"__type": ERROR_PREFIX + kind, "message": message, **fields}).encode()


def error_headers(body: bytes) -> list[tuple[str, str]]:
    """The headers DynamoDB sends with an answer (botocore checks the CRC32 when present)."""
    return [
        ("Content-Type", "application/x-amz-json-1.0"),
        ("x-amzn-RequestId", uuid.uuid4().hex.upper()),
        ("x-amz-crc32", str(zlib.crc32(body))),
    ]


def cancelled(reasons: list[str]) -> bytes:
    """A ``TransactionCanceledException`` with one reason per item, in order."""
    messages = {"TransactionConflict": CONFLICT_MESSAGE, "ThrottlingError": THROTTLED_MESSAGE}
    listed = [
        {"Code": code, "Message": messages[code]} if code in messages else {"Code": code}
        for code in reasons
    ]
    return error_body(
        "TransactionCanceledException",
        "Transaction cancelled, please refer cancellation reasons for specific reasons "
        f"[{', '.join(reasons)}]",
        CancellationReasons=listed,
    )


def value_size(value: Any) -> int:
    """An attribute value's size as DynamoDB counts it (numbers approximately)."""
    if not isinstance(value, Mapping) or len(value) != 1:
        return 1
    [(kind, content)] = value.items()
    if kind == "S":
        return len(str(content).encode())
    if kind == "N":
        return _number_size(content)
    if kind == "B":
        return _binary_size(content)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(str(s).encode()) for s in content)
    if kind == "NS":
        return sum(_number_size(n) for n in content)
    if kind == "BS":
        return sum(_binary_size(b) for b in content)
    if kind == "L":
        return 3 + sum(1 + value_size(v) for v in content)
    if kind == "M":
        return 3 + sum(1 + len(str(k).encode()) + value_size(v) for k, v in content.items())
    return 1


def _number_size(text: Any) -> int:
    try:
        digits = Decimal(str(text)).normalize().as_tuple().digits
    except (InvalidOperation, ValueError):
        return 1
    return min(21, len(digits) // 2 + 2)


def _binary_size(content: Any) -> int:
    try:
        return len(b64decode(content)) if isinstance(content, str) else len(content)
    except (TypeError, ValueError):
        return 1


def item_size(item: Mapping[str, Any]) -> int:
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def write_units(item: Mapping[str, Any]) -> float:
    return float(max(1, math.ceil(item_size(item) / 1024)))


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


class Contention:
    """The holds and token buckets of one front; safe to call from its handler threads."""

    def __init__(
        self, settings: ContentionSettings | None = None, now: Callable[[], float] = time.monotonic
    ) -> None:
        self.settings = settings or ContentionSettings()
        self.now = now
        self._lock = threading.Lock()
        self._held: dict[ItemId, list[_Hold]] = {}
        self._ending: list[tuple[float, int, _Hold]] = []
        self._sequence = 0
        self._writes: dict[Partition, TokenBucket] = {}
        self._reads: dict[Partition, TokenBucket] = {}
        self._refused: Counter[tuple[str, str]] = Counter()

    def stats(self) -> dict[str, dict[str, int]]:
        """What was refused: for each operation, how many of each error code (for a batch,
        ``UnprocessedItems`` or ``UnprocessedKeys`` counts the requests left out)."""
        with self._lock:
            counted: dict[str, dict[str, int]] = {}
            for (operation, code), count in sorted(self._refused.items()):
                counted.setdefault(operation, {})[code] = count
            return counted

    # -- the requests --------------------------------------------------------------------------

    def admit(self, operation: str, request: Mapping[str, Any], schemas: Schemas) -> Verdict:
        """What to do with a request (``operation`` is its X-Amz-Target's action). ``schemas``
        gives a table's keys (None for a table that does not exist); it is called before the
        lock is taken, so it may ask the engine."""
        try:
            if operation in ("PutItem", "UpdateItem", "DeleteItem"):
                return self._single_write(operation, request, schemas)
            if operation in ("GetItem", "Query"):
                return self._read(operation, request, schemas)
            if operation == "TransactWriteItems":
                return self._transaction(operation, _transact_writes(request, schemas), True)
            if operation == "TransactGetItems":
                return self._transaction(operation, _transact_gets(request, schemas), False)
            if operation == "BatchWriteItem":
                return self._batch_write(request, schemas)
            if operation == "BatchGetItem":
                return self._batch_get(request, schemas)
        except (AttributeError, KeyError, TypeError, ValueError):
            # Not a request DynamoDB would take: the engine says why.
            pass
        return Verdict()

    def release(self, verdict: Verdict) -> None:
        """After the engine's answer: a single write lets its item go, a transaction keeps its
        items for the hold."""
        if not verdict.holds:
            return
        with self._lock:
            now = self.now()
            for hold in verdict.holds:
                if hold.transaction:
                    hold.until = now + self.settings.hold_seconds
                    self._sequence += 1
                    heapq.heappush(self._ending, (hold.until, self._sequence, hold))
                else:
                    self._let_go(hold)

    def answered(self, verdict: Verdict, status: int, body: bytes) -> bytes:
        """The engine's answer, with what the front left out of a batch added as unprocessed."""
        if verdict.unprocessed is None or status != 200:
            return body
        name, left_out = verdict.unprocessed
        answer = json.loads(body)
        merged = answer.get(name) or {}
        for table, entries in left_out.items():
            if name == "UnprocessedItems":
                merged.setdefault(table, []).extend(entries)
            else:
                merged.setdefault(table, {**entries, "Keys": []})["Keys"].extend(entries["Keys"])
        answer[name] = merged
        return json.dumps(answer).encode()

    # -- each kind of request -------------------------------------------------------------------

    def _single_write(
        self, operation: str, request: Mapping[str, Any], schemas: Schemas
    ) -> Verdict:
        table = request["TableName"]
        keys = schemas(table)
        if keys is None:
            return Verdict()
        if operation == "PutItem":
            item, units = request["Item"], write_units(request["Item"])
        else:
            item, units = request["Key"], 1.0
        touch = _touch(table, keys, item, units)
        with self._lock:
            now = self._expire()
            if not self._writes_can_pay([touch], now):
                return self._refuse(operation, "ProvisionedThroughputExceededException")
            if self._held_by(touch.item, transactions_only=True):
                return self._refuse(operation, "TransactionConflictException")
            self._pay(self._writes, [touch])
            return Verdict(holds=self._hold([touch], transaction=False))

    def _read(self, operation: str, request: Mapping[str, Any], schemas: Schemas) -> Verdict:
        table = request["TableName"]
        keys = schemas(table)
        if keys is None:
            return Verdict()
        units = 1.0 if request.get("ConsistentRead") else 0.5
        if operation == "GetItem":
            touch = _touch(table, keys, request["Key"], units)
        else:
            partition = _queried_partition(table, keys, request)
            if partition is None:
                return Verdict()
            touch = Touch(None, partition, units)
        with self._lock:
            now = self._expire()
            if not self._can_pay(self._reads, self.settings.read_rate, [touch], now):
                return self._refuse(operation, "ProvisionedThroughputExceededException")
            self._pay(self._reads, [touch])
        return Verdict()

    def _transaction(self, operation: str, touches: list[Touch | None], writes: bool) -> Verdict:
        known = [t for t in touches if t is not None]
        buckets, rate = (
            (self._writes, self.settings.write_rate)
            if writes
            else (self._reads, self.settings.read_rate)
        )
        with self._lock:
            now = self._expire()
            reasons = ["None"] * len(touches)
            owed: dict[Partition, float] = {}
            for place, touch in enumerate(touches):
                if touch is None:
                    continue
                owed[touch.partition] = owed.get(touch.partition, 0.0) + touch.units
                bucket = self._bucket(buckets, rate, touch.partition, now)
                if not bucket.can_pay(owed[touch.partition], now):
                    reasons[place] = "ThrottlingError"
            if reasons.count("None") == len(reasons):
                for place, touch in enumerate(touches):
                    if touch is not None and self._held_by(touch.item, transactions_only=False):
                        reasons[place] = "TransactionConflict"
            refused = [r for r in reasons if r != "None"]
            if refused:
                self._refused[(operation, refused[0])] += 1
                return Verdict(refusal=cancelled(reasons))
            self._pay(buckets, known)
            return Verdict(holds=self._hold(known, transaction=True) if writes else [])

    def _batch_write(self, request: Mapping[str, Any], schemas: Schemas) -> Verdict:
        planned: list[tuple[str, Any, Touch | None]] = []
        for table, entries in request["RequestItems"].items():
            keys = schemas(table)
            for entry in entries:
                touch = None
                if keys is not None and "PutRequest" in entry:
                    item = entry["PutRequest"]["Item"]
                    touch = _touch(table, keys, item, write_units(item))
                elif keys is not None and "DeleteRequest" in entry:
                    touch = _touch(table, keys, entry["DeleteRequest"]["Key"], 1.0)
                planned.append((table, entry, touch))
        with self._lock:
            now = self._expire()
            kept: dict[str, list[Any]] = {}
            left_out: dict[str, list[Any]] = {}
            taken: list[Touch] = []
            throttled = conflicted = 0
            for table, entry, touch in planned:
                if touch is not None and not self._writes_can_pay([touch], now):
                    throttled += 1
                elif touch is not None and self._held_by(touch.item, transactions_only=True):
                    conflicted += 1
                else:
                    if touch is not None:
                        self._pay(self._writes, [touch])
                        taken.append(touch)
                    kept.setdefault(table, []).append(entry)
                    continue
                left_out.setdefault(table, []).append(entry)
            if not left_out:
                return Verdict(holds=self._hold(taken, transaction=False))
            if not kept:
                code = (
                    "ProvisionedThroughputExceededException"
                    if throttled
                    else "TransactionConflictException"
                )
                return self._refuse("BatchWriteItem", code)
            self._refused[("BatchWriteItem", "UnprocessedItems")] += throttled + conflicted
            return Verdict(
                body=json.dumps({**request, "RequestItems": kept}).encode(),
                holds=self._hold(taken, transaction=False),
                unprocessed=("UnprocessedItems", left_out),
            )

    def _batch_get(self, request: Mapping[str, Any], schemas: Schemas) -> Verdict:
        planned: list[tuple[str, Any, Touch | None]] = []
        for table, asked in request["RequestItems"].items():
            keys = schemas(table)
            units = 1.0 if asked.get("ConsistentRead") else 0.5
            for key in asked["Keys"]:
                touch = None if keys is None else _touch(table, keys, key, units)
                planned.append((table, key, touch))
        with self._lock:
            now = self._expire()
            kept: dict[str, list[Any]] = {}
            left_out: dict[str, list[Any]] = {}
            for table, key, touch in planned:
                if touch is None or self._can_pay(
                    self._reads, self.settings.read_rate, [touch], now
                ):
                    if touch is not None:
                        self._pay(self._reads, [touch])
                    kept.setdefault(table, []).append(key)
                else:
                    left_out.setdefault(table, []).append(key)
            if not left_out:
                return Verdict()
            if not kept:
                return self._refuse("BatchGetItem", "ProvisionedThroughputExceededException")
            self._refused[("BatchGetItem", "UnprocessedKeys")] += sum(map(len, left_out.values()))
        items = request["RequestItems"]
        return Verdict(
            body=json.dumps(
                {
                    **request,
                    "RequestItems": {t: {**items[t], "Keys": ks} for t, ks in kept.items()},
                }
            ).encode(),
            unprocessed=(
                "UnprocessedKeys",
                {t: {**items[t], "Keys": ks} for t, ks in left_out.items()},
            ),
        )

    # -- under the lock -------------------------------------------------------------------------

    def _refuse(self, operation: str, code: str) -> Verdict:
        self._refused[(operation, code)] += 1
        message = CONFLICT_MESSAGE if code == "TransactionConflictException" else THROTTLED_MESSAGE
        return Verdict(refusal=error_body(code, message))

    def _expire(self) -> float:
        now = self.now()
        while self._ending and self._ending[0][0] <= now:
            _, _, hold = heapq.heappop(self._ending)
            self._let_go(hold)
        for buckets in (self._writes, self._reads):
            if len(buckets) > _BUCKETS_KEPT:
                # A full bucket is what a new one would be.
                for unused in [p for p, b in buckets.items() if b.full(now)]:
                    del buckets[unused]
        return now

    def _let_go(self, hold: _Hold) -> None:
        holds = self._held.get(hold.item)
        if holds is None:
            return
        holds[:] = [h for h in holds if h is not hold]
        if not holds:
            del self._held[hold.item]

    def _held_by(self, item: ItemId | None, transactions_only: bool) -> bool:
        holds = self._held.get(item) if item is not None else None
        return bool(holds) and (not transactions_only or any(h.transaction for h in holds or []))

    def _hold(self, touches: list[Touch], transaction: bool) -> list[_Hold]:
        holds = []
        for touch in touches:
            if touch.item is not None:
                hold = _Hold(touch.item, transaction)
                self._held.setdefault(touch.item, []).append(hold)
                holds.append(hold)
        return holds

    def _writes_can_pay(self, touches: list[Touch], now: float) -> bool:
        return self._can_pay(self._writes, self.settings.write_rate, touches, now)

    def _can_pay(
        self,
        buckets: dict[Partition, TokenBucket],
        rate: float,
        touches: list[Touch],
        now: float,
    ) -> bool:
        owed: dict[Partition, float] = {}
        for touch in touches:
            owed[touch.partition] = owed.get(touch.partition, 0.0) + touch.units
        return all(
            self._bucket(buckets, rate, partition, now).can_pay(units, now)
            for partition, units in owed.items()
        )

    def _bucket(
        self, buckets: dict[Partition, TokenBucket], rate: float, partition: Partition, now: float
    ) -> TokenBucket:
        bucket = buckets.get(partition)
        if bucket is None:
            bucket = buckets[partition] = TokenBucket(rate, rate * self.settings.burst_seconds, now)
        return bucket

    def _pay(self, buckets: dict[Partition, TokenBucket], touches: list[Touch]) -> None:
        for touch in touches:
            buckets[touch.partition].pay(touch.units)


def _touch(table: str, keys: TableKeys, key: Mapping[str, Any], units: float) -> Touch:
    if any(name not in key for name in keys.names):
        raise KeyError("a key without its key attributes")
    item = (table, _canonical({name: key[name] for name in keys.names}))
    return Touch(item, (table, "", _canonical(key[keys.partition])), units)


def _transact_writes(request: Mapping[str, Any], schemas: Schemas) -> list[Touch | None]:
    touches: list[Touch | None] = []
    for action in request["TransactItems"]:
        [(kind, detail)] = action.items()
        keys = schemas(detail["TableName"])
        if keys is None:
            touches.append(None)
        elif kind == "Put":
            units = 2 * write_units(detail["Item"])
            touches.append(_touch(detail["TableName"], keys, detail["Item"], units))
        else:
            touches.append(_touch(detail["TableName"], keys, detail["Key"], 2.0))
    return touches


def _transact_gets(request: Mapping[str, Any], schemas: Schemas) -> list[Touch | None]:
    touches: list[Touch | None] = []
    for action in request["TransactItems"]:
        get = action["Get"]
        keys = schemas(get["TableName"])
        touches.append(None if keys is None else _touch(get["TableName"], keys, get["Key"], 2.0))
    return touches


def _queried_partition(table: str, keys: TableKeys, request: Mapping[str, Any]) -> Partition | None:
    """The partition a ``Query`` reads: its key condition's ``<partition key> = :value``."""
    index = request.get("IndexName") or ""
    name = keys.indexes.get(index) if index in keys.indexes else keys.partition
    if name is None:
        return None
    # A local secondary index shares its table's partitions.
    where = index if index in keys.indexes else ""
    legacy = (request.get("KeyConditions") or {}).get(name)
    if legacy is not None:
        return (table, where, _canonical(legacy["AttributeValueList"][0]))
    expression = request.get("KeyConditionExpression")
    if not isinstance(expression, str):
        return None
    names = request.get("ExpressionAttributeNames") or {}
    values = request.get("ExpressionAttributeValues") or {}
    tokens = [names.get(t, t) for t in _TOKEN.findall(expression)]
    for place in range(len(tokens) - 2):
        left, operator, right = tokens[place : place + 3]
        if operator != "=":
            continue
        if left == name and right in values:
            return (table, where, _canonical(values[right]))
        if right == name and left in values:
            return (table, where, _canonical(values[left]))
    return None
