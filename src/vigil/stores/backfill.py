"""`vigil backfill-indexes`: what records stored by an older version of Vigil lack, written in
one scan of the table. Each capability's adapter says what its own old records need; this
module finds them and counts what was written. Every write is conditional, so a run that meets
a record changed since leaves it to its own write, and running it again writes nothing."""

from __future__ import annotations

from typing import Any, NamedTuple

from vigil.kit.dynamo import attr_s
from vigil.leases.dynamo import is_old_lease
from vigil.stores.dynamo import DynamoStore
from vigil.switches.dynamo import is_old_death_row


class Backfilled(NamedTuple):
    """What ``backfill_indexes`` wrote: rows and shards, leases moved, principals copied."""

    switches_indexed: int
    deaths_indexed: int
    switches_sweepable: int
    leases_moved: int
    old_death_rows_removed: int
    principals_spread: int


def backfill_indexes(client: Any, table: str) -> Backfilled:
    """Writes what records stored before today's keys lack:

    - a switch's row of ``list_switches`` and, while it is armed, its sweep shard
      (``DynamoSwitches.index_old_switch``);
    - a death's keys in the deaths' index, and the deletion of that index's rows from before
      it was gsi1, which nothing reads (``index_death``, ``delete_old_death_row``);
    - each lease stored in its namespace's partition, moved to its own (``move_lease``:
      conditional on the version found, so a lease changed since is moved by its own write);
    - each principal's own copy, where it has none or an older one (``spread_principal``).

    Run once after the deploy that brought them (and after rolling back and forward again)."""
    store = DynamoStore(client, table)
    written = [0, 0, 0, 0, 0, 0]
    request: dict[str, Any] = {
        "TableName": table,
        # Only a scope's partition holds switches and deaths: an index row or a pause whose
        # sort key (a scope, a prefix) reads SWITCH or DEATH# is none of them. A lease at the
        # old key is told from a scope's copy of one by its version, from other rows whose sort
        # key is free text by its partition, the namespace's own (is_old_lease). An old row of
        # the deaths' index names a death and holds nothing else.
        "FilterExpression": (
            "(contains(pk, :scoped) AND (sk = :switch OR begins_with(sk, :death)))"
            " OR (begins_with(sk, :lease) AND attribute_exists(#version))"
            " OR (contains(pk, :deaths) AND attribute_exists(generation)"
            " AND attribute_not_exists(doc))"
            " OR (begins_with(pk, :namespace) AND begins_with(sk, :principal))"
        ),
        "ExpressionAttributeNames": {"#version": "version"},
        "ExpressionAttributeValues": {
            ":scoped": attr_s("#SW#"),
            ":switch": attr_s("SWITCH"),
            ":death": attr_s("DEATH#"),
            ":lease": attr_s("LEASE#"),
            ":deaths": attr_s("#DEATHS#"),
            ":namespace": attr_s("NS#"),
            ":principal": attr_s("PRINCIPAL#"),
        },
    }
    while True:
        response = store._call(client.scan, **request)
        for item in response.get("Items", []):
            sort_key = item["sk"]["S"]
            if sort_key.startswith("PRINCIPAL#"):
                written[5] += store.spread_principal(item)
            elif sort_key.startswith("LEASE#"):
                written[3] += is_old_lease(item) and store.move_lease(item)
            elif is_old_death_row(item):
                written[4] += store.delete_old_death_row(item)
            elif sort_key == "SWITCH":
                sweepable, indexed = store.index_old_switch(item)
                written[2] += sweepable
                written[0] += indexed
            elif "gsi1pk" not in item:
                written[1] += store.index_death(item)
        if "LastEvaluatedKey" not in response:
            return Backfilled(*written)
        request["ExclusiveStartKey"] = response["LastEvaluatedKey"]
