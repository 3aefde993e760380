"""The audit trail on DynamoDB: one partition per namespace, ``NS#<ns>#AUDIT``, sorted by the
event's position (time, then id), so a page newest first is one query read backwards."""

from __future__ import annotations

from typing import Any

from vigil.audit.records import AuditEvent
from vigil.audit.store import AuditStore
from vigil.kit.dynamo import DynamoBase, DynamoWrite, attr_s


def _pk(namespace: str) -> str:
    return f"NS#{namespace}#AUDIT"


class DynamoAudit(DynamoBase, AuditStore):
    def add_audit_event(self, event: AuditEvent) -> DynamoWrite:
        item = {
            "pk": attr_s(_pk(event.namespace)),
            "sk": attr_s(event.position),
            "doc": attr_s(event.model_dump_json()),
        }
        return self._put(item, "attribute_not_exists(pk)")

    def audit_events(self, namespace: str, before: str | None, limit: int) -> list[AuditEvent]:
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": attr_s(_pk(namespace))},
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if before is not None:
            request["ExclusiveStartKey"] = {"pk": attr_s(_pk(namespace)), "sk": attr_s(before)}
        items = self._call(self.client.query, **request).get("Items", [])
        return [AuditEvent.model_validate_json(item["doc"]["S"]) for item in items]
