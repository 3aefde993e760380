"""The local table forgets expired items by itself, as DynamoDB's TTL does: idempotency records,
drafts and deliveries do not pile up while the runtime runs for days."""

from __future__ import annotations

import os
import time
from typing import Any

import boto3
import pytest

pytestmark = pytest.mark.e2e

GIVE_UP_SECONDS = 60.0


def test_an_item_past_its_ttl_leaves_the_table(runtime: Any) -> None:
    # The runtime's environment points DynamoDB at its DynamoDB Local, with its key.
    ddb = boto3.client("dynamodb")
    table = os.environ["TABLE_NAME"]
    now = int(time.time())
    expired = {"pk": {"S": "TTL#expired"}, "sk": {"S": "IDEMPOTENCY"}}
    alive = {"pk": {"S": "TTL#alive"}, "sk": {"S": "IDEMPOTENCY"}}
    ddb.put_item(TableName=table, Item={**expired, "ttl": {"N": str(now - 1)}})
    ddb.put_item(TableName=table, Item={**alive, "ttl": {"N": str(now + 3600)}})

    give_up = time.monotonic() + GIVE_UP_SECONDS
    while "Item" in ddb.get_item(TableName=table, Key=expired, ConsistentRead=True):
        assert time.monotonic() < give_up, "the expired item is still there"
        time.sleep(0.5)
    assert "Item" in ddb.get_item(TableName=table, Key=alive, ConsistentRead=True)
