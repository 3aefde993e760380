"""The store on DynamoDB: one table, keys ``pk``/``sk``, conditional writes throughout.

Records are kept as a JSON document (``doc``) beside the few top-level attributes that
conditions and TTL need, so the code that reads them is the same pydantic validation that
the in-memory fake uses.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from vigil.domain.idempotency import IdempotencyRecord
from vigil.domain.identity import KIND_PREFIX, Kind, Namespace, Principal
from vigil.errors import ErrorCode, VigilError
from vigil.store import ConditionFailed, Store

T = TypeVar("T")
_THROTTLING = frozenset(
    {
        "ThrottlingException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "TransactionConflictException",
        "TransactionInProgressException",
    }
)


def epoch_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def _n(value: int) -> dict[str, str]:
    return {"N": str(value)}


def _aws_error(error: Exception) -> VigilError:
    """Never let AWS text reach a caller: only its retryability survives."""
    code = getattr(error, "response", {}).get("Error", {}).get("Code", "")
    if code in _THROTTLING:
        return VigilError(ErrorCode.THROTTLED, "the store is busy; retry with backoff")
    return VigilError(ErrorCode.UNAVAILABLE, "the store is temporarily unavailable; retry later")


def _is_condition_failure(error: Exception) -> bool:
    response = getattr(error, "response", {})
    code = response.get("Error", {}).get("Code", "")
    if code == "ConditionalCheckFailedException":
        return True
    if code == "TransactionCanceledException":
        reasons = response.get("CancellationReasons") or []
        codes = {r.get("Code") for r in reasons}
        if codes and codes <= {"ConditionalCheckFailed", "None", None}:
            return True
        # moto reports the reasons only in the message.
        return not codes and "ConditionalCheckFailed" in str(error)
    return False


class DynamoStore(Store):
    def __init__(self, client: Any, table_name: str) -> None:
        self.client = client
        self.table = table_name

    # -- plumbing -------------------------------------------------------------------------
    def _call(self, operation: Callable[..., T], **kwargs: Any) -> T:
        try:
            return operation(**kwargs)
        except Exception as error:
            if _is_condition_failure(error):
                raise ConditionFailed(str(kwargs.get("TableName", ""))) from None
            if hasattr(error, "response"):
                raise _aws_error(error) from None
            raise

    def _get(self, pk: str, sk: str) -> dict[str, Any] | None:
        response = self._call(
            self.client.get_item,
            TableName=self.table,
            Key={"pk": _s(pk), "sk": _s(sk)},
            ConsistentRead=True,
        )
        item: dict[str, Any] | None = response.get("Item")
        return item

    def _transact(self, writes: list[dict[str, Any]]) -> None:
        if len(writes) == 1:
            ((kind, request),) = writes[0].items()
            operation = {"Put": self.client.put_item, "Update": self.client.update_item}[kind]
            self._call(operation, **request)
        else:
            self._call(self.client.transact_write_items, TransactItems=writes)

    def _completion(self, record: IdempotencyRecord) -> dict[str, Any]:
        return {
            "Update": {
                "TableName": self.table,
                "Key": _idem_key(record),
                "UpdateExpression": "SET #st = :done, #res = :res",
                "ConditionExpression": "#st = :pending AND #tok = :tok",
                "ExpressionAttributeNames": {"#st": "status", "#res": "result", "#tok": "token"},
                "ExpressionAttributeValues": {
                    ":done": _s("completed"),
                    ":pending": _s("pending"),
                    ":res": _s(json.dumps(record.result, separators=(",", ":"))),
                    ":tok": _s(record.token),
                },
            }
        }

    def _with_completion(
        self, write: dict[str, Any], completes: IdempotencyRecord | None
    ) -> list[dict[str, Any]]:
        return [write] if completes is None else [write, self._completion(completes)]

    # -- namespaces -----------------------------------------------------------------------
    def create_namespace(self, namespace: Namespace) -> None:
        self._call(
            self.client.put_item,
            TableName=self.table,
            Item={
                "pk": _s(f"NS#{namespace.name}"),
                "sk": _s("NAMESPACE"),
                "doc": _s(namespace.model_dump_json()),
            },
            ConditionExpression="attribute_not_exists(pk)",
        )

    def get_namespace(self, name: str) -> Namespace | None:
        item = self._get(f"NS#{name}", "NAMESPACE")
        return Namespace.model_validate_json(item["doc"]["S"]) if item else None

    # -- principals -----------------------------------------------------------------------
    @staticmethod
    def _principal_item(principal: Principal) -> dict[str, Any]:
        return {
            "pk": _s(f"NS#{principal.namespace}"),
            "sk": _s(f"PRINCIPAL#{principal.id}"),
            "version": _n(principal.version),
            "doc": _s(principal.model_dump_json()),
        }

    def get_principal(self, namespace: str, principal_id: str) -> Principal | None:
        item = self._get(f"NS#{namespace}", f"PRINCIPAL#{principal_id}")
        return Principal.model_validate_json(item["doc"]["S"]) if item else None

    def create_principal(
        self, principal: Principal, completes: IdempotencyRecord | None = None
    ) -> None:
        put = {
            "Put": {
                "TableName": self.table,
                "Item": self._principal_item(principal),
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }
        self._transact(self._with_completion(put, completes))

    def update_principal(
        self, principal: Principal, completes: IdempotencyRecord | None = None
    ) -> None:
        put = {
            "Put": {
                "TableName": self.table,
                "Item": self._principal_item(principal),
                "ConditionExpression": "#v = :expected",
                "ExpressionAttributeNames": {"#v": "version"},
                "ExpressionAttributeValues": {":expected": _n(principal.version - 1)},
            }
        }
        self._transact(self._with_completion(put, completes))

    def list_principals(
        self, namespace: str, kind: Kind, start_after: str | None, limit: int
    ) -> list[Principal]:
        prefix = f"PRINCIPAL#{KIND_PREFIX[kind]}_"
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": {":pk": _s(f"NS#{namespace}"), ":prefix": _s(prefix)},
            "Limit": limit,
        }
        if start_after is not None:
            request["ExclusiveStartKey"] = {
                "pk": _s(f"NS#{namespace}"),
                "sk": _s(f"PRINCIPAL#{start_after}"),
            }
        items = self._call(self.client.query, **request).get("Items", [])
        return [Principal.model_validate_json(item["doc"]["S"]) for item in items]

    # -- idempotency ----------------------------------------------------------------------
    def claim_idempotency(
        self, record: IdempotencyRecord, now: datetime
    ) -> IdempotencyRecord | None:
        item = {
            **_idem_key(record),
            "status": _s(record.status),
            "token": _s(record.token),
            "fingerprint": _s(record.fingerprint),
            "locked_until": _n(epoch_ms(record.locked_until)),
            "expires_at": _n(epoch_ms(record.expires_at)),
            "ttl": _n(int(record.expires_at.timestamp())),
            "doc": _s(record.model_dump_json(exclude={"result"})),
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
                ExpressionAttributeValues={":now": _n(epoch_ms(now)), ":pending": _s("pending")},
            )
            return None
        except ConditionFailed:
            existing = self._get(item["pk"]["S"], item["sk"]["S"])
            if existing is None:  # expired and deleted between the two calls: claim again
                return self.claim_idempotency(record, now)
            stored = IdempotencyRecord.model_validate_json(existing["doc"]["S"])
            stored.status = existing["status"]["S"]
            stored.token = existing["token"]["S"]
            if "result" in existing:
                stored.result = json.loads(existing["result"]["S"])
            return stored

    def complete_idempotency(self, record: IdempotencyRecord) -> None:
        self._transact([self._completion(record)])

    def release_idempotency(self, record: IdempotencyRecord) -> None:
        # Someone else's claim by now, or already gone: then nothing of ours is left to release.
        with contextlib.suppress(ConditionFailed):
            self._call(
                self.client.delete_item,
                TableName=self.table,
                Key=_idem_key(record),
                ConditionExpression="#st = :pending AND #tok = :tok",
                ExpressionAttributeNames={"#st": "status", "#tok": "token"},
                ExpressionAttributeValues={":pending": _s("pending"), ":tok": _s(record.token)},
            )


def _idem_key(record: IdempotencyRecord) -> dict[str, Any]:
    return {
        "pk": _s(f"IDEM#{record.namespace}#{record.principal_id}"),
        "sk": _s(f"{record.tool}#{record.key}"),
    }
