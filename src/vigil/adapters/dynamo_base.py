"""DynamoDB plumbing shared by every family's adapter: one table, keys ``pk``/``sk``,
conditional writes throughout.

Records are kept as a JSON document (``doc``) beside the few top-level attributes that
conditions and TTL need, so the code that reads them is the same pydantic validation that
the in-memory fake uses.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from vigil.adapters.aws_errors import error_code
from vigil.domain.idempotency import IdempotencyRecord
from vigil.errors import ErrorCode, VigilError
from vigil.store import ConditionFailed

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


def from_ms(value: dict[str, str]) -> datetime:
    return datetime.fromtimestamp(int(value["N"]) / 1000, UTC)


def attr_s(value: str) -> dict[str, str]:
    return {"S": value}


def attr_n(value: int) -> dict[str, str]:
    return {"N": str(value)}


def _aws_error(code: str) -> VigilError:
    """Never let AWS text reach a caller: only its retryability survives."""
    if code in _THROTTLING:
        return VigilError(ErrorCode.THROTTLED, "the store is busy; retry with backoff")
    return VigilError(ErrorCode.UNAVAILABLE, "the store is temporarily unavailable; retry later")


def _is_condition_failure(error: Exception, code: str) -> bool:
    response = getattr(error, "response", None) or {}
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


class DynamoBase:
    def __init__(self, client: Any, table_name: str) -> None:
        self.client = client
        self.table = table_name

    # -- plumbing -------------------------------------------------------------------------
    def _call(self, operation: Callable[..., T], **kwargs: Any) -> T:
        try:
            return operation(**kwargs)
        except Exception as error:
            code = error_code(error)
            if code is None:
                raise
            if _is_condition_failure(error, code):
                raise ConditionFailed(str(kwargs.get("TableName", ""))) from None
            raise _aws_error(code) from None

    def _get(self, pk: str, sk: str) -> dict[str, Any] | None:
        response = self._call(
            self.client.get_item,
            TableName=self.table,
            Key={"pk": attr_s(pk), "sk": attr_s(sk)},
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
                "Key": idem_key(record),
                "UpdateExpression": "SET #st = :done, #res = :res",
                "ConditionExpression": "#st = :pending AND #tok = :tok",
                "ExpressionAttributeNames": {"#st": "status", "#res": "result", "#tok": "token"},
                "ExpressionAttributeValues": {
                    ":done": attr_s("completed"),
                    ":pending": attr_s("pending"),
                    ":res": attr_s(json.dumps(record.result, separators=(",", ":"))),
                    ":tok": attr_s(record.token),
                },
            }
        }

    def _with_completion(
        self, write: dict[str, Any], completes: IdempotencyRecord | None
    ) -> list[dict[str, Any]]:
        return [write] if completes is None else [write, self._completion(completes)]


def idem_key(record: IdempotencyRecord) -> dict[str, Any]:
    return {
        "pk": attr_s(f"IDEM#{record.namespace}#{record.principal_id}"),
        "sk": attr_s(f"{record.tool}#{record.key}"),
    }
