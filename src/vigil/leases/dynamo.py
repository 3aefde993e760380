"""Leases on DynamoDB.

The lease is one item (``NS#<ns>`` / ``LEASE#<resource>``). While it is held it carries the
holder index keys (``gsi1pk``/``gsi1sk``) and, if it has a scope, the top-level ``scope``; a
held, scoped lease also has a copy in its scope's partition (``NS#<ns>#SCOPE#<scope>`` /
``LEASE#<resource>``), written or deleted in the same transaction as the lease item, so that
reading a scope's leases is one consistent Query.

The scope sits in a partition key of its own rather than in a sort key: free text of up to
200 characters, with a resource beside it, could pass the 1024-byte sort key limit, and a
partition key needs no escaping because the namespace before it contains no ``#``.
"""

from __future__ import annotations

from typing import Any

from vigil.kit.dynamo import DynamoBase, DynamoWrite, attr_n, attr_s
from vigil.leases.records import Lease
from vigil.leases.store import LeaseStore, scope_counts

_PREFIX = "LEASE#"
# The scope a lease version read lately is indexed under, by (namespace, resource, version),
# so that a write following its read knows which scope copy to move or delete without reading
# again. A batch of releases follows a page of reads, hence more than one; bounded, since an
# adapter lives as long as its process.
_SEEN_AT_MOST = 256


def _lease_key(namespace: str, resource: str) -> dict[str, Any]:
    return {"pk": attr_s(f"NS#{namespace}"), "sk": attr_s(_PREFIX + resource)}


def _scope_key(namespace: str, scope: str, resource: str) -> dict[str, Any]:
    return {"pk": attr_s(f"NS#{namespace}#SCOPE#{scope}"), "sk": attr_s(_PREFIX + resource)}


def _indexed_scope(lease: Lease) -> str | None:
    return lease.scope if lease.state == "held" else None


class DynamoLeases(DynamoBase, LeaseStore):
    def __init__(self, client: Any, table_name: str) -> None:
        super().__init__(client, table_name)
        self._seen_scopes: dict[tuple[str, str, int], str | None] = {}

    def _seen(self, lease: Lease) -> Lease:
        if len(self._seen_scopes) >= _SEEN_AT_MOST:
            self._seen_scopes.clear()
        self._seen_scopes[(lease.namespace, lease.resource, lease.version)] = _indexed_scope(lease)
        return lease

    def get_lease(self, namespace: str, resource: str) -> Lease | None:
        key = _lease_key(namespace, resource)
        item = self._get(key["pk"]["S"], key["sk"]["S"])
        return self._seen(Lease.model_validate_json(item["doc"]["S"])) if item else None

    def _previous_scope(self, lease: Lease, expected_version: int) -> str | None:
        key = (lease.namespace, lease.resource, expected_version)
        if key in self._seen_scopes:
            return self._seen_scopes[key]
        stored = self.get_lease(lease.namespace, lease.resource)
        return _indexed_scope(stored) if stored else None

    def save_lease(
        self, lease: Lease, expected_version: int | None, scope_limit: int | None = None
    ) -> DynamoWrite:
        doc = attr_s(lease.model_dump_json())
        item: dict[str, Any] = {
            **_lease_key(lease.namespace, lease.resource),
            "version": attr_n(lease.version),
            "doc": doc,
        }
        scope = _indexed_scope(lease)
        if lease.state == "held":
            item["gsi1pk"] = attr_s(f"HOLDER#{lease.namespace}#{lease.holder}")
            item["gsi1sk"] = attr_s(_PREFIX + lease.resource)
        if scope is not None:
            item["scope"] = attr_s(scope)

        put: dict[str, Any] = {"TableName": self.table, "Item": item}
        previous: str | None = None
        if expected_version is None:
            put["ConditionExpression"] = "attribute_not_exists(pk)"
        else:
            # The scope copy to move is the one of the version we replace; checking the stored
            # scope too keeps the copies right even if that version was learnt from a stale read.
            previous = self._previous_scope(lease, expected_version)
            values = {":expected": attr_n(expected_version)}
            if previous is None:
                put["ConditionExpression"] = "#v = :expected AND attribute_not_exists(#scope)"
            else:
                put["ConditionExpression"] = "#v = :expected AND #scope = :previous"
                values[":previous"] = attr_s(previous)
            put["ExpressionAttributeNames"] = {"#v": "version", "#scope": "scope"}
            put["ExpressionAttributeValues"] = values

        writes: list[dict[str, Any]] = [{"Put": put}]
        if scope is not None:
            copy = {**_scope_key(lease.namespace, scope, lease.resource), "doc": doc}
            writes.append({"Put": {"TableName": self.table, "Item": copy}})
        if previous is not None and previous != scope:
            stale_copy = _scope_key(lease.namespace, previous, lease.resource)
            writes.append({"Delete": {"TableName": self.table, "Key": stale_copy}})
        return DynamoWrite(
            writes, counts=scope_counts(lease.namespace, previous, scope, scope_limit)
        )

    def scope_held(self, namespace: str, scope: str) -> int:
        return self.counter(f"NS#{namespace}#SCOPE#{scope}", "COUNT", "held")

    def scope_leases(
        self, namespace: str, scope: str, after: str | None = None, limit: int | None = None
    ) -> list[Lease]:
        pk = attr_s(f"NS#{namespace}#SCOPE#{scope}")
        request: dict[str, Any] = {
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": {":pk": pk, ":prefix": attr_s(_PREFIX)},
            "ConsistentRead": True,
        }
        if after is not None:
            request["ExclusiveStartKey"] = {"pk": pk, "sk": attr_s(_PREFIX + after)}
        if limit is not None:
            request["Limit"] = limit
        found: list[Lease] = []
        for page in self._pages(request):
            found += (self._seen(Lease.model_validate_json(i["doc"]["S"])) for i in page["Items"])
            if limit is not None and len(found) >= limit:
                break
        return found[:limit]

    def unscoped_leases_held_by(self, namespace: str, holder: str) -> int:
        request = {
            "IndexName": "gsi1",
            "KeyConditionExpression": "gsi1pk = :pk AND begins_with(gsi1sk, :prefix)",
            "FilterExpression": "attribute_not_exists(#scope)",
            "ExpressionAttributeNames": {"#scope": "scope"},
            "ExpressionAttributeValues": {
                ":pk": attr_s(f"HOLDER#{namespace}#{holder}"),
                ":prefix": attr_s(_PREFIX),
            },
            "Select": "COUNT",
        }
        return sum(int(page.get("Count", 0)) for page in self._pages(request))
