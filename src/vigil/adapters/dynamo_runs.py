"""Runs on DynamoDB: one item per run (``NS#<ns>#RUN#<run id>`` / ``RUN``), its version at the
top level for the conditions and the rest as a JSON document (its result included, up to
16 KiB, so the item stays far below DynamoDB's 400 KB).
"""

from __future__ import annotations

from typing import Any

from vigil.adapters.dynamo_base import DynamoBase, attr_n, attr_s
from vigil.domain.idempotency import IdempotencyRecord
from vigil.domain.runs import Run
from vigil.ports.runs import RunPort

_SK = "RUN"


def _run_pk(namespace: str, run_id: str) -> str:
    return f"NS#{namespace}#RUN#{run_id}"


class DynamoRuns(DynamoBase, RunPort):
    def get_run(self, namespace: str, run_id: str) -> Run | None:
        item = self._get(_run_pk(namespace, run_id), _SK)
        return Run.model_validate_json(item["doc"]["S"]) if item else None

    def put_run(
        self, run: Run, expected_version: int | None, completes: IdempotencyRecord | None = None
    ) -> None:
        put: dict[str, Any] = {
            "TableName": self.table,
            "Item": {
                "pk": attr_s(_run_pk(run.namespace, run.run_id)),
                "sk": attr_s(_SK),
                "version": attr_n(run.version),
                "doc": attr_s(run.model_dump_json()),
            },
        }
        if expected_version is None:
            put["ConditionExpression"] = "attribute_not_exists(pk)"
        else:
            put["ConditionExpression"] = "version = :expected"
            put["ExpressionAttributeValues"] = {":expected": attr_n(expected_version)}
        self._transact(self._with_completion({"Put": put}, completes))
