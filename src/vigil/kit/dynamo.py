"""DynamoDB plumbing shared by every capability's adapter: one table, keys ``pk``/``sk``,
conditional writes throughout, and the unit of work's commit.

Records are kept as a JSON document (``doc``) beside the few top-level attributes that
conditions and TTL need, so the code that reads them is the same pydantic validation that
the in-memory fake uses.
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from vigil.kit.aws import aws_failure, error_code
from vigil.kit.idempotency import Handover, IdempotencyRecord, IdempotencyStore
from vigil.kit.limits import MAX_TRANSACTION_ITEMS
from vigil.kit.uow import Committer, ConditionFailed, Count, Tally, Write, tallies
from vigil.observability import metrics

T = TypeVar("T")


def epoch_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def from_ms(value: dict[str, str]) -> datetime:
    return datetime.fromtimestamp(int(value["N"]) / 1000, UTC)


def attr_s(value: str) -> dict[str, str]:
    return {"S": value}


def attr_n(value: int) -> dict[str, str]:
    return {"N": str(value)}


@dataclass(frozen=True)
class DynamoWrite(Write):
    """Transaction items. ``ahead`` holds items that may be applied on their own, before the
    rest, when the whole does not fit one transaction: changes that a retry can only repeat,
    never undo, so applying them early leaves nothing a retry would do differently."""

    items: list[dict[str, Any]]
    ahead: list[dict[str, Any]] = field(default_factory=list)
    counts: tuple[Count, ...] = ()


# Cancellation reasons that say the item was busy, not that a condition failed: another
# transaction held it (TransactionConflict) or its partition was over its rate. A cancelled
# transaction wrote nothing, so the very same request may go again.
_BUSY_REASONS = frozenset(
    {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"}
)
_NO_REASON = frozenset({"None", None})


def _failure_kind(error: Exception, code: str) -> str | None:
    """What a refused request means to its caller: "condition" (a condition did not hold: read
    again and decide again), "busy" (the item or its partition was busy: the same request may
    go again), or None (anything else)."""
    response = getattr(error, "response", None) or {}
    if code == "ConditionalCheckFailedException":
        return "condition"
    if code == "TransactionConflictException":
        # A single-item write against an item that a transaction holds.
        return "busy"
    if code != "TransactionCanceledException":
        return None
    codes = {r.get("Code") for r in response.get("CancellationReasons") or []}
    if not codes:
        # moto reports the reasons only in the message.
        codes = {c for c in ("ConditionalCheckFailed", *_BUSY_REASONS) if c in str(error)}
    if "ConditionalCheckFailed" in codes:
        # Lost to a change of the item whatever else was busy: read again.
        return "condition"
    if codes & _BUSY_REASONS and codes <= _BUSY_REASONS | _NO_REASON:
        return "busy"
    return None


@dataclass
class Backoff:
    """How a request refused because its item was busy goes again: up to ``attempts`` sends
    in all, each after a pause drawn at random between nothing and an exponentially growing
    cap ("full jitter"), so that callers who collided do not collide again in step. The
    bound keeps a call's worst wait near a second; past it the caller is told ``throttled``.
    ``sleep`` and ``draw`` are injected: the tests take the pauses without waiting."""

    attempts: int = 8
    base_seconds: float = 0.02
    cap_seconds: float = 0.4
    sleep: Callable[[float], None] = time.sleep
    draw: Callable[[], float] = random.random

    def pause(self, retry: int) -> float:
        """Waits before send number ``retry + 1``; returns how long."""
        seconds: float = self.draw() * min(self.cap_seconds, self.base_seconds * 2.0**retry)
        self.sleep(seconds)
        return seconds


# What a claim's document holds: whom and what the key is of. Everything else is an attribute
# of its own, which the conditions read and the completion sets, and is kept only there.
_IDEMPOTENCY_DOC = {"namespace", "principal_id", "tool", "key"}


def _idempotency_record(item: dict[str, Any]) -> IdempotencyRecord:
    """A record as stored: its document, with the attributes beside it (a document written
    before the attributes were kept only beside it holds them too; theirs win)."""
    fields = json.loads(item["doc"]["S"])
    fields.update(
        status=item["status"]["S"],
        token=item["token"]["S"],
        fingerprint=item["fingerprint"]["S"],
        locked_until=from_ms(item["locked_until"]),
        expires_at=from_ms(item["expires_at"]),
    )
    stored = IdempotencyRecord.model_validate(fields)
    if "result" in item:
        stored.result = json.loads(item["result"]["S"])
    if "handover" in item:
        stored.handover = Handover.model_validate_json(item["handover"]["S"])
    return stored


def idem_key(record: IdempotencyRecord) -> dict[str, Any]:
    return {
        "pk": attr_s(f"IDEM#{record.namespace}#{record.principal_id}"),
        "sk": attr_s(f"{record.tool}#{record.key}"),
    }


class DynamoBase(Committer, IdempotencyStore):
    # How a request that found its item busy goes again; one for the process, as the wait is
    # the same whichever store asks. Tests give a store one of its own.
    backoff = Backoff()

    def __init__(self, client: Any, table_name: str) -> None:
        self.client = client
        self.table = table_name

    # -- plumbing -------------------------------------------------------------------------
    def _call(self, operation: Callable[..., T], **kwargs: Any) -> T:
        """``operation(**kwargs)``, with DynamoDB's refusals translated: ConditionFailed for a
        condition that did not hold; for an item or partition that was busy (a transaction
        conflict, a throttled transaction) the same request again, after a jittered pause,
        up to ``backoff.attempts`` times in all, then ``throttled``; every other AWS failure
        as ``aws_failure`` says."""
        for retry in range(self.backoff.attempts):
            try:
                return operation(**kwargs)
            except Exception as error:
                code = error_code(error)
                if code is None:
                    raise
                kind = _failure_kind(error, code)
                if kind == "condition":
                    raise ConditionFailed(str(kwargs.get("TableName", ""))) from None
                if kind != "busy":
                    raise aws_failure(code, "the store") from None
                metrics.store_busy()
                if retry + 1 == self.backoff.attempts:
                    raise aws_failure("TransactionConflictException", "the store") from None
                self.backoff.pause(retry)
        raise AssertionError("unreachable: the loop returns or raises")

    def _get(self, pk: str, sk: str, *, consistent: bool = True) -> dict[str, Any] | None:
        response = self._call(
            self.client.get_item,
            TableName=self.table,
            Key={"pk": attr_s(pk), "sk": attr_s(sk)},
            ConsistentRead=consistent,
        )
        item: dict[str, Any] | None = response.get("Item")
        return item

    def _pages(self, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Every page of a query, following LastEvaluatedKey."""
        request = {"TableName": self.table, **request}
        while True:
            response = self._call(self.client.query, **request)
            yield response
            if "LastEvaluatedKey" not in response:
                return
            request["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def _batch_get(self, keys: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The items at ``keys``, read consistently, in no particular order."""
        found: list[dict[str, Any]] = []
        for start in range(0, len(keys), MAX_TRANSACTION_ITEMS):
            pending: dict[str, Any] = {
                self.table: {
                    "Keys": keys[start : start + MAX_TRANSACTION_ITEMS],
                    "ConsistentRead": True,
                }
            }
            while pending:
                response = self._call(self.client.batch_get_item, RequestItems=pending)
                found += response["Responses"].get(self.table, [])
                pending = response.get("UnprocessedKeys") or {}
        return found

    def _put(self, item: dict[str, Any], condition: str | None = None, **extra: Any) -> DynamoWrite:
        put: dict[str, Any] = {"TableName": self.table, "Item": item, **extra}
        if condition is not None:
            put["ConditionExpression"] = condition
        return DynamoWrite([{"Put": put}])

    def _written(self, operation: Callable[..., Any], **request: Any) -> bool:
        """Makes one conditional write on this table now; whether its condition held."""
        try:
            self._call(operation, TableName=self.table, **request)
        except ConditionFailed:
            return False
        return True

    def _put_new(self, item: dict[str, Any]) -> bool:
        """Puts ``item`` now, only if no item has its key; whether it was put."""
        return self._written(
            self.client.put_item, Item=item, ConditionExpression="attribute_not_exists(pk)"
        )

    def _update(self, key: dict[str, Any], **request: Any) -> dict[str, Any]:
        return {"Update": {"TableName": self.table, "Key": key, **request}}

    # -- the unit of work -----------------------------------------------------------------
    def commit(self, writes: Sequence[Write], completion: IdempotencyRecord | None = None) -> None:
        ahead: list[dict[str, Any]] = []
        items: list[dict[str, Any]] = []
        counts: list[Count] = []
        for write in writes:
            assert isinstance(write, DynamoWrite), "a write staged for another backend"
            ahead += write.ahead
            items += write.items
            counts += write.counts
        items += [self._tally(key, changes) for key, changes in tallies(counts).items()]
        if completion is not None:
            items.append(self._completion(completion))
        if len(ahead) + len(items) > MAX_TRANSACTION_ITEMS:
            for start in range(0, len(ahead), MAX_TRANSACTION_ITEMS):
                self._transact(ahead[start : start + MAX_TRANSACTION_ITEMS])
        else:
            items = ahead + items
        if items:
            self._transact(items)

    def _tally(self, key: tuple[str, str], changes: list[Tally]) -> dict[str, Any]:
        """One Update of an item's counters, conditional on the limit of each increase."""
        names: dict[str, str] = {}
        values: dict[str, Any] = {}
        adds, conditions = [], []
        for n, change in enumerate(changes):
            names[f"#c{n}"] = change.name
            values[f":d{n}"] = attr_n(change.delta)
            adds.append(f"#c{n} :d{n}")
            if change.delta > 0 and change.limit is not None:
                values[f":r{n}"] = attr_n(change.limit - change.delta)
                conditions.append(f"(attribute_not_exists(#c{n}) OR #c{n} <= :r{n})")
        update = self._update(
            {"pk": attr_s(key[0]), "sk": attr_s(key[1])},
            UpdateExpression="ADD " + ", ".join(adds),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )
        if conditions:
            update["Update"]["ConditionExpression"] = " AND ".join(conditions)
        return update

    def counter(self, pk: str, sk: str, name: str) -> int:
        """A counter as stored (0 if never counted)."""
        item = self._get(pk, sk)
        return int(item[name]["N"]) if item and name in item else 0

    def _transact(self, items: list[dict[str, Any]]) -> None:
        if len(items) == 1:
            # One item needs no transaction: a plain conditional write costs half as much.
            ((kind, request),) = items[0].items()
            operation = {
                "Put": self.client.put_item,
                "Update": self.client.update_item,
                "Delete": self.client.delete_item,
            }[kind]
            self._call(operation, **request)
        else:
            self._call(self.client.transact_write_items, TransactItems=items)

    # -- idempotency ----------------------------------------------------------------------
    def _completion(self, record: IdempotencyRecord) -> dict[str, Any]:
        names = {"#st": "status", "#res": "result", "#tok": "token"}
        values = {
            ":done": attr_s("completed"),
            ":pending": attr_s("pending"),
            ":res": attr_s(json.dumps(record.result, separators=(",", ":"))),
            ":tok": attr_s(record.token),
        }
        update = "SET #st = :done, #res = :res"
        if record.handover is not None:
            update += ", #ho = :ho"
            names["#ho"] = "handover"
            values[":ho"] = attr_s(record.handover.model_dump_json())
        return self._update(
            idem_key(record),
            UpdateExpression=update,
            ConditionExpression="#st = :pending AND #tok = :tok",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )

    def claim_idempotency(
        self, record: IdempotencyRecord, now: datetime
    ) -> IdempotencyRecord | None:
        item = {
            **idem_key(record),
            "status": attr_s(record.status),
            "token": attr_s(record.token),
            "fingerprint": attr_s(record.fingerprint),
            "locked_until": attr_n(epoch_ms(record.locked_until)),
            "expires_at": attr_n(epoch_ms(record.expires_at)),
            "ttl": attr_n(int(record.expires_at.timestamp())),
            "doc": attr_s(record.model_dump_json(include=_IDEMPOTENCY_DOC)),
        }
        try:
            self._call(
                self.client.put_item,
                TableName=self.table,
                Item=item,
                ConditionExpression=(
                    "attribute_not_exists(pk) OR expires_at <= :now"
                    " OR (#st = :pending AND locked_until <= :now)"
                ),
                ExpressionAttributeNames={"#st": "status"},
                ExpressionAttributeValues={
                    ":now": attr_n(epoch_ms(now)),
                    ":pending": attr_s("pending"),
                },
            )
            return None
        except ConditionFailed:
            existing = self._get(item["pk"]["S"], item["sk"]["S"])
            if existing is None:  # expired and deleted between the two calls: claim again
                return self.claim_idempotency(record, now)
            return _idempotency_record(existing)

    def read_idempotency(
        self, namespace: str, principal_id: str, tool: str, key: str
    ) -> IdempotencyRecord | None:
        item = self._get(f"IDEM#{namespace}#{principal_id}", f"{tool}#{key}")
        return _idempotency_record(item) if item else None

    def release_idempotency(self, record: IdempotencyRecord) -> None:
        # Someone else's claim by now, or already gone: then nothing of ours is left to release.
        with contextlib.suppress(ConditionFailed):
            self._call(
                self.client.delete_item,
                TableName=self.table,
                Key=idem_key(record),
                ConditionExpression="#st = :pending AND #tok = :tok",
                ExpressionAttributeNames={"#st": "status", "#tok": "token"},
                ExpressionAttributeValues={
                    ":pending": attr_s("pending"),
                    ":tok": attr_s(record.token),
                },
            )
