"""The two candidate local DynamoDB engines side by side, as the table fills: DynamoDB Local (on
disk, as the local runtime runs it) and moto's DynamoDB (as the runtime ran it before: a server,
requests one at a time).

Usage: .venv/bin/python scripts/engines.py [--sizes 0,10000,100000] [--seconds 3]

Each engine runs in its own process, so its resident memory is its own. At each size (extra
items of about 350 bytes), from 8 threads: conditional UpdateItem calls/s, 3-item
TransactWriteItems calls/s (an update, a conditional put of an idempotency record, a counter),
and a Query on the sparse index. moto's transactions copy the whole table, so at a size where
they take more than the window, the figure is from however many finished (at least one).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from local_goals import rss_mb  # noqa: E402

THREADS = 8
PAD = "p" * 300

_MOTO = """
import logging, sys, time
logging.getLogger("werkzeug").setLevel(logging.WARNING)
from moto.server import ThreadedMotoServer
server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
print("%s:%s" % server.get_host_and_port(), flush=True)
sys.stdin.read()
"""


@contextmanager
def dynamodb_local() -> Iterator[tuple[str, int, str, threading.Lock | None]]:
    from vigil.local.dynamodb_local import database_key, start_dynamodb_local

    with tempfile.TemporaryDirectory(prefix="vigil-engine-") as directory:
        engine = start_dynamodb_local(Path(directory))
        try:
            yield engine.endpoint_url, engine.process.pid, database_key(Path(directory)), None
        finally:
            engine.stop()


@contextmanager
def moto() -> Iterator[tuple[str, int, str, threading.Lock | None]]:
    process = subprocess.Popen(
        [sys.executable, "-c", _MOTO], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    address = process.stdout.readline().strip()
    try:
        # The runtime served moto's DynamoDB one request at a time: unserialised, a transaction
        # fails when another request writes while it copies the table.
        yield f"http://{address}", process.pid, "local", threading.Lock()
    finally:
        process.kill()
        process.wait()


class Bench:
    def __init__(self, endpoint: str, key: str, lock: threading.Lock | None) -> None:
        import boto3
        from botocore.config import Config

        self.ddb = boto3.client(
            "dynamodb",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id=key,
            aws_secret_access_key="local",
            config=Config(max_pool_connections=16, retries={"total_max_attempts": 1}),
        )
        self.lock = lock
        self.table = "bench" + uuid.uuid4().hex[:8]
        names = ("pk", "sk", "gsi1pk", "gsi1sk")
        self.ddb.create_table(
            TableName=self.table,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in names],
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            GlobalSecondaryIndexes=[
                {
                    "IndexName": "gsi1",
                    "KeySchema": [
                        {"AttributeName": "gsi1pk", "KeyType": "HASH"},
                        {"AttributeName": "gsi1sk", "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                }
            ],
        )
        self.filled = 0

    def call(self, operation: str, **request: Any) -> Any:
        if self.lock is None:
            return getattr(self.ddb, operation)(TableName=self.table, **request)
        with self.lock:
            return getattr(self.ddb, operation)(TableName=self.table, **request)

    def fill(self, size: int) -> None:
        while self.filled < size:
            last = min(size, self.filled + 25)
            batch = [
                {
                    "PutRequest": {
                        "Item": {
                            "pk": {"S": f"fill#{i}"},
                            "sk": {"S": "x"},
                            # One item in ten is a held lease, in the sparse index.
                            **(
                                {"gsi1pk": {"S": f"g#{i % 100}"}, "gsi1sk": {"S": f"{i:08d}"}}
                                if i % 10 == 0
                                else {}
                            ),
                            "pad": {"S": PAD},
                        }
                    }
                }
                for i in range(self.filled, last)
            ]
            self.ddb.batch_write_item(RequestItems={self.table: batch})
            self.filled = last

    def rate(self, work: Callable[[int, int], None], seconds: float) -> float:
        stop_at = time.monotonic() + seconds
        counts = [0] * THREADS

        def loop(worker: int) -> None:
            n = 0
            while n == 0 or time.monotonic() < stop_at:
                work(worker, n)
                n += 1
            counts[worker] = n

        started = time.monotonic()
        threads = [threading.Thread(target=loop, args=(w,)) for w in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return sum(counts) / (time.monotonic() - started)

    def update(self, worker: int, n: int) -> None:
        self.call(
            "update_item",
            Key={"pk": {"S": f"switch#{worker}"}, "sk": {"S": "s"}},
            UpdateExpression="SET version = :n",
            ConditionExpression="attribute_not_exists(version) OR version < :n",
            ExpressionAttributeValues={":n": {"N": str(time.time_ns())}},
        )

    def transact(self, worker: int, n: int) -> None:
        request = {
            "TransactItems": [
                {
                    "Update": {
                        "TableName": self.table,
                        "Key": {"pk": {"S": f"session#{worker}"}, "sk": {"S": "s"}},
                        "UpdateExpression": "SET beat = :n",
                        "ExpressionAttributeValues": {":n": {"N": str(n)}},
                    }
                },
                {
                    "Put": {
                        "TableName": self.table,
                        "Item": {"pk": {"S": f"idem#{uuid.uuid4().hex}"}, "sk": {"S": "i"}},
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
                {
                    "Update": {
                        "TableName": self.table,
                        "Key": {"pk": {"S": f"count#{worker}"}, "sk": {"S": "c"}},
                        "UpdateExpression": "ADD c :one",
                        "ExpressionAttributeValues": {":one": {"N": "1"}},
                    }
                },
            ]
        }
        if self.lock is None:
            self.ddb.transact_write_items(**request)
        else:
            with self.lock:
                self.ddb.transact_write_items(**request)

    def query(self, worker: int, n: int) -> None:
        self.call(
            "query",
            IndexName="gsi1",
            KeyConditionExpression="gsi1pk = :p",
            ExpressionAttributeValues={":p": {"S": f"g#{(worker * 7 + n) % 100}"}},
            Limit=10,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", default="0,10000,100000")
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    print(
        "| engine | extra items | fill (s) | updates/s | 3-item transactions/s "
        "| index queries/s | engine RSS (MB) | RSS growth during transactions (MB) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, engine in (("DynamoDB Local (disk)", dynamodb_local), ("moto", moto)):
        with engine() as (endpoint, pid, key, lock):
            bench = Bench(endpoint, key, lock)
            bench.rate(bench.update, args.seconds)  # warm-up (the JVM's JIT above all)
            for size in sizes:
                started = time.monotonic()
                bench.fill(size)
                filled = time.monotonic() - started
                updates = bench.rate(bench.update, args.seconds)
                before = rss_mb(pid)
                transactions = bench.rate(bench.transact, args.seconds)
                grown = rss_mb(pid) - before
                queries = bench.rate(bench.query, args.seconds)
                print(
                    f"| {name} | {size:,} | {filled:.0f} | {updates:.0f} | {transactions:.1f} "
                    f"| {queries:.0f} | {rss_mb(pid):.0f} | {grown:+.0f} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
