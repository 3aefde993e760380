"""What the store does with DynamoDB's refusals: a condition that failed is a lost race for the
caller to read again; an item or partition that was busy (a transaction conflict, a throttled
transaction) is the same request sent again after a jittered pause, a bounded number of times,
then ``throttled``; anything else ``unavailable``."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from vigil.errors import ErrorCode, VigilError
from vigil.kit.dynamo import Backoff, DynamoBase
from vigil.kit.uow import ConditionFailed


def _cancelled(*codes: str, in_message_only: bool = False) -> ClientError:
    message = f"Transaction cancelled, please refer cancellation reasons [{', '.join(codes)}]"
    response: dict[str, Any] = {
        "Error": {"Code": "TransactionCanceledException", "Message": message}
    }
    if not in_message_only:
        response["CancellationReasons"] = [{"Code": code} for code in codes]
    return ClientError(response, "TransactWriteItems")  # type: ignore[arg-type]


def _refused(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "refused"}}, "PutItem")  # type: ignore[arg-type]


class Operation:
    """Refuses its first sends with ``errors``, in turn, then answers."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.sends = 0

    def __call__(self, **request: Any) -> dict[str, Any]:
        self.sends += 1
        if self.errors:
            raise self.errors.pop(0)
        return {"sent": request}


@pytest.fixture
def pauses() -> list[float]:
    return []


@pytest.fixture
def store(pauses: list[float]) -> DynamoBase:
    """A store whose pauses are noted in ``pauses`` instead of waited, each the most its
    jitter allows."""
    store = DynamoBase(client=None, table_name="t")
    store.backoff = Backoff(sleep=pauses.append, draw=lambda: 1.0)
    return store


@pytest.mark.parametrize(
    "busy",
    [
        _cancelled("TransactionConflict", "None"),
        _cancelled("None", "ThrottlingError"),
        _cancelled("ProvisionedThroughputExceeded"),
        _cancelled("None", "TransactionConflict", in_message_only=True),
        _refused("TransactionConflictException"),
    ],
    ids=["conflict", "throttled", "over-rate", "moto's message", "single-item write"],
)
def test_a_busy_item_is_sent_again_after_a_pause(
    store: DynamoBase, pauses: list[float], busy: ClientError
) -> None:
    operation = Operation(busy, busy)
    assert store._call(operation, TableName="t", Key="k") == {
        "sent": {"TableName": "t", "Key": "k"}
    }
    assert operation.sends == 3
    # Full jitter: the draw (1.0 here) times a cap that doubles from 20 ms.
    assert pauses == [0.02, 0.04]


def test_the_pauses_grow_to_their_cap_and_stay_below_it() -> None:
    waited: list[float] = []
    backoff = Backoff(sleep=waited.append, draw=lambda: 1.0)
    for retry in range(7):
        backoff.pause(retry)
    assert waited == [0.02, 0.04, 0.08, 0.16, 0.32, 0.4, 0.4]
    halfway = Backoff(sleep=waited.append, draw=lambda: 0.5)
    assert halfway.pause(3) == 0.08


def test_a_conflict_that_outlasts_every_send_is_throttled(
    store: DynamoBase, pauses: list[float]
) -> None:
    attempts = store.backoff.attempts
    operation = Operation(*[_cancelled("TransactionConflict")] * attempts)
    with pytest.raises(VigilError) as raised:
        store._call(operation)
    assert raised.value.code is ErrorCode.THROTTLED
    assert raised.value.to_dict()["retryable"] is True
    assert operation.sends == attempts
    assert len(pauses) == attempts - 1


@pytest.mark.parametrize(
    "failed",
    [
        _refused("ConditionalCheckFailedException"),
        _cancelled("ConditionalCheckFailed", "None"),
        # A condition failed on one item while another was busy: the race is lost either way.
        _cancelled("TransactionConflict", "ConditionalCheckFailed"),
        _cancelled("None", "ConditionalCheckFailed", in_message_only=True),
    ],
)
def test_a_failed_condition_is_a_lost_race_sent_once(
    store: DynamoBase, failed: ClientError
) -> None:
    operation = Operation(failed)
    with pytest.raises(ConditionFailed):
        store._call(operation, TableName="t")
    assert operation.sends == 1


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (_cancelled("ValidationError", "None"), ErrorCode.UNAVAILABLE),
        (_refused("InternalServerError"), ErrorCode.UNAVAILABLE),
        (_refused("ProvisionedThroughputExceededException"), ErrorCode.THROTTLED),
    ],
)
def test_other_refusals_are_told_once(
    store: DynamoBase, error: ClientError, code: ErrorCode
) -> None:
    # Throttling of a single request is botocore's own to retry (its standard mode).
    operation = Operation(error)
    with pytest.raises(VigilError) as raised:
        store._call(operation)
    assert raised.value.code is code
    assert operation.sends == 1
