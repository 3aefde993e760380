"""The meter behind the cost tables and the burst model (scripts/costs.py) charges what DynamoDB
charges for a global secondary index: a write that changes an item's entry in an index costs
units on the index's partition, one that leaves it alone costs none there."""

from __future__ import annotations

from typing import Any

import boto3
from costs import Meter

TABLE = "metered"


def create_table() -> Any:
    client = boto3.client("dynamodb")
    keys = [("pk", "HASH"), ("sk", "RANGE")]
    client.create_table(
        TableName=TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": name, "AttributeType": "S"} for name in ("pk", "sk", "ipk", "isk")
        ],
        KeySchema=[{"AttributeName": n, "KeyType": t} for n, t in keys],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by_i",
                "KeySchema": [
                    {"AttributeName": "ipk", "KeyType": "HASH"},
                    {"AttributeName": "isk", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["shown"]},
            }
        ],
    )
    return client


def test_an_index_is_charged_where_and_only_when_its_entry_changes(aws: None) -> None:
    client = create_table()
    meter = Meter()
    meter.hook(client)
    key = {"pk": {"S": "p"}, "sk": {"S": "s"}}

    def charged(call: Any, **params: Any) -> dict[tuple[str, str], float]:
        meter.reset()
        call(TableName=TABLE, **params)
        return {where: units[0] for where, units in meter.items.items() if units[0]}

    def setting(attribute: str, value: str) -> dict[str, Any]:
        return {
            "Key": key,
            "UpdateExpression": f"SET {attribute} = :v",
            "ExpressionAttributeValues": {":v": {"S": value}},
        }

    # Not in the index: the table's item alone.
    put = {**key, "unshown": {"S": "x"}}
    assert charged(client.put_item, Item=put) == {("p", "s"): 1}
    # Given the index's keys: one entry put.
    added = "SET ipk = :i, isk = :s"
    values = {":i": {"S": "I"}, ":s": {"S": "1"}}
    update = {"Key": key, "UpdateExpression": added, "ExpressionAttributeValues": values}
    assert charged(client.update_item, **update) == {("p", "s"): 1, ("by_i:I", "1"): 1}
    # An attribute the index does not project: nothing there.
    assert charged(client.update_item, **setting("unshown", "y")) == {("p", "s"): 1}
    # One it projects: the entry rewritten in place.
    assert charged(client.update_item, **setting("shown", "z")) == {
        ("p", "s"): 1,
        ("by_i:I", "1"): 1,
    }
    # Its key changed: the old entry deleted and a new one put, in a transaction too (where
    # the table's item costs twice, and the index's entries do not).
    moved = setting("isk", "2")
    meter.reset()
    client.transact_write_items(TransactItems=[{"Update": {"TableName": TABLE, **moved}}])
    assert {w: u[0] for w, u in meter.items.items()} == {
        ("p", "s"): 2,
        ("by_i:I", "1"): 1,
        ("by_i:I", "2"): 1,
    }
    # Deleted: its entry goes too.
    assert charged(client.delete_item, Key=key) == {("p", "s"): 1, ("by_i:I", "2"): 1}
    assert meter.write_units == 2
