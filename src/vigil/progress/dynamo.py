"""Progress reports on DynamoDB.

A reporter's latest report is ``NS#<ns>`` / ``PROGRESS#<principal>``; a scope's latest sits in
the dead-man switch's partition (``NS#<ns>#SW#<scope>`` / ``PROGRESS``), beside the switch and
its deaths, so a successor reading the scope finds it under the same key. Both carry
``reported_at`` (epoch milliseconds) at the top level: a write goes through only if it is not
older than the report it replaces, so the latest report wins whatever order writes land in.
"""

from __future__ import annotations

from typing import Any

from vigil.kit.dynamo import DynamoBase, DynamoWrite, attr_n, attr_s, epoch_ms
from vigil.progress.records import ProgressReport
from vigil.progress.store import ProgressStore


def _principal_key(namespace: str, principal_id: str) -> tuple[str, str]:
    return f"NS#{namespace}", f"PROGRESS#{principal_id}"


def _scope_key(namespace: str, scope: str) -> tuple[str, str]:
    return f"NS#{namespace}#SW#{scope}", "PROGRESS"


class DynamoProgress(DynamoBase, ProgressStore):
    def _item(self, key: tuple[str, str], report: ProgressReport, doc: str) -> dict[str, Any]:
        pk, sk = key
        return {
            "Put": {
                "TableName": self.table,
                "Item": {
                    "pk": attr_s(pk),
                    "sk": attr_s(sk),
                    "reported_at": attr_n(epoch_ms(report.reported_at)),
                    "doc": attr_s(doc),
                },
                "ConditionExpression": "attribute_not_exists(pk) OR reported_at <= :at",
                "ExpressionAttributeValues": {":at": attr_n(epoch_ms(report.reported_at))},
            }
        }

    def save_progress(self, report: ProgressReport, for_scope: bool) -> DynamoWrite:
        doc = report.model_dump_json()
        writes = [self._item(_principal_key(report.namespace, report.reported_by), report, doc)]
        if for_scope and report.scope is not None:
            writes.append(self._item(_scope_key(report.namespace, report.scope), report, doc))
        return DynamoWrite(writes)

    def _read(self, key: tuple[str, str]) -> ProgressReport | None:
        item = self._get(*key)
        return ProgressReport.model_validate_json(item["doc"]["S"]) if item else None

    def latest_progress(self, namespace: str, principal_id: str) -> ProgressReport | None:
        return self._read(_principal_key(namespace, principal_id))

    def scope_progress(self, namespace: str, scope: str) -> ProgressReport | None:
        return self._read(_scope_key(namespace, scope))
