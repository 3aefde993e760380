"""DynamoDB's TTL, played from an index of what is about to expire.

Writes go through a DynamoDB front (in this process, in front of moto's DynamoDB, served here
without the runtime's signature check, as DynamoDB Local checks none) that marks them in the
index, as the runtime's front does; the sweep reads the same index file through a
connection of its own, as the runtime's does from another process. Time moves by a manual
clock, and the sweep's DynamoDB requests are counted where botocore makes them.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from moto.server import ThreadedMotoServer

from vigil.clock import ManualClock
from vigil.local.deployment import LocalDeployment
from vigil.local.dynamodb_front import DynamoDBFront, start_front
from vigil.local.expiry import INDEX_FILE, ExpiryIndex, Marks, Watched, expiry_marks, item_key
from vigil.local.expiry_sweep import ExpirySweeper
from vigil.local.pump import EventPump
from vigil.local.stack import LOCAL_ACCESS_KEY_ID, LOCAL_SECRET_ACCESS_KEY, AwsClients
from vigil.local.timetable import Timetable

TABLE = "VigilTable"


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    """The engine behind the front: the front signs what it forwards for the database's key id
    and its own host, which DynamoDB Local accepts unchecked and the runtime's moto would not."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@contextlib.contextmanager
def running_front(engine: str, index_path: Path) -> Iterator[DynamoDBFront]:
    """A front as the runtime starts one: it first releases what an earlier one held."""
    index = ExpiryIndex(index_path)
    index.recovered()
    front = DynamoDBFront(
        engine, "frontdatabase", {LOCAL_ACCESS_KEY_ID: LOCAL_SECRET_ACCESS_KEY}, expiry=index
    )
    front.start()
    try:
        yield front
    finally:
        front.stop()
        index.close()


def through(front: DynamoDBFront, moto_endpoint: str) -> Any:
    return AwsClients.local(moto_endpoint, dynamodb_endpoint_url=front.url).dynamodb


@contextlib.contextmanager
def sweeping(
    front: DynamoDBFront, moto_endpoint: str, index_path: Path, page_items: int = 1000
) -> Iterator[ExpirySweeper]:
    sweeper = ExpirySweeper(
        through(front, moto_endpoint), ExpiryIndex(index_path), page_items, scan_page_seconds=0
    )
    try:
        yield sweeper
    finally:
        sweeper.index.close()


def requests_of(client: Any) -> list[str]:
    made: list[str] = []
    client.meta.events.register("before-call.dynamodb", lambda model, **_: made.append(model.name))
    return made


@pytest.fixture
def index_path(tmp_path: Path) -> Path:
    return tmp_path / INDEX_FILE


@pytest.fixture
def table(deployment: LocalDeployment) -> str:
    assert deployment.tables[TABLE].ttl_attribute == "ttl"
    return deployment.tables[TABLE].name


@pytest.fixture
def front(moto_endpoint: str, index_path: Path) -> Iterator[DynamoDBFront]:
    with running_front(moto_endpoint, index_path) as front:
        yield front


@pytest.fixture
def ddb(front: DynamoDBFront, moto_endpoint: str) -> Any:
    return through(front, moto_endpoint)


@pytest.fixture
def sweeper(
    front: DynamoDBFront, moto_endpoint: str, index_path: Path, table: str, clock: ManualClock
) -> Iterator[ExpirySweeper]:
    with sweeping(front, moto_endpoint, index_path) as sweeper:
        sweeper.watch({table: "ttl"})
        sweeper.sweep(clock.now())  # the one scan of a table watched for the first time
        yield sweeper


@pytest.fixture
def now(clock: ManualClock) -> int:
    return int(clock.now().timestamp())


def key(name: str) -> dict[str, Any]:
    return {"pk": {"S": f"TTL#{name}"}, "sk": {"S": "X"}}


def put(ddb: Any, table: str, name: str, ttl: int) -> dict[str, Any]:
    ddb.put_item(TableName=table, Item={**key(name), "ttl": {"N": str(ttl)}})
    return key(name)


def ttl_of(ddb: Any, table: str, item: dict[str, Any]) -> int | None:
    found = ddb.get_item(TableName=table, Key=item, ConsistentRead=True).get("Item")
    return None if found is None else int(found["ttl"]["N"])


# ---------------------------------------------------------------- the sweep


