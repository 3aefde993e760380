"""The DynamoDB front with contention on, seen from boto3 with retries off: what DynamoDB
refuses under load comes back as botocore parses DynamoDB's own refusals.

The engine behind the front is moto's DynamoDB (served here without a signature check, as
DynamoDB Local checks none): the front decides before the engine is asked.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from moto.server import ThreadedMotoServer

from vigil.local.contention import CONFLICT_MESSAGE, Contention, ContentionSettings
from vigil.local.dynamodb_front import DynamoDBFront, contention_stats, start_front
from vigil.local.expiry import INDEX_FILE
from vigil.local.stack import LOCAL_ACCESS_KEY_ID, LOCAL_SECRET_ACCESS_KEY

TABLE = "contended"
# Long enough that a request made right after a transaction always meets its hold.
HOLD_SECONDS = 30.0


@pytest.fixture(scope="module")
def engine() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def client(endpoint: str) -> Any:
    return boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=LOCAL_ACCESS_KEY_ID,
        aws_secret_access_key=LOCAL_SECRET_ACCESS_KEY,
        config=Config(retries={"total_max_attempts": 1}),
    )


def create_table(ddb: Any) -> None:
    ddb.create_table(
        TableName=TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
    )


@pytest.fixture
def front(engine: str) -> Iterator[DynamoDBFront]:
    front = DynamoDBFront(
        engine,
        "contentiondatabase",
        {LOCAL_ACCESS_KEY_ID: LOCAL_SECRET_ACCESS_KEY},
        contention=Contention(ContentionSettings(hold_seconds=HOLD_SECONDS)),
    )
    front.start()
    ddb = client(front.url)
    create_table(ddb)
    yield front
    ddb.delete_table(TableName=TABLE)
    front.stop()


def key(pk: str, sk: str = "A") -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def bump(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "Update": {
            "TableName": TABLE,
            "Key": item,
            "UpdateExpression": "ADD n :one",
            "ExpressionAttributeValues": {":one": {"N": "1"}},
        }
    }


def burst(ddb: Any, pk: str) -> tuple[int, ClientError]:
    """Writes to one partition as fast as it can until refused: how many it wrote, and why not
    one more."""
    for written in range(1000):
        try:
            ddb.put_item(TableName=TABLE, Item=key(pk, f"{written:04}"))
        except ClientError as error:
            return written, error
    raise AssertionError("1,000 writes to one partition and none refused")


def test_a_transaction_overlapping_another_is_cancelled_as_botocore_parses_it(
    front: DynamoDBFront,
) -> None:
    ddb = client(front.url)
    ddb.transact_write_items(TransactItems=[bump(key("a"))])

    with pytest.raises(ClientError) as raised:
        ddb.transact_write_items(TransactItems=[bump(key("a")), bump(key("b"))])

    error = raised.value
    assert isinstance(error, ddb.exceptions.TransactionCanceledException)
    assert error.response["Error"]["Message"] == (
        "Transaction cancelled, please refer cancellation reasons for specific reasons "
        "[TransactionConflict, None]"
    )
    assert error.response["CancellationReasons"] == [
        {"Code": "TransactionConflict", "Message": CONFLICT_MESSAGE},
        {"Code": "None"},
    ]
    assert error.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    # Nothing of the cancelled transaction was written.
    assert "Item" not in ddb.get_item(TableName=TABLE, Key=key("b"))
    assert ddb.get_item(TableName=TABLE, Key=key("a"))["Item"]["n"] == {"N": "1"}


def test_a_put_during_a_transactions_hold_meets_a_conflict(front: DynamoDBFront) -> None:
    ddb = client(front.url)
    ddb.transact_write_items(TransactItems=[bump(key("a"))])

    with pytest.raises(ddb.exceptions.TransactionConflictException):
        ddb.put_item(TableName=TABLE, Item=key("a"))

    ddb.put_item(TableName=TABLE, Item=key("a", "another item"))
    assert front.contention is not None
    assert front.contention.stats() == {"PutItem": {"TransactionConflictException": 1}}


def test_a_burst_of_writes_to_one_partition_is_throttled(front: DynamoDBFront) -> None:
    ddb = client(front.url)
    written, error = burst(ddb, "hot")

    assert isinstance(error, ddb.exceptions.ProvisionedThroughputExceededException)
    # 50 units of burst, refilling at 50 a second while the burst went on.
    assert written >= 50
    ddb.put_item(TableName=TABLE, Item=key("cold"))
    counted = ddb.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "hot"}},
        Select="COUNT",
    )
    assert counted["Count"] == written
    assert contention_stats(front.url) == {"PutItem": {"ProvisionedThroughputExceededException": 1}}


def test_the_front_the_runtime_starts_plays_contention_and_logs_what_it_refused(
    engine: str, tmp_path: Path
) -> None:
    child = start_front(
        engine,
        "contentionchild",
        {LOCAL_ACCESS_KEY_ID: LOCAL_SECRET_ACCESS_KEY},
        tmp_path,
        tmp_path / INDEX_FILE,
        contention=ContentionSettings(),
    )
    try:
        ddb = client(child.endpoint_url)
        create_table(ddb)
        _, error = burst(ddb, "hot")
        assert error.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
        assert contention_stats(child.endpoint_url) == {
            "PutItem": {"ProvisionedThroughputExceededException": 1}
        }
        ddb.delete_table(TableName=TABLE)
    finally:
        child.stop()
    lines = child.log_path.read_text().splitlines()
    assert lines[0].startswith("contention on: 50 WCU/s and 150 RCU/s a partition")
    assert json.loads(lines[-1]) == {
        "event": "contention refused",
        "final": True,
        "refused": {"PutItem": {"ProvisionedThroughputExceededException": 1}},
    }


def test_without_contention_the_front_serves_no_counts(engine: str) -> None:
    front = DynamoDBFront(engine, "plain", {LOCAL_ACCESS_KEY_ID: LOCAL_SECRET_ACCESS_KEY})
    front.start()
    try:
        with pytest.raises(RuntimeError, match="no contention"):
            contention_stats(front.url)
    finally:
        front.stop()
