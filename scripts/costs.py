"""Counts the AWS calls of the liveness path and prices them. Usage:
    .venv/bin/python scripts/costs.py

Everything runs in-process on moto with a botocore hook that counts each call by service and
operation, and the capacity units DynamoDB would charge for it (moto reports none, so they are
derived from the request: one read unit per strongly consistent read of an item up to 4 KB, one
write unit per write up to 1 KB, twice that inside a transaction; every item here is under
1 KB, which the script checks). The prices are inputs, listed below with their source; the
counts are what this script measures.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
os.environ["POWERTOOLS_LOG_LEVEL"] = "WARNING"

# Public on-demand prices, us-east-1, USD (AWS pricing pages, 2025).
PRICE = {
    "dynamodb_write_unit": 0.625 / 1e6,
    "dynamodb_read_unit": 0.125 / 1e6,
    "sqs_request": 0.40 / 1e6,
    "scheduler_invocation": 1.00 / 1e6,
    "http_api_request": 1.00 / 1e6,
    "lambda_request": 0.20 / 1e6,
    # S3 Standard: PUT, COPY, POST and LIST requests; GET and all others.
    "s3_write_request": 5.00 / 1e6,
    "s3_read_request": 0.40 / 1e6,
}
S3_WRITES = frozenset({"PutObject", "CopyObject", "PostObject", "ListObjects", "ListObjectsV2"})
ITEM_LIMIT = 1024  # bytes: every item written must fit one write unit for the units to hold


class Meter:
    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.read_units = 0.0
        self.write_units = 0.0
        self.largest_item = 0

    def hook(self, client: Any) -> Any:
        service = client.meta.service_model.service_name
        built: dict[str, dict[str, Any]] = {}
        # The parameters as the caller gave them, counted once the call is really made:
        # signing a presigned request builds parameters too, and sends nothing.
        client.meta.events.register(
            "before-parameter-build.*.*",
            lambda model, params, **_: built.__setitem__(model.name, params),
        )
        client.meta.events.register(
            "before-call.*.*",
            lambda model, **_: self._count(service, model.name, built.pop(model.name, {})),
        )
        return client

    def _count(self, service: str, operation: str, params: dict[str, Any]) -> None:
        self.calls[f"{service}.{operation}"] += 1
        if service != "dynamodb":
            return
        if operation in ("GetItem", "Query"):
            self.read_units += 1 if params.get("ConsistentRead") else 0.5
        elif operation == "BatchGetItem":
            for request in params["RequestItems"].values():
                self.read_units += len(request["Keys"]) * (
                    1 if request.get("ConsistentRead") else 0.5
                )
        elif operation in ("PutItem", "UpdateItem", "DeleteItem"):
            self.write_units += 1
            self._size(params.get("Item"))
        elif operation == "TransactWriteItems":
            for entry in params["TransactItems"]:
                self.write_units += 2
                for request in entry.values():
                    self._size(request.get("Item"))

    def _size(self, item: dict[str, Any] | None) -> None:
        if item:
            self.largest_item = max(self.largest_item, len(json.dumps(item)))

    def reset(self) -> None:
        self.calls.clear()
        self.read_units = self.write_units = 0.0

    def cost(self, via_api: bool) -> float:
        sqs = sum(v for k, v in self.calls.items() if k.startswith("sqs."))
        scheduler = sum(v for k, v in self.calls.items() if k.startswith("scheduler."))
        s3_writes = sum(
            v for k, v in self.calls.items() if k.startswith("s3.") and k[3:] in S3_WRITES
        )
        s3_reads = sum(v for k, v in self.calls.items() if k.startswith("s3.")) - s3_writes
        total = (
            s3_writes * PRICE["s3_write_request"]
            + s3_reads * PRICE["s3_read_request"]
            + self.write_units * PRICE["dynamodb_write_unit"]
            + self.read_units * PRICE["dynamodb_read_unit"]
            + sqs * PRICE["sqs_request"]
            + scheduler * PRICE["scheduler_invocation"]
            + PRICE["lambda_request"]
        )
        return total + (PRICE["http_api_request"] if via_api else 0.0)

    def summary(self) -> str:
        return ", ".join(f"{k} {v}" for k, v in sorted(self.calls.items()))


def main() -> None:
    import boto3
    from moto import mock_aws

    sys.path.insert(0, str(ROOT))
    from tests.conftest import create_tables_from_template
    from vigil.alarms.aws import AwsAlarms
    from vigil.app import App
    from vigil.attachments.memory import MemoryBlobs
    from vigil.bootstrap import bootstrap_operator
    from vigil.clock import ManualClock, SystemClock, to_ms
    from vigil.mailboxes.sqs import SqsMailboxQueues
    from vigil.stores.dynamo import DynamoStore
    from vigil.switches.service import Liveness

    os.environ.update(AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x")
    os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
    os.environ.pop("AWS_ENDPOINT_URL", None)
    meter = Meter()
    with mock_aws():
        dynamodb = meter.hook(boto3.client("dynamodb"))
        sqs = meter.hook(boto3.client("sqs"))
        scheduler = meter.hook(boto3.client("scheduler"))
        table = create_tables_from_template(dynamodb)["VigilTable"]
        timer_queue = sqs.create_queue(QueueName="timers")["QueueUrl"]
        scheduler.create_schedule_group(Name="alarms")
        clock = ManualClock(to_ms(SystemClock().now()))
        store = DynamoStore(dynamodb, table)
        queues = SqsMailboxQueues(sqs, "cost-mb")
        alarms = AwsAlarms(
            sqs,
            scheduler,
            timer_queue,
            "alarms",
            "arn:aws:lambda:us-east-1:123456789012:function:alarm",
            "arn:aws:iam::123456789012:role/scheduler",
            "arn:aws:sqs:us-east-1:123456789012:alarm-dlq",
        )
        app = App(store, clock, queues=queues, alarms=alarms, blobs=MemoryBlobs())
        liveness = Liveness(store, clock, alarms, queues)
        _, operator = bootstrap_operator(store, clock, "cost", "Ops")
        worker = app.call("register", {"kind": "agent", "name": "w"}, operator)
        watcher = app.call("register", {"kind": "agent", "name": "s"}, operator)
        secret = worker["secret"]
        address = f"agent:{watcher['principal']['id']}"
        queues.ensure(
            __import__("vigil.mailboxes.records", fromlist=["queue_name"]).queue_name(
                queues.prefix, "cost", address
            )
        )

        rows: list[tuple[str, str, float]] = []

        def measure(label: str, via_api: bool, action: Any) -> Any:
            meter.reset()
            result = action()
            rows.append((label, meter.summary(), meter.cost(via_api)))
            return result

        beat = {
            "scope": "job",
            "expect_within_seconds": 300,
            "on_expiry": ["release_leases", "mark_failed", "queue_alert"],
            "notify_address": address,
        }
        app.call("acquire_lease", {"resource": "repo", "scope": "job", "ttl_seconds": 3600}, secret)
        measure(
            "heartbeat, first (arms; window <= 900 s)",
            True,
            lambda: app.call("heartbeat", beat, secret),
        )
        clock.advance(60)
        measure("heartbeat, steady state", True, lambda: app.call("heartbeat", beat, secret))
        long_beat = {"scope": "long", "expect_within_seconds": 86_400}
        measure(
            "heartbeat, first (window > 900 s)",
            True,
            lambda: app.call("heartbeat", long_beat, secret),
        )
        from vigil.alarms.timers import Timer

        timer = Timer(
            kind="switch",
            namespace="cost",
            key="job",
            generation=1,
            due_at=clock.now() + timedelta(seconds=240),
        )
        clock.advance(240)
        measure("alarm, deadline moved by beats (re-arms)", False, lambda: liveness.on_timer(timer))
        switch = store.get_switch("cost", "job")
        assert switch is not None
        clock.advance(301)
        late = timer.model_copy(update={"due_at": switch.deadline})
        measure("alarm, expiry with all three actions", False, lambda: liveness.on_timer(late))
        measure("alarm, delivered again after the expiry", False, lambda: liveness.on_timer(late))
        assert meter.largest_item <= ITEM_LIMIT, meter.largest_item

    print("AWS calls and cost of the liveness path (moto, counted at botocore)")
    print(f"{'operation':45} {'USD per million':>16}   calls")
    for label, calls, cost in rows:
        print(f"{label:45} {cost * 1e6:16.2f}   {calls}")
    print("\nIncluded: DynamoDB units, SQS requests, Scheduler invocations, one Lambda request,")
    print("and one HTTP API request for tool calls. Not included: Lambda duration (GB-seconds),")
    print("which depends on the deployed function's measured duration, and free tiers.")


if __name__ == "__main__":
    main()