def test_a_pass_with_10000_live_items_and_none_due_makes_no_request(
    sweeper: ExpirySweeper, ddb: Any, table: str, clock: ManualClock, now: int
) -> None:
    for first in range(0, 10_000, 25):
        ddb.batch_write_item(
            RequestItems={
                table: [
                    {"PutRequest": {"Item": {**key(f"live{i}"), "ttl": {"N": str(now + 3600)}}}}
                    for i in range(first, first + 25)
                ]
            }
        )
    made = requests_of(sweeper.dynamodb)
    clock.advance(60)

    sweeper.sweep(clock.now())

    assert made == []
    # Every one of them is known, for the pass that comes when they expire.
    assert len(sweeper.index.due(now + 3601, 20_000)) == 10_000


def test_a_due_item_is_deleted_on_the_sweeps_clock_and_a_live_one_kept(
    sweeper: ExpirySweeper, ddb: Any, table: str, clock: ManualClock, now: int
) -> None:
    expired = [put(ddb, table, f"old{i}", now + 10) for i in range(3)]
    young = put(ddb, table, "young", now + 3600)
    made = requests_of(sweeper.dynamodb)
    sweeper.sweep(clock.now())
    assert made == []  # nothing is due yet on the sweep's clock, whatever the wall says

    clock.advance(60)
    sweeper.sweep(clock.now())

    assert [ttl_of(ddb, table, item) for item in expired] == [None] * 3
    assert ttl_of(ddb, table, young) == now + 3600
    assert made == ["DeleteItem"] * 3


def test_an_item_whose_ttl_was_extended_after_it_was_indexed_is_not_deleted(
    sweeper: ExpirySweeper, ddb: Any, table: str, clock: ManualClock, now: int
) -> None:
    item = put(ddb, table, "extended", now + 10)
    ddb.update_item(
        TableName=table,
        Key=item,
        UpdateExpression="SET #ttl = :later",
        ExpressionAttributeNames={"#ttl": "ttl"},
        ExpressionAttributeValues={":later": {"N": str(now + 3600)}},
    )
    clock.advance(60)

    sweeper.sweep(clock.now())
    assert ttl_of(ddb, table, item) == now + 3600

    clock.advance(3600)
    sweeper.sweep(clock.now())
    assert ttl_of(ddb, table, item) is None


def test_a_rewrite_between_the_pass_choosing_an_item_and_deleting_it_is_kept(
    sweeper: ExpirySweeper, ddb: Any, table: str, clock: ManualClock, now: int
) -> None:
    item = put(ddb, table, "rewritten", now + 10)
    clock.advance(60)

    def rewrite(**_: Any) -> None:
        # Another writer gives the item a new life while the delete is on its way.
        put(ddb, table, "rewritten", now + 7200)

    sweeper.dynamodb.meta.events.register_first("before-call.dynamodb.DeleteItem", rewrite)
    sweeper.sweep(clock.now())
    sweeper.dynamodb.meta.events.unregister("before-call.dynamodb.DeleteItem", rewrite)
    assert ttl_of(ddb, table, item) == now + 7200

    made = requests_of(sweeper.dynamodb)
    sweeper.sweep(clock.now())  # the rewrite's mark brings the item back once
    clock.advance(3600)
    sweeper.sweep(clock.now())
    assert ttl_of(ddb, table, item) == now + 7200
    assert made == ["DeleteItem"]  # and then not before its new time
    clock.advance(3600)
    sweeper.sweep(clock.now())
    assert ttl_of(ddb, table, item) is None


def test_a_write_still_on_its_way_holds_its_item_back_from_the_sweep(
    sweeper: ExpirySweeper,
    front: DynamoDBFront,
    clients: AwsClients,
    table: str,
    clock: ManualClock,
    now: int,
) -> None:
    item = key("landing")
    marks = Marks([(table, item_key(item, ("pk", "sk")) or "", now - 1)])
    assert front.expiry is not None
    with front.expiry.writing(marks):
        sweeper.sweep(clock.now())  # marked, not yet in the engine: nothing to find yet
        clients.dynamodb.put_item(TableName=table, Item={**item, "ttl": {"N": str(now - 1)}})
    assert ttl_of(clients.dynamodb, table, item) == now - 1

    sweeper.sweep(clock.now())
    assert ttl_of(clients.dynamodb, table, item) is None


def test_the_pump_sweeps_on_its_pass(
    sweeper: ExpirySweeper,
    deployment: LocalDeployment,
    clients: AwsClients,
    ddb: Any,
    table: str,
    clock: ManualClock,
    now: int,
) -> None:
    handlers = {name: lambda event, context: None for name in deployment.functions}
    pump = EventPump(deployment, clients, handlers, clock, timetable=Timetable(), expiry=sweeper)
    item = put(ddb, table, "pumped", now + 10)
    clock.advance(60)

    pump.tick()

    assert ttl_of(ddb, table, item) is None


