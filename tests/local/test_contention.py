"""DynamoDB under load, as the front plays it: the holds of transactions and writes, and the
partitions' token buckets, on a clock the tests move (nothing sleeps)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from vigil.local.contention import (
    CONFLICT_MESSAGE,
    Contention,
    ContentionSettings,
    TableKeys,
    TokenBucket,
    Verdict,
    item_size,
    write_units,
)
from vigil.local.runtime import parser

TABLE = "T"
KEYS = TableKeys("pk", "sk", {"gsi1": "gsi1pk"})


class Clock:
    def __init__(self) -> None:
        self.at = 1000.0

    def __call__(self) -> float:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def contention(clock: Clock) -> Contention:
    return Contention(ContentionSettings(), now=clock)


def schemas(table: str) -> TableKeys | None:
    return KEYS if table == TABLE else None


def key(pk: str, sk: str = "A") -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def put(pk: str, sk: str = "A", **extra: Any) -> dict[str, Any]:
    return {"TableName": TABLE, "Item": {**key(pk, sk), **extra}}


def transaction(*keys: dict[str, Any]) -> dict[str, Any]:
    return {"TransactItems": [{"Update": {"TableName": TABLE, "Key": k}} for k in keys]}


def refused(verdict: Verdict) -> dict[str, Any]:
    assert verdict.refusal is not None
    answer: dict[str, Any] = json.loads(verdict.refusal)
    return answer


def code(verdict: Verdict) -> str:
    return str(refused(verdict)["__type"]).rpartition("#")[2]


def test_a_bucket_fills_at_its_rate_up_to_its_capacity() -> None:
    bucket = TokenBucket(rate=50, capacity=50, now=0)
    bucket.pay(50)
    assert not bucket.can_pay(1, now=0)
    assert bucket.can_pay(1, now=0.02)
    assert not bucket.can_pay(2, now=0.02)
    assert bucket.can_pay(50, now=10)
    bucket.pay(50)
    assert not bucket.can_pay(1, now=10)


def test_an_item_larger_than_the_bucket_passes_a_full_bucket_and_leaves_it_in_debt() -> None:
    bucket = TokenBucket(rate=50, capacity=50, now=0)
    assert bucket.can_pay(400, now=0)
    bucket.pay(400)
    assert not bucket.can_pay(1, now=6)
    assert bucket.can_pay(1, now=7.02)


def test_a_put_costs_a_unit_per_kilobyte_of_its_item() -> None:
    small = put("p")["Item"]
    assert write_units(small) == 1
    large = put("p", blob={"S": "x" * 3000})["Item"]
    assert item_size(large) == len("pk") + 1 + len("sk") + 1 + len("blob") + 3000
    assert write_units(large) == 3


def test_a_transaction_overlapping_another_on_an_item_is_cancelled_for_that_item(
    contention: Contention,
) -> None:
    first = contention.admit("TransactWriteItems", transaction(key("a")), schemas)
    assert first.refusal is None

    second = contention.admit("TransactWriteItems", transaction(key("a"), key("b")), schemas)

    answer = refused(second)
    assert answer["__type"] == "com.amazonaws.dynamodb.v20120810#TransactionCanceledException"
    assert answer["message"] == (
        "Transaction cancelled, please refer cancellation reasons for specific reasons "
        "[TransactionConflict, None]"
    )
    assert answer["CancellationReasons"] == [
        {"Code": "TransactionConflict", "Message": CONFLICT_MESSAGE},
        {"Code": "None"},
    ]
    assert contention.stats() == {"TransactWriteItems": {"TransactionConflict": 1}}


def test_a_transaction_holds_its_items_for_the_hold_after_the_answer(
    contention: Contention, clock: Clock
) -> None:
    first = contention.admit("TransactWriteItems", transaction(key("a")), schemas)
    clock.advance(5)  # however long the engine took
    contention.release(first)

    clock.advance(0.019)
    assert code(contention.admit("TransactWriteItems", transaction(key("a")), schemas)) == (
        "TransactionCanceledException"
    )
    assert code(contention.admit("PutItem", put("a"), schemas)) == "TransactionConflictException"
    clock.advance(0.001)
    assert contention.admit("PutItem", put("a"), schemas).refusal is None
    assert contention.admit("TransactWriteItems", transaction(key("b")), schemas).refusal is None


def test_a_single_write_meeting_a_transaction_is_refused_and_other_items_are_not(
    contention: Contention,
) -> None:
    contention.admit("TransactWriteItems", transaction(key("a")), schemas)

    answer = refused(contention.admit("UpdateItem", {"TableName": TABLE, "Key": key("a")}, schemas))

    assert answer == {
        "__type": "com.amazonaws.dynamodb.v20120810#TransactionConflictException",
        "message": CONFLICT_MESSAGE,
    }
    assert contention.admit("PutItem", put("a", "B"), schemas).refusal is None
    assert (
        contention.admit("GetItem", {"TableName": TABLE, "Key": key("a")}, schemas).refusal is None
    )


def test_a_transaction_meeting_a_write_on_its_way_is_cancelled_until_the_write_is_answered(
    contention: Contention,
) -> None:
    write = contention.admit("DeleteItem", {"TableName": TABLE, "Key": key("a")}, schemas)
    # Two single writes on one item do not conflict.
    other = contention.admit("PutItem", put("a"), schemas)
    assert other.refusal is None
    gets = {"TransactItems": [{"Get": {"TableName": TABLE, "Key": key("a")}}]}

    assert refused(contention.admit("TransactWriteItems", transaction(key("a")), schemas))
    assert refused(contention.admit("TransactGetItems", gets, schemas))["CancellationReasons"] == [
        {"Code": "TransactionConflict", "Message": CONFLICT_MESSAGE}
    ]
    contention.release(write)
    contention.release(other)
    assert contention.admit("TransactWriteItems", transaction(key("a")), schemas).refusal is None


def test_a_partition_takes_a_twentieth_of_dynamodbs_write_rate(
    contention: Contention, clock: Clock
) -> None:
    for n in range(50):
        assert contention.admit("PutItem", put("p", f"s{n}"), schemas).refusal is None

    throttled = refused(contention.admit("PutItem", put("p", "one more"), schemas))

    assert throttled["__type"].endswith("#ProvisionedThroughputExceededException")
    assert throttled["message"].startswith("Throughput exceeds the current capacity")
    assert contention.admit("PutItem", put("another partition"), schemas).refusal is None
    clock.advance(1 / 50)
    assert (
        contention.admit("UpdateItem", {"TableName": TABLE, "Key": key("p")}, schemas).refusal
        is None
    )
    assert contention.admit("PutItem", put("p"), schemas).refusal is not None
    assert contention.stats() == {"PutItem": {"ProvisionedThroughputExceededException": 2}}


def test_a_transaction_costs_two_units_an_item_and_is_cancelled_where_its_partition_runs_out(
    contention: Contention,
) -> None:
    for n in range(24):
        assert (
            contention.admit("TransactWriteItems", transaction(key("p", f"s{n}")), schemas).refusal
            is None
        )

    verdict = contention.admit(
        "TransactWriteItems", transaction(key("q"), key("p", "x"), key("p", "y")), schemas
    )

    assert [r["Code"] for r in refused(verdict)["CancellationReasons"]] == [
        "None",
        "None",
        "ThrottlingError",
    ]
    assert contention.stats() == {"TransactWriteItems": {"ThrottlingError": 1}}
    # Nothing of a cancelled transaction was paid for: one more unit-pair fits.
    assert (
        contention.admit("TransactWriteItems", transaction(key("p", "x")), schemas).refusal is None
    )


def test_reads_pay_by_consistency(contention: Contention) -> None:
    strong = {"TableName": TABLE, "Key": key("p"), "ConsistentRead": True}
    for _ in range(150):
        assert contention.admit("GetItem", strong, schemas).refusal is None
    assert code(contention.admit("GetItem", strong, schemas)) == (
        "ProvisionedThroughputExceededException"
    )
    eventual = {"TableName": TABLE, "Key": key("e")}
    for _ in range(300):
        assert contention.admit("GetItem", eventual, schemas).refusal is None
    assert contention.admit("GetItem", eventual, schemas).refusal is not None


def test_a_query_pays_where_its_key_condition_points(contention: Contention) -> None:
    def query(value: str, **extra: Any) -> dict[str, Any]:
        return {
            "TableName": TABLE,
            "KeyConditionExpression": "#k = :v AND begins_with(sk, :s)",
            "ExpressionAttributeNames": {"#k": "pk"},
            "ExpressionAttributeValues": {":v": {"S": value}, ":s": {"S": "x"}},
            "ConsistentRead": True,
            **extra,
        }

    for _ in range(150):
        assert contention.admit("Query", query("p"), schemas).refusal is None
    assert contention.admit("Query", query("p"), schemas).refusal is not None
    assert (
        contention.admit(
            "GetItem", {"TableName": TABLE, "Key": key("p"), "ConsistentRead": True}, schemas
        ).refusal
        is not None
    )
    on_index = query("p", IndexName="gsi1", ExpressionAttributeNames={"#k": "gsi1pk"})
    del on_index["ConsistentRead"]
    assert contention.admit("Query", on_index, schemas).refusal is None


def test_a_batch_leaves_out_what_its_partitions_cannot_pay_for(contention: Contention) -> None:
    for n in range(49):
        contention.admit("PutItem", put("p", f"s{n}"), schemas)
    entries = [{"PutRequest": put("p", s)} for s in ("x", "y")]
    entries += [{"DeleteRequest": {"Key": key("q")}}]
    request = {"RequestItems": {TABLE: entries}, "ReturnConsumedCapacity": "NONE"}

    verdict = contention.admit("BatchWriteItem", request, schemas)

    assert verdict.body is not None
    forwarded = json.loads(verdict.body)
    assert forwarded["RequestItems"] == {TABLE: [entries[0], entries[2]]}
    assert forwarded["ReturnConsumedCapacity"] == "NONE"
    engine_answer = json.dumps({"UnprocessedItems": {}}).encode()
    assert json.loads(contention.answered(verdict, 200, engine_answer)) == {
        "UnprocessedItems": {TABLE: [entries[1]]}
    }
    nothing_done = contention.admit(
        "BatchWriteItem", {"RequestItems": {TABLE: [entries[1]]}}, schemas
    )
    assert code(nothing_done) == "ProvisionedThroughputExceededException"
    assert contention.stats() == {
        "BatchWriteItem": {"ProvisionedThroughputExceededException": 1, "UnprocessedItems": 1}
    }


def test_a_batch_get_returns_the_keys_it_could_not_read_as_unprocessed(
    contention: Contention,
) -> None:
    for _ in range(300):
        contention.admit("GetItem", {"TableName": TABLE, "Key": key("p")}, schemas)
    asked = {TABLE: {"Keys": [key("p"), key("q")], "ProjectionExpression": "pk"}}

    verdict = contention.admit("BatchGetItem", {"RequestItems": asked}, schemas)

    assert verdict.body is not None
    assert json.loads(verdict.body)["RequestItems"] == {
        TABLE: {"Keys": [key("q")], "ProjectionExpression": "pk"}
    }
    answer = json.loads(contention.answered(verdict, 200, b'{"Responses": {"T": []}}'))
    assert answer["UnprocessedKeys"] == {TABLE: {"Keys": [key("p")], "ProjectionExpression": "pk"}}


def test_what_the_front_cannot_read_goes_to_the_engine_untouched(contention: Contention) -> None:
    assert contention.admit("PutItem", {"TableName": "unknown", "Item": {}}, schemas) == Verdict()
    assert contention.admit("PutItem", {"TableName": TABLE, "Item": {}}, schemas) == Verdict()
    assert contention.admit("Scan", {"TableName": TABLE}, schemas) == Verdict()
    assert contention.admit("TransactWriteItems", {"TransactItems": "x"}, schemas) == Verdict()


def test_contention_is_off_unless_asked_for() -> None:
    assert parser().parse_args([]).contention is False
    assert parser().parse_args(["--contention"]).contention is True
