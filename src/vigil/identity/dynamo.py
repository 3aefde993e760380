"""Namespaces and principals on DynamoDB, under the namespace's partition."""

from __future__ import annotations

from typing import Any

from vigil.identity.records import Namespace, Principal
from vigil.identity.store import IdentityStore
from vigil.kit.dynamo import DynamoBase, DynamoWrite, attr_n, attr_s
from vigil.kit.principals import KIND_PREFIX, Kind


def _principal_item(principal: Principal) -> dict[str, Any]:
    return {
        "pk": attr_s(f"NS#{principal.namespace}"),
        "sk": attr_s(f"PRINCIPAL#{principal.id}"),
        "version": attr_n(principal.version),
        "doc": attr_s(principal.model_dump_json()),
    }


class DynamoIdentity(DynamoBase, IdentityStore):
    def add_namespace(self, namespace: Namespace) -> DynamoWrite:
        item = {
            "pk": attr_s(f"NS#{namespace.name}"),
            "sk": attr_s("NAMESPACE"),
            "doc": attr_s(namespace.model_dump_json()),
        }
        return self._put(item, "attribute_not_exists(pk)")

    def get_namespace(self, name: str) -> Namespace | None:
        item = self._get(f"NS#{name}", "NAMESPACE")
        return Namespace.model_validate_json(item["doc"]["S"]) if item else None

    def get_principal(self, namespace: str, principal_id: str) -> Principal | None:
        item = self._get(f"NS#{namespace}", f"PRINCIPAL#{principal_id}")
        return Principal.model_validate_json(item["doc"]["S"]) if item else None

    def get_principals(self, namespace: str, principal_ids: list[str]) -> list[Principal]:
        keys = [
            {"pk": attr_s(f"NS#{namespace}"), "sk": attr_s(f"PRINCIPAL#{i}")}
            for i in sorted(set(principal_ids))
        ]
        return [Principal.model_validate_json(i["doc"]["S"]) for i in self._batch_get(keys)]

    def add_principal(self, principal: Principal) -> DynamoWrite:
        return self._put(_principal_item(principal), "attribute_not_exists(pk)")

    def save_principal(self, principal: Principal) -> DynamoWrite:
        return self._put(
            _principal_item(principal),
            "#v = :expected",
            ExpressionAttributeNames={"#v": "version"},
            ExpressionAttributeValues={":expected": attr_n(principal.version - 1)},
        )

    def list_principals(
        self, namespace: str, kind: Kind, start_after: str | None, limit: int
    ) -> list[Principal]:
        prefix = f"PRINCIPAL#{KIND_PREFIX[kind]}_"
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": {
                ":pk": attr_s(f"NS#{namespace}"),
                ":prefix": attr_s(prefix),
            },
            "Limit": limit,
        }
        if start_after is not None:
            request["ExclusiveStartKey"] = {
                "pk": attr_s(f"NS#{namespace}"),
                "sk": attr_s(f"PRINCIPAL#{start_after}"),
            }
        items = self._call(self.client.query, **request).get("Items", [])
        return [Principal.model_validate_json(item["doc"]["S"]) for item in items]
