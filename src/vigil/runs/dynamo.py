"""Runs on DynamoDB: one item per run (``NS#<ns>#RUN#<run id>`` / ``RUN``), its version at the
top level for the conditions and the rest as a JSON document (its result included, up to
16 KiB, so the item stays far below DynamoDB's 400 KB).
"""

from __future__ import annotations

from vigil.kit.dynamo import DynamoBase, DynamoWrite, attr_n, attr_s
from vigil.runs.records import Run
from vigil.runs.store import RunStore

_SK = "RUN"


def _run_pk(namespace: str, run_id: str) -> str:
    return f"NS#{namespace}#RUN#{run_id}"


class DynamoRuns(DynamoBase, RunStore):
    def get_run(self, namespace: str, run_id: str) -> Run | None:
        item = self._get(_run_pk(namespace, run_id), _SK)
        return Run.model_validate_json(item["doc"]["S"]) if item else None

    def save_run(self, run: Run, expected_version: int | None) -> DynamoWrite:
        item = {
            "pk": attr_s(_run_pk(run.namespace, run.run_id)),
            "sk": attr_s(_SK),
            "version": attr_n(run.version),
            "doc": attr_s(run.model_dump_json()),
        }
        if expected_version is None:
            return self._put(item, "attribute_not_exists(pk)")
        return self._put(
            item,
            "version = :expected",
            ExpressionAttributeValues={":expected": attr_n(expected_version)},
        )
