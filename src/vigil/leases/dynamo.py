"""Leases on DynamoDB.

A lease is one item in a partition of its own (``NS#<ns>#LEASE#<resource>`` / ``LEASE``), so
that the writes of a namespace's leases (grants, renewals, releases, and the thousands a burst
of deaths releases) spread over a partition per resource instead of all landing on the
namespace's, which DynamoDB would hold to 1,000 write units a second. The key is at most 873
bytes, well within the 2,048 of a partition key: ``NS#``, a namespace of at most 63 ASCII
characters, ``#LEASE#`` and a resource of at most 200 characters in NFC, each at most 4 bytes
of UTF-8. The namespace holds no ``#``, so no other record's key reads like a lease's.

While it is held the lease carries, if it has a scope, the top-level ``scope``, and if it has
none, the holder index keys (``gsi1pk``/``gsi1sk``): the index serves only the count of a
holder's unscoped leases that a death reports, and a burst of one holder's deaths, releasing
its scoped leases by the thousand, writes nothing to the holder's partition of the index. (A
scoped lease stored before carries the keys until its next write; the count filters it out
by its ``scope``.) A held, scoped lease also has a copy in its scope's partition
(``NS#<ns>#SCOPE#<scope>`` / ``LEASE#<resource>``), written or deleted in the same transaction
as the lease item, so that reading a scope's leases is one consistent Query. A copy written
since leases moved says so (``own_partition``).

The scope sits in a partition key of its own rather than in a sort key: free text of up to
200 characters, with a resource beside it, could pass the 1024-byte sort key limit, and a
partition key needs no escaping because the namespace before it contains no ``#``.

Leases stored before the move sit at ``NS#<ns>`` / ``LEASE#<resource>``. A read that finds no
lease at the key reads there too, and the first write of such a lease moves it, in one
transaction conditional on the version read at the old key and on nothing being at the new
one; a lease granted where none was read checks that the old key holds nothing, so a stored
generation is never shadowed by a new first one. The move leaves at the old key a marker with
no document (gone by TTL a day later), not nothing: a process still running the code from before
the move, during a deploy, then fails on it instead of finding no lease and granting the
resource again from generation 1. ``vigil backfill-indexes`` moves the rest (``move_lease``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vigil.kit.dynamo import DynamoBase, DynamoWrite, attr_n, attr_s
from vigil.kit.uow import ConditionFailed
from vigil.leases.records import Lease
from vigil.leases.store import LeaseStore, scope_counts

_PREFIX = "LEASE#"
# The lease versions read lately, by (namespace, resource, version): the scope each is indexed
# under and whether it sits at the old key, so that a write following its read knows which scope
# copy to move or delete and whether to move the lease, without reading again. A batch of
# releases follows a page of reads, hence more than one; bounded, since an adapter lives as
# long as its process.
_SEEN_AT_MOST = 256
# How long the marker a moved lease leaves at its old key lasts: far longer than a deploy's
# overlap of old and new code.
MOVED_MARKER_SECONDS = 86_400


def _lease_key(namespace: str, resource: str) -> dict[str, Any]:
    return {"pk": attr_s(f"NS#{namespace}#{_PREFIX}{resource}"), "sk": attr_s("LEASE")}


def _old_lease_key(namespace: str, resource: str) -> dict[str, Any]:
    """Where a lease was kept before leases left the namespace's partition."""
    return {"pk": attr_s(f"NS#{namespace}"), "sk": attr_s(_PREFIX + resource)}


def is_old_lease(item: dict[str, Any]) -> bool:
    """Whether a stored item is a lease at the old key (not the marker a move leaves)."""
    return (
        item["sk"]["S"].startswith(_PREFIX)
        and item["pk"]["S"].count("#") == 1
        and "doc" in item
        and "version" in item
    )


@dataclass(frozen=True)
class _Read:
    scope: str | None  # the scope the version read is indexed under
    old_key: bool  # read where leases were kept before the move


def _scope_key(namespace: str, scope: str, resource: str) -> dict[str, Any]:
    return {"pk": attr_s(f"NS#{namespace}#SCOPE#{scope}"), "sk": attr_s(_PREFIX + resource)}


def _indexed_scope(lease: Lease) -> str | None:
    return lease.scope if lease.state == "held" else None


def _marker_expiry(lease: Lease) -> int:
    """When the marker of a lease moved by this write goes: a day after the write (a grant's or
    a renewal's expiry is later than it, a release's time is it), in epoch seconds."""
    written = max(lease.acquired_at, lease.expires_at, lease.released_at or lease.acquired_at)
    return int(written.timestamp()) + MOVED_MARKER_SECONDS