# ---------------------------------------------------------------- across restarts


def test_the_index_survives_a_restart(
    moto_endpoint: str, index_path: Path, table: str, clock: ManualClock, now: int
) -> None:
    with running_front(moto_endpoint, index_path) as front:
        with sweeping(front, moto_endpoint, index_path) as sweeper:
            sweeper.watch({table: "ttl"})
            sweeper.sweep(clock.now())
        item = put(through(front, moto_endpoint), table, "survivor", now + 10)
    clock.advance(60)

    with (
        running_front(moto_endpoint, index_path) as front,
        sweeping(front, moto_endpoint, index_path) as sweeper,
    ):
        sweeper.watch({table: "ttl"})
        made = requests_of(sweeper.dynamodb)
        sweeper.sweep(clock.now())

        assert made == ["DeleteItem"]  # from the index kept on disk: no scan
        assert ttl_of(through(front, moto_endpoint), table, item) is None


def test_a_lost_index_is_rebuilt_by_one_scan(
    moto_endpoint: str,
    clients: AwsClients,
    index_path: Path,
    table: str,
    clock: ManualClock,
    now: int,
) -> None:
    # Items from before the index: written straight to the engine, as by an older runtime.
    expired = put(clients.dynamodb, table, "before", now + 10)
    young = put(clients.dynamodb, table, "young", now + 3600)
    clock.advance(60)

    with (
        running_front(moto_endpoint, index_path) as front,
        sweeping(front, moto_endpoint, index_path, page_items=1) as sweeper,
    ):
        sweeper.watch({table: "ttl"})
        made = requests_of(sweeper.dynamodb)
        for _ in range(3):  # a page of one item a pass, for two items
            sweeper.sweep(clock.now())
        assert sweeper.index.scans_wanted() == []
        sweeper.sweep(clock.now())

    assert made.count("Scan") >= 2
    assert made.count("DeleteItem") == 1
    assert ttl_of(clients.dynamodb, table, expired) is None
    assert ttl_of(clients.dynamodb, table, young) == now + 3600


def test_a_write_a_killed_front_left_on_its_way_is_swept_after_a_restart(
    moto_endpoint: str,
    clients: AwsClients,
    tmp_path: Path,
    index_path: Path,
    table: str,
    clock: ManualClock,
    now: int,
) -> None:
    with (
        running_front(moto_endpoint, index_path) as front,
        sweeping(front, moto_endpoint, index_path) as sweeper,
    ):
        sweeper.watch({table: "ttl"})
        sweeper.sweep(clock.now())
    # An engine that takes a request and never answers: the front is killed meanwhile.
    engine = socket.create_server(("127.0.0.1", 0))
    child = start_front(
        f"http://127.0.0.1:{engine.getsockname()[1]}",
        "frontdatabase",
        {LOCAL_ACCESS_KEY_ID: LOCAL_SECRET_ACCESS_KEY},
        tmp_path,
        index_path,
    )
    writer = boto3.client(
        "dynamodb",
        endpoint_url=child.endpoint_url,
        region_name="us-east-1",
        aws_access_key_id=LOCAL_ACCESS_KEY_ID,
        aws_secret_access_key=LOCAL_SECRET_ACCESS_KEY,
        config=Config(retries={"total_max_attempts": 1}),
    )
    item = {**key("orphan"), "ttl": {"N": str(now + 10)}}

    def put_unanswered() -> None:
        with contextlib.suppress(Exception):
            writer.put_item(TableName=table, Item=item)

    write = threading.Thread(target=put_unanswered)
    write.start()
    engine.settimeout(30)
    connection, _ = engine.accept()
    connection.recv(65536)  # the write reached the engine: its mark was made before
    child.process.kill()
    child.stop()
    write.join()
    connection.close()
    engine.close()
    # The engine had taken it.
    clients.dynamodb.put_item(TableName=table, Item=item)
    clock.advance(60)

    with (
        running_front(moto_endpoint, index_path) as front,
        sweeping(front, moto_endpoint, index_path) as sweeper,
    ):
        sweeper.watch({table: "ttl"})
        sweeper.sweep(clock.now())

    assert ttl_of(clients.dynamodb, table, key("orphan")) is None


# ---------------------------------------------------------------- what a write marks

WATCHED = Watched("ttl", ("pk", "sk"))
KEY = {"pk": {"S": "a"}, "sk": {"S": "b"}}
KEY_NAME = item_key(KEY, ("pk", "sk"))


