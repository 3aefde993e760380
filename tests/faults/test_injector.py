"""The injector itself: each fault fires at its call index only, as the exception botocore
would raise, and takes effect at AWS or not as its kind says."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from tests.faults.injector import KINDS, NO_RETRIES, VARIANTS, Crash, Fault, FaultInjector

ALL_FAULTS = [Fault(kind, variant) for kind in KINDS for variant in range(VARIANTS[kind])]


def _table(injector: FaultInjector) -> Any:
    client = injector.hook(boto3.client("dynamodb", region_name="us-east-1", config=NO_RETRIES))
    client.create_table(
        TableName="t",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return client


def _stored(client: Any, key: str) -> bool:
    return "Item" in client.get_item(TableName="t", Key={"pk": {"S": key}})


@pytest.mark.parametrize("fault", ALL_FAULTS, ids=str)
def test_a_fault_fires_at_its_index_only(aws: None, fault: Fault) -> None:
    injector = FaultInjector()
    client = _table(injector)
    injector.plan(1, fault)
    client.put_item(TableName="t", Item={"pk": {"S": "a"}})
    with pytest.raises((ClientError, ReadTimeoutError, Crash)) as raised:
        client.put_item(TableName="t", Item={"pk": {"S": "b"}})
    assert injector.fired is not None
    assert injector.calls == ["dynamodb.PutItem", "dynamodb.PutItem"]
    code = fault.error_code("dynamodb")
    if code is not None:
        error = raised.value
        assert isinstance(error, ClientError)
        assert error.response["Error"]["Code"] == code[0]
        assert error.response["ResponseMetadata"]["HTTPStatusCode"] == code[1]
    elif fault.kind == "timeout":
        assert isinstance(raised.value, ReadTimeoutError)
    if fault.kind == "crash":
        with pytest.raises(Crash):
            _stored(client, "b")
        injector.reset()
    assert _stored(client, "b") is fault.after_the_request
    assert _stored(client, "a")


def test_a_crash_fails_every_later_call_until_the_sandbox_restarts(aws: None) -> None:
    injector = FaultInjector()
    client = _table(injector)
    injector.plan(0, Fault("crash"))
    for _ in range(3):
        with pytest.raises(Crash):
            client.put_item(TableName="t", Item={"pk": {"S": "a"}})
    assert injector.dead
    injector.reset()
    assert _stored(client, "a")