class DynamoLeases(DynamoBase, LeaseStore):
    def __init__(self, client: Any, table_name: str) -> None:
        super().__init__(client, table_name)
        self._seen_reads: dict[tuple[str, str, int], _Read] = {}

    def _seen(self, lease: Lease, *, old_key: bool) -> Lease:
        if len(self._seen_reads) >= _SEEN_AT_MOST:
            self._seen_reads.clear()
        read = _Read(_indexed_scope(lease), old_key)
        self._seen_reads[(lease.namespace, lease.resource, lease.version)] = read
        return lease

    def _lease_item(self, namespace: str, resource: str) -> tuple[dict[str, Any] | None, bool]:
        """The lease's item, and whether it sits at the old key."""
        key = _lease_key(namespace, resource)
        item = self._get(key["pk"]["S"], key["sk"]["S"])
        if item is not None:
            return item, False
        old = _old_lease_key(namespace, resource)
        item = self._get(old["pk"]["S"], old["sk"]["S"])
        if item is None or "doc" in item:
            return item, item is not None
        # The marker of a move made between the two reads: the lease is at its key now.
        return self._get(key["pk"]["S"], key["sk"]["S"]), False

    def get_lease(self, namespace: str, resource: str) -> Lease | None:
        item, old_key = self._lease_item(namespace, resource)
        if item is None:
            return None
        return self._seen(Lease.model_validate_json(item["doc"]["S"]), old_key=old_key)

    def _previous_read(self, lease: Lease, expected_version: int) -> _Read:
        key = (lease.namespace, lease.resource, expected_version)
        if key in self._seen_reads:
            return self._seen_reads[key]
        item, old_key = self._lease_item(lease.namespace, lease.resource)
        if item is None:
            return _Read(None, old_key=False)
        return _Read(_indexed_scope(Lease.model_validate_json(item["doc"]["S"])), old_key)

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
        if lease.state == "held" and scope is None:
            item["gsi1pk"] = attr_s(f"HOLDER#{lease.namespace}#{lease.holder}")
            item["gsi1sk"] = attr_s(_PREFIX + lease.resource)
        if scope is not None:
            item["scope"] = attr_s(scope)

        put: dict[str, Any] = {"TableName": self.table, "Item": item}
        writes: list[dict[str, Any]] = [{"Put": put}]
        previous: str | None = None
        old_key = _old_lease_key(lease.namespace, lease.resource)
        if expected_version is None:
            put["ConditionExpression"] = "attribute_not_exists(pk)"
            # Nothing read, so nothing at the old key either: a lease stored there before the
            # move would otherwise be shadowed by this first generation.
            check = {"Key": old_key, "ConditionExpression": "attribute_not_exists(pk)"}
            writes.append({"ConditionCheck": {"TableName": self.table, **check}})
        else:
            # The scope copy to move is the one of the version we replace; checking the stored
            # scope too keeps the copies right even if that version was learnt from a stale read.
            read = self._previous_read(lease, expected_version)
            previous = read.scope
            replaced: dict[str, Any] = {
                "ExpressionAttributeNames": {"#v": "version", "#scope": "scope"},
                "ExpressionAttributeValues": {":expected": attr_n(expected_version)},
            }
            if previous is None:
                replaced["ConditionExpression"] = "#v = :expected AND attribute_not_exists(#scope)"
            else:
                replaced["ConditionExpression"] = "#v = :expected AND #scope = :previous"
                replaced["ExpressionAttributeValues"][":previous"] = attr_s(previous)
            if read.old_key:
                # The move: the lease at its key, where nothing may be yet, and the version read
                # replaced at the old key by the marker, in one transaction, so a concurrent
                # mover fails one condition or the other.
                put["ConditionExpression"] = "attribute_not_exists(pk)"
                marker = {**old_key, "ttl": attr_n(_marker_expiry(lease))}
                writes.append({"Put": {"TableName": self.table, "Item": marker, **replaced}})
            else:
                put.update(replaced)

        if scope is not None:
            copy = {
                **_scope_key(lease.namespace, scope, lease.resource),
                "doc": doc,
                "own_partition": {"BOOL": True},
            }
            writes.append({"Put": {"TableName": self.table, "Item": copy}})
        if previous is not None and previous != scope:
            stale_copy = _scope_key(lease.namespace, previous, lease.resource)
            writes.append({"Delete": {"TableName": self.table, "Key": stale_copy}})
        return DynamoWrite(
            writes, counts=scope_counts(lease.namespace, previous, scope, scope_limit)
        )

    def move_lease(self, item: dict[str, Any]) -> bool:
        """Moves a lease found at the old key (``is_old_lease``) to its own partition as it is,
        conditional on the version and scope found, as its next write would: one that changed
        or moved since is left to whoever changed it. Whether this moved it."""
        lease = Lease.model_validate_json(item["doc"]["S"])
        scope = item["scope"]["S"] if "scope" in item else None
        self._seen_reads[(lease.namespace, lease.resource, lease.version)] = _Read(scope, True)
        try:
            self.commit([self.save_lease(lease, lease.version)])
        except ConditionFailed:
            return False
        return True

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
            found += (
                self._seen(
                    Lease.model_validate_json(i["doc"]["S"]), old_key="own_partition" not in i
                )
                for i in page["Items"]
            )
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