def update(expression: str, **extra: Any) -> dict[str, Any]:
    return {
        "TableName": "t",
        "Key": KEY,
        "UpdateExpression": expression,
        "ExpressionAttributeNames": {"#ttl": "ttl", "#n": "n"},
        "ExpressionAttributeValues": {":v": {"N": "1700000000.9"}, ":s": {"S": "soon"}},
        **extra,
    }


@pytest.mark.parametrize(
    ("operation", "request_", "expected"),
    [
        ("PutItem", {"TableName": "t", "Item": {**KEY, "ttl": {"N": "17"}}}, [17]),
        ("PutItem", {"TableName": "t", "Item": {**KEY, "ttl": {"S": "17"}}}, []),
        ("PutItem", {"TableName": "t", "Item": KEY}, []),
        ("PutItem", {"TableName": "other", "Item": {**KEY, "ttl": {"N": "17"}}}, []),
        ("UpdateItem", update("SET #ttl = :v"), [1700000000]),
        ("UpdateItem", update("ADD #n :v SET #ttl = :v"), [1700000000]),
        ("UpdateItem", update("set #n = :v, #ttl = :v REMOVE x"), [1700000000]),
        ("UpdateItem", update("SET #n = :v"), []),
        ("UpdateItem", update("SET #ttl = :s"), []),
        # Any other change to the TTL: look at the item at once.
        ("UpdateItem", update("SET #ttl = #ttl + :v"), [0]),
        ("UpdateItem", update("SET #ttl = if_not_exists(#ttl, :v)"), [0]),
        ("UpdateItem", update("SET #n = #ttl"), [0]),
        ("UpdateItem", update("REMOVE #ttl"), [0]),
        ("UpdateItem", update("ADD #ttl :v"), [0]),
        ("UpdateItem", {"TableName": "t", "Key": KEY, "AttributeUpdates": {"ttl": {}}}, [0]),
        (
            "BatchWriteItem",
            {
                "RequestItems": {
                    "t": [
                        {"PutRequest": {"Item": {**KEY, "ttl": {"N": "5"}}}},
                        {"DeleteRequest": {"Key": KEY}},
                    ]
                }
            },
            [5],
        ),
        (
            "TransactWriteItems",
            {
                "TransactItems": [
                    {"Put": {"TableName": "t", "Item": {**KEY, "ttl": {"N": "6"}}}},
                    {"Update": update("SET #ttl = :v")},
                    {"Delete": {"TableName": "t", "Key": KEY}},
                    {"ConditionCheck": {"TableName": "t", "Key": KEY}},
                ]
            },
            [6, 1700000000],
        ),
        ("DeleteItem", {"TableName": "t", "Key": KEY}, []),
    ],
)
def test_a_write_marks_the_ttl_it_gives_each_item(
    operation: str, request_: dict[str, Any], expected: list[int]
) -> None:
    watched = {"t": WATCHED}.get

    marks = expiry_marks(operation, request_, watched)

    assert marks.items == [("t", KEY_NAME, due) for due in expected]
    assert not marks.rescan


@pytest.mark.parametrize(
    ("operation", "request_", "rescan"),
    [
        ("ExecuteStatement", {"Statement": "UPDATE t SET ttl = 5 WHERE pk = 'a'"}, True),
        ("ExecuteStatement", {"Statement": " select * from t"}, False),
        ("BatchExecuteStatement", {"Statements": [{"Statement": "DELETE FROM t"}]}, True),
        ("ExecuteTransaction", {"TransactStatements": [{"Statement": "INSERT INTO t"}]}, True),
    ],
)
def test_a_partiql_write_asks_for_a_scan(
    operation: str, request_: dict[str, Any], rescan: bool
) -> None:
    assert expiry_marks(operation, request_, {"t": WATCHED}.get).rescan is rescan


def test_a_partiql_write_has_the_watched_tables_scanned_again(
    sweeper: ExpirySweeper, clients: AwsClients, ddb: Any, table: str, clock: ManualClock, now: int
) -> None:
    # Written where the front does not see it, then a PartiQL write the front cannot read.
    expired = put(clients.dynamodb, table, "unseen", now + 10)
    ddb.execute_statement(Statement=f"SELECT * FROM \"{table}\" WHERE pk = 'TTL#none'")
    assert sweeper.index.scans_wanted() == []
    ddb.execute_statement(Statement=f"DELETE FROM \"{table}\" WHERE pk = 'TTL#none' AND sk = 'X'")
    clock.advance(60)

    sweeper.sweep(clock.now())

    assert ttl_of(ddb, table, expired) is None
