"""What the liveness path costs on AWS, measured through the two functions' handlers on moto,
and priced; and what a notification adds, through the notify function's. Usage:
    .venv/bin/python scripts/costs.py [--repeats 25]
        [--notifications | --steady [--json] | --events]

Both entry points (``vigil.entrypoints.api.handler`` and ``vigil.entrypoints.alarm.handler``)
run in-process on moto, built from the environment as on Lambda, with the clock moved by hand.
For each step (a tool call or an alarm delivery) the script measures, in one run:

1. the AWS calls, counted at the botocore layer, and the capacity units DynamoDB would charge
   for them (moto reports none): a write costs one unit per started KB of the larger of the
   item before and after it (a delete, of the item it deletes; a refused conditional write, of
   the item as it stands, at least one), twice that for each item of a transaction; and for
   each global secondary index whose entry a write changes, one unit per started KB of the
   entry (two when its key changes: the old entry deleted, the new one put; a standard write
   in a transaction too), on the index's partition; a strongly
   consistent read one unit per started 4 KB, half that when eventually consistent. Item sizes
   follow DynamoDB's rules (``vigil.kit.limits.dynamo_item_bytes``), read back from the table
   around each write by a client of the script's own;
2. the bytes Vigil's logger writes at the template's log level, the CloudWatch Logs the step
   ingests with the lines Lambda and the HTTP API add (their formats are inputs, below);
3. the handler's duration (median of ``--repeats`` calls, after a warm-up), and the part of it
   spent inside AWS SDK calls, which is moto's work here and network time on AWS.

The steady beat's section (7; ``--steady`` measures it alone, ``--json`` prints its figures
for tests/unit/test_costs.py) prices one steady beat all-in through each front door the
template offers (FrontDoor: the HTTP API or a Function URL) and each logging choice, against
the goals of $2.00 and $1.00 per million, every assumption printed beside the figures.

The notifications' section (6; ``--notifications`` measures it alone, with the expiry it is
compared with) runs an expiry in a namespace with one channel of each kind (webhook, Slack,
email) against one with none, and ``vigil.entrypoints.notify.handler`` on the notify queue's
message that the expiry sent, as the event source mapping hands it over: the webhook's and
Slack's HTTPS POST is answered 200 by an injected transport (nothing is sent), the email goes
to moto's SES.

The agents' events' section (8; ``--events`` measures it alone) sends a message to an agent
nobody listens for, to one that polls, and to one with a webhook subscription (the
``delivery.waiting`` event's extra work at the source), polls one and ten events
(``events/poll`` over MCP), and runs the notify function's attempt of the webhook's event.

Then it prices them: requests (SES's emails among them), Lambda duration at the memory and
architecture template.yaml gives the functions, log ingestion, X-Ray traces at Lambda's
sampling, one alarm re-arm per window of a switch, and idle agents long-polling their mailbox.
The prices are inputs, listed below with their source; everything else is measured by this
script.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import math
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from vigil.infra.prices import GB, MONTH_SECONDS, PRICE  # noqa: E402

S3_WRITES = frozenset({"PutObject", "CopyObject", "PostObject", "ListObjects", "ListObjectsV2"})
# Lambda's default sampling with active tracing, which the template turns on (and which HTTP
# APIs do not add to): the first request each second, then 5% of the others
# (docs.aws.amazon.com/lambda/latest/dg/services-xray.html).
XRAY_RESERVOIR_PER_SECOND = 1
XRAY_FIXED_RATE = 0.05
# Lambda's own records per invocation in the JSON log format (the template's LogFormat), by
# the system log level (its PlatformLogLevel parameter): at INFO a platform.start and a traced
# invocation's platform.report, in the shape AWS documents them; at WARN none (only a timeout
# or an out-of-memory end would write one). Their length is an input, as a price is.
LAMBDA_PLATFORM_LINES = {
    "INFO": (
        '{"time":"2026-12-01T12:00:00.000Z","type":"platform.start","record":'
        '{"requestId":"6f2c8e1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b","version":"12"}}\n'
        '{"time":"2026-12-01T12:00:00.024Z","type":"platform.report","record":'
        '{"requestId":"6f2c8e1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b","metrics":{"durationMs":23.45,'
        '"billedDurationMs":24,"memorySizeMB":512,"maxMemoryUsedMB":98},"tracing":'
        '{"spanId":"1a2b3c4d5e6f7a8b","type":"X-Amzn-Trace-Id","value":'
        '"Root=1-6759c2a1-0a1b2c3d4e5f60718293a4b5;Parent=1a2b3c4d5e6f7a8b;Sampled=1"},'
        '"status":"success"}}\n'
    ),
    "WARN": "",
}
# Values of the documented shapes for the HTTP API access log's variables (template.yaml's
# format); the response length is the step's own.
ACCESS_LOG_VALUES = {
    "requestId": "JTHoQgr2oAMEPMg=",
    "identity.sourceIp": "203.0.113.10",
    "requestTime": "01/Dec/2026:12:00:00 +0000",
    "routeKey": "POST /v1/{tool}",
    "status": "200",
    "protocol": "HTTP/1.1",
    "integrationLatency": "25",
    "integrationErrorMessage": "-",
}


# -- 1. AWS calls and capacity units --------------------------------------------------------
@dataclass(frozen=True)
class Traced:
    """One call as the meter counted it: ``partition`` is the key a DynamoDB call names (its
    item's or its query's partition; empty for a transaction and other services')."""

    call: str
    partition: str
    write_units: float
    read_units: float


def _partition(params: dict[str, Any]) -> str:
    key = params.get("Key") or params.get("Item") or {}
    if "pk" in key:
        return str(key["pk"].get("S", ""))
    value = params.get("ExpressionAttributeValues", {}).get(":pk", {})
    return str(value.get("S", ""))


def _key_of(item: dict[str, Any]) -> tuple[str, str]:
    return str(item.get("pk", {}).get("S", "")), str(item.get("sk", {}).get("S", ""))


def _write_requests(params: dict[str, Any]) -> list[dict[str, Any]]:
    """A write's requests, one per item it names."""
    if "TransactItems" in params:
        return [next(iter(entry.values())) for entry in params["TransactItems"]]
    return [params]


@dataclass(frozen=True)
class _Index:
    """A global secondary index: its name, key attributes and what it projects."""

    name: str
    keys: tuple[str, ...]
    projected: frozenset[str] | None  # None: every attribute

    def entry(self, item: dict[str, Any] | None, table_keys: list[str]) -> dict[str, Any] | None:
        """The index's entry for ``item``: none unless the item has every key attribute."""
        if item is None or any(name not in item for name in self.keys):
            return None
        if self.projected is None:
            return item
        wanted = self.projected | set(self.keys) | set(table_keys)
        return {name: value for name, value in item.items() if name in wanted}

    def partition(self, entry: dict[str, Any]) -> tuple[str, str]:
        values = [str(next(iter(entry[name].values()))) for name in self.keys]
        return f"{self.name}:{values[0]}", values[1] if len(values) > 1 else ""


class Meter:
    """Counts the AWS calls of the clients it hooks, and DynamoDB's capacity units for them."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.read_units = 0.0
        self.write_units = 0.0
        self.largest_item = 0
        self.paused = False
        # Each call counted, in order, with the units it was charged.
        self.trace: list[Traced] = []
        # Write and read units by partition key and sort key: where the units land.
        self.items: dict[tuple[str, str], list[float]] = {}
        self._readers: dict[int, Any] = {}
        self._key_names: dict[str, list[str]] = {}
        self._indexes: dict[str, list[_Index]] = {}
        self._handlers: dict[int, list[tuple[str, Callable[..., None]]]] = {}

    def hook(self, client: Any) -> Any:
        service = client.meta.service_model.service_name
        built: dict[str, dict[str, Any]] = {}
        before: dict[str, list[dict[str, Any] | None]] = {}

        # The parameters as the caller gave them, counted once the call is really made:
        # signing a presigned request builds parameters too, and sends nothing.
        def parameters(model: Any, params: dict[str, Any], **_: Any) -> None:
            built[model.name] = params

        def before_call(model: Any, **_: Any) -> None:
            params = built.get(model.name, {})
            if not self.paused and service == "dynamodb" and model.name in _WRITES:
                before[model.name] = self._items(client, model.name, params)

        def after_call(model: Any, parsed: dict[str, Any], **_: Any) -> None:
            params = built.pop(model.name, {})
            if self.paused:
                return
            self.calls[f"{service}.{model.name}"] += 1
            if service != "dynamodb":
                self.trace.append(Traced(f"{service}.{model.name}", "", 0.0, 0.0))
                return
            units = (self.write_units, self.read_units)
            if model.name in _WRITES:
                after = self._items(client, model.name, params)
                self._write(client, model.name, params, before.pop(model.name), after)
            else:
                self._read(model.name, params, parsed)
            self.trace.append(
                Traced(
                    f"{service}.{model.name}",
                    _partition(params),
                    self.write_units - units[0],
                    self.read_units - units[1],
                )
            )

        handlers = [
            ("before-parameter-build.*.*", parameters),
            ("before-call.*.*", before_call),
            ("after-call.*.*", after_call),
        ]
        for event, handler in handlers:
            client.meta.events.register(event, handler)
        self._handlers[id(client)] = handlers
        return client

    def unhook(self, client: Any) -> None:
        """Stops counting ``client``'s calls: a client that outlives the meter is left as it was."""
        for event, handler in self._handlers.pop(id(client)):
            client.meta.events.unregister(event, handler)

    # What DynamoDB charges for a write, given each item it names before and after it.
    def _write(
        self,
        client: Any,
        operation: str,
        params: dict[str, Any],
        before: list[dict[str, Any] | None],
        after: list[dict[str, Any] | None],
    ) -> None:
        from vigil.kit.limits import dynamo_item_bytes

        def size(item: dict[str, Any] | None) -> int:
            return dynamo_item_bytes(item) if item else 0

        def charge(key: tuple[str, str], units: int) -> None:
            self.write_units += units
            self._land(key, units, 0.0)

        per_item = 2 if operation == "TransactWriteItems" else 1
        reader = self._reader(client)
        for request, old, new in zip(_write_requests(params), before, after, strict=True):
            charge(
                _key_of(request.get("Key") or request["Item"]),
                per_item * max(1, math.ceil(max(size(old), size(new)) / 1024)),
            )
            self.largest_item = max(self.largest_item, size(new))
            table_keys = self._key_names_of(reader, request["TableName"])
            for index in self._indexes_of(reader, request["TableName"]):
                gone, put = index.entry(old, table_keys), index.entry(new, table_keys)
                if gone == put:
                    continue
                if (
                    gone is not None
                    and put is not None
                    and index.partition(gone) == index.partition(put)
                ):
                    # Changed in place (same keys): one write, of the larger entry.
                    gone, put = None, max(gone, put, key=size)
                for entry in (gone, put):
                    if entry is not None:
                        charge(index.partition(entry), max(1, math.ceil(size(entry) / 1024)))

    def _land(self, key: tuple[str, str], write_units: float, read_units: float) -> None:
        landed = self.items.setdefault(key, [0.0, 0.0])
        landed[0] += write_units
        landed[1] += read_units

    def _read(self, operation: str, params: dict[str, Any], parsed: dict[str, Any]) -> None:
        from vigil.kit.limits import dynamo_item_bytes

        def units(size: int, consistent: bool) -> float:
            return max(1, math.ceil(size / 4096)) * (1 if consistent else 0.5)

        def read(key: tuple[str, str], charged: float) -> None:
            self.read_units += charged
            self._land(key, 0.0, charged)

        if operation == "GetItem":
            item = parsed.get("Item") or {}
            charged = units(dynamo_item_bytes(item), bool(params.get("ConsistentRead")))
            read(_key_of(params["Key"]), charged)
        elif operation == "Query":
            # Items a filter drops are charged too; moto does not return them, so this is a
            # floor for a filtered query. An index's partition is named by its index.
            size = sum(dynamo_item_bytes(item) for item in parsed.get("Items", []))
            index = params.get("IndexName")
            where = (f"{index}:{_partition(params)}" if index else _partition(params), "*")
            read(where, units(size, bool(params.get("ConsistentRead"))))
        elif operation == "BatchGetItem":
            for table, items in parsed.get("Responses", {}).items():
                consistent = bool(params["RequestItems"][table].get("ConsistentRead"))
                for item in items:
                    read(_key_of(item), units(dynamo_item_bytes(item), consistent))

    def _items(
        self, client: Any, operation: str, params: dict[str, Any]
    ) -> list[dict[str, Any] | None]:
        """Each item ``operation`` writes, as the table holds it now (None: none)."""
        reader = self._reader(client)
        keys = [(r["TableName"], self._key(reader, r)) for r in _write_requests(params)]
        return [
            reader.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
            for table, key in keys
        ]

    def _reader(self, client: Any) -> Any:
        """A client of the script's own, on the same endpoint, that nothing counts."""
        import boto3

        if id(client) not in self._readers:
            self._readers[id(client)] = boto3.client(
                "dynamodb",
                region_name=client.meta.region_name,
                endpoint_url=client.meta.endpoint_url,
            )
        return self._readers[id(client)]

    def _describe(self, reader: Any, table: str) -> None:
        described = reader.describe_table(TableName=table)["Table"]
        self._key_names[table] = [part["AttributeName"] for part in described["KeySchema"]]
        self._indexes[table] = [
            _Index(
                index["IndexName"],
                tuple(part["AttributeName"] for part in index["KeySchema"]),
                None
                if index["Projection"]["ProjectionType"] == "ALL"
                else frozenset(index["Projection"].get("NonKeyAttributes", [])),
            )
            for index in described.get("GlobalSecondaryIndexes", [])
        ]

    def _key_names_of(self, reader: Any, table: str) -> list[str]:
        if table not in self._key_names:
            self._describe(reader, table)
        return self._key_names[table]

    def _indexes_of(self, reader: Any, table: str) -> list[_Index]:
        if table not in self._indexes:
            self._describe(reader, table)
        return self._indexes[table]

    def _key(self, reader: Any, request: dict[str, Any]) -> dict[str, Any]:
        source = request.get("Key") or request["Item"]
        return {name: source[name] for name in self._key_names_of(reader, request["TableName"])}

    def reset(self) -> None:
        self.calls.clear()
        self.trace.clear()
        self.items.clear()
        self.read_units = self.write_units = 0.0
        self.largest_item = 0

    def cost(self, via_api: bool) -> float:
        """The requests' price: DynamoDB's units, SQS, Scheduler and S3 requests, one Lambda
        request, and one HTTP API request for a tool call (``via_api``)."""
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


_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"})


class SdkTime:
    """Seconds spent inside AWS SDK calls (signing, sending, moto's work, parsing)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started: list[float] = []

    def hook(self, client: Any) -> None:
        client.meta.events.register("before-call.*.*", lambda **_: self._begin())
        client.meta.events.register("after-call.*.*", lambda **_: self._end())
        client.meta.events.register("after-call-error.*.*", lambda **_: self._end())

    def _begin(self) -> None:
        self._started.append(time.perf_counter())

    def _end(self) -> None:
        if self._started:
            self.seconds += time.perf_counter() - self._started.pop()


class LogBytes(io.TextIOBase):
    """Stands in for the log stream: counts the bytes and lines written to it."""

    def __init__(self) -> None:
        self.bytes = 0
        self.lines = 0
        self.last = ""  # the latest line, to say why a step failed

    def write(self, text: str) -> int:
        self.bytes += len(text.encode())
        self.lines += text.count("\n")
        self.last = text
        return len(text)


# -- the stack, on moto -----------------------------------------------------------------------
def template_facts() -> dict[str, Any]:
    """What template.yaml deploys that the prices depend on."""
    sys.path.insert(0, str(ROOT))
    from tests.conftest import translated_template

    template = translated_template()
    functions = {
        name: resource["Properties"]
        for name, resource in template["Resources"].items()
        if resource["Type"] == "AWS::Lambda::Function"
    }
    api = functions["ApiFunction"]
    stage = next(
        r for r in template["Resources"].values() if r["Type"] == "AWS::ApiGatewayV2::Stage"
    )
    # The access log's settings when ApiAccessLog is on (the Fn::If's first branch).
    _, access_log, _ = stage["Properties"]["AccessLogSettings"]["Fn::If"]
    defaults = {name: spec.get("Default") for name, spec in template["Parameters"].items()}
    return {
        "memory_mb": {name: props["MemorySize"] for name, props in functions.items()},
        "architectures": {a for props in functions.values() for a in props["Architectures"]},
        "tracing": {name: props["TracingConfig"]["Mode"] for name, props in functions.items()},
        "log_format": api["LoggingConfig"]["LogFormat"],
        "log_level": defaults["LogLevel"],
        "platform_log_level": defaults["PlatformLogLevel"],
        "access_log": defaults["ApiAccessLog"] == "on",
        "front_door": defaults["FrontDoor"],
        "access_log_format": access_log["Format"],
    }


def access_log_bytes(log_format: str, response_length: int) -> int:
    line = log_format
    for name, value in {**ACCESS_LOG_VALUES, "responseLength": str(response_length)}.items():
        line = line.replace(f"$context.{name}", value)
    return len(line.encode()) + 1


@dataclass
class Stack:
    """One deployment: both handlers, built as on Lambda from the environment."""

    meter: Meter
    sdk: SdkTime
    logs: LogBytes
    clock: Any
    secrets: dict[str, str] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)
    counter: int = 0
    # The notify function's handler state, once built (the notifications' steps only), and how
    # many messages of each channel kind it has sent.
    notifier: Any = None
    sent: dict[str, Callable[[], int]] = field(default_factory=dict)

    @classmethod
    def up(cls, meter: Meter, sdk: SdkTime, logs: LogBytes, log_level: str) -> Stack:
        import boto3

        from tests.conftest import create_tables_from_template
        from vigil import wiring
        from vigil.bootstrap import bootstrap_operator
        from vigil.clock import ManualClock, SystemClock, to_ms
        from vigil.entrypoints import alarm, api, notify

        dynamodb = boto3.client("dynamodb")
        sqs = boto3.client("sqs")
        table = create_tables_from_template(dynamodb)["VigilTable"]
        boto3.client("scheduler").create_schedule_group(Name="alarms")
        env = {
            "TABLE_NAME": table,
            "TIMER_QUEUE_URL": sqs.create_queue(QueueName="timers")["QueueUrl"],
            "SCHEDULE_GROUP": "alarms",
            "SCHEDULER_ROLE_ARN": "arn:aws:iam::123456789012:role/scheduler",
            "ALARM_FUNCTION_ARN": "arn:aws:lambda:us-east-1:123456789012:function:alarm",
            "ALARM_DLQ_ARN": "arn:aws:sqs:us-east-1:123456789012:alarm-dlq",
            "MAILBOX_QUEUE_PREFIX": "cost-mb",
            "ATTACHMENTS_BUCKET": "cost-attachments",
            "NOTIFY_QUEUE_URL": sqs.create_queue(QueueName="notify")["QueueUrl"],
            "WATCH_QUEUE_URL": sqs.create_queue(QueueName="watch")["QueueUrl"],
            "NOTIFY_FUNCTION_ARN": "arn:aws:lambda:us-east-1:123456789012:function:notify",
            "NOTIFY_DLQ_ARN": "arn:aws:sqs:us-east-1:123456789012:notify-dlq",
            "SERVICE_KEY_ARN": boto3.client("secretsmanager").create_secret(
                Name="console-key", SecretString="k" * 64
            )["ARN"],
        }
        os.environ.update(env)
        clock = ManualClock(to_ms(SystemClock().now()))
        wiring.use_clock(clock)
        wiring.settings.cache_clear()
        api.router.cache_clear()
        alarm.switch_engine.cache_clear()
        app = api.router().app
        engine = alarm.switch_engine()
        notify.notifier.cache_clear()
        worker = notify.notifier()
        clients = [
            worker.store.client,
            worker.alarms.sqs,
            worker.alarms.scheduler,
            app.store.client,
            app.queues.client,
            app.alarms.sqs,
            app.alarms.scheduler,
            engine.store.client,
            engine.queues.client,
            engine.alarms.sqs,
            engine.alarms.scheduler,
        ]
        for client in clients:
            meter.hook(client)
            sdk.hook(client)
        vigil_log = logging.getLogger("vigil")
        for handler in vigil_log.handlers:
            if isinstance(handler, logging.StreamHandler):
                handler.setStream(logs)
        vigil_log.setLevel(log_level)
        stack = cls(meter, sdk, logs, clock)
        _, operator = bootstrap_operator(app.store, clock, "cost", "Ops")
        stack.secrets["operator"] = operator
        for label, kind in (("worker", "agent"), ("watcher", "agent"), ("person", "person")):
            issued = stack.call("operator", "register", kind=kind, name=label)
            stack.secrets[label] = issued["secret"]
            stack.ids[label] = issued["principal"]["id"]
        # The watcher's mailbox, where alerts go, and the worker's, which it polls.
        for label in ("watcher", "worker"):
            stack.call(label, "inbox_poll")
        return stack

    def advance_to(self, moment: Any) -> None:
        self.clock.advance((moment - self.clock.now()).total_seconds())

    def unique(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}-{self.counter}"

    def address(self, label: str) -> str:
        return f"agent:{self.ids[label]}"

    def event(self, who: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps(arguments)
        return {
            "version": "2.0",
            "routeKey": "POST /v1/{tool}",
            "rawPath": f"/v1/{tool}",
            "headers": {
                "content-type": "application/json",
                "authorization": f"Bearer {self.secrets[who]}",
            },
            "requestContext": {
                "http": {"method": "POST", "path": f"/v1/{tool}", "protocol": "HTTP/1.1"},
                "requestId": self.unique("request"),
            },
            "isBase64Encoded": False,
            "body": body,
        }

    def mcp(self, who: str, method: str, **params: Any) -> dict[str, Any]:
        """One 2026-07-28 MCP request of ``method`` by ``who``, through the API function."""
        from vigil.entrypoints import api

        meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
        message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
        event = self.event(who, "x", {})
        event.update(rawPath="/mcp", routeKey="POST /mcp", body=json.dumps(message))
        event["requestContext"]["http"]["path"] = "/mcp"
        event["headers"]["mcp-protocol-version"] = "2026-07-28"
        response = api.handler(event)
        reply: dict[str, Any] = json.loads(response["body"])
        if "result" not in reply:
            raise RuntimeError(f"{method}: {response['statusCode']} {reply}")
        result: dict[str, Any] = reply["result"]
        return result

    def call(self, who: str, tool: str, **arguments: Any) -> dict[str, Any]:
        from vigil.entrypoints import api

        response = api.handler(self.event(who, tool, arguments))
        result: dict[str, Any] = json.loads(response["body"])
        if response["statusCode"] != 200:
            raise RuntimeError(f"{tool}: {response['statusCode']} {result}")
        return result

    def console(self, who: str, query: str) -> Callable[[], Any]:
        """A GET of the console's overview by ``who``, signed in once, as its script asks for
        it every few seconds (``query`` ``fragment=1``) or as a whole page."""
        from vigil.console.session import COOKIE
        from vigil.console.sign_in import kept
        from vigil.entrypoints import api

        app = api.router().app
        principal = app.authenticate(self.secrets[who])
        signer = api.router().console().signer
        # Signed in as the sign-in form does it: a session is live while the store keeps it.
        session = signer.issue(principal, self.clock.now())
        app.store.open_sign_in(kept(session))
        cookie = f"{COOKIE}={signer.encode(session)}"

        def get() -> Any:
            event = {
                "version": "2.0",
                "rawPath": "/console",
                "rawQueryString": query,
                "cookies": [cookie],
                "headers": {"accept": "text/html"},
                "requestContext": {
                    "http": {"method": "GET", "path": "/console", "protocol": "HTTP/1.1"},
                    "requestId": self.unique("request"),
                },
                "isBase64Encoded": False,
            }
            response = api.handler(event)
            if response["statusCode"] != 200:
                raise RuntimeError(f"console: {response['statusCode']}")
            return response

        return get

    def timer_of(self, scope: str) -> Any:
        from vigil.alarms.timers import Timer
        from vigil.entrypoints import alarm
        from vigil.switches.timers import TIMER_KIND

        switch = alarm.switch_engine().store.get_switch("cost", scope)
        assert switch is not None
        return Timer(
            kind=TIMER_KIND,
            namespace="cost",
            key=scope,
            generation=switch.generation,
            due_at=switch.alarm_due,
        )


def queued(timer: Any) -> dict[str, Any]:
    """The timer queue's event for ``timer``, as the event source mapping hands it over."""
    return {"Records": [{"messageId": "m-1", "body": timer.model_dump_json()}]}


def scheduled(timer: Any) -> dict[str, Any]:
    """The Scheduler's event for ``timer``: the timer itself."""
    return dict(json.loads(timer.model_dump_json()))


# -- the steps ----------------------------------------------------------------------------------
Action = Callable[[], Any]


@dataclass(frozen=True)
class Step:
    key: str
    label: str
    function: str  # "api", "alarm" or "notify"
    prepare: Callable[[Stack], Action]  # arranges a fresh case, returns the call to measure


def _beat(stack: Stack, scope: str, window: int = 300, **extra: Any) -> dict[str, Any]:
    return {"scope": scope, "expect_within_seconds": window, **extra}


def _alerting(stack: Stack, scope: str) -> dict[str, Any]:
    actions = ["release_leases", "mark_failed", "queue_alert"]
    return _beat(stack, scope, on_expiry=actions, notify_address=stack.address("watcher"))


def heartbeat(stack: Stack, arguments: dict[str, Any]) -> Action:
    return lambda: stack.call("worker", "heartbeat", **arguments)


def alarm_event(event: dict[str, Any]) -> Action:
    def deliver() -> Any:
        from vigil.entrypoints import alarm

        return alarm.handler(event)

    return deliver


def steady_beat(stack: Stack) -> Action:
    arguments = _beat(stack, stack.unique("steady"))
    stack.call("worker", "heartbeat", **arguments)
    stack.clock.advance(60)
    return heartbeat(stack, arguments)


# A batch as an orchestrator sends it (section 7): the tool takes up to 100.
BATCH_BEATS = 50


def steady_batch(stack: Stack) -> Action:
    beats = [_beat(stack, stack.unique("fleet")) for _ in range(BATCH_BEATS)]
    stack.call("worker", "heartbeat_batch", beats=beats)
    stack.clock.advance(60)
    return lambda: stack.call("worker", "heartbeat_batch", beats=beats)


def first_beat(stack: Stack) -> Action:
    scope = stack.unique("job")
    stack.call(
        "worker", "acquire_lease", resource=stack.unique("repo"), scope=scope, ttl_seconds=3600
    )
    return heartbeat(stack, _alerting(stack, scope))


def first_long_beat(stack: Stack) -> Action:
    return heartbeat(stack, _beat(stack, stack.unique("long"), window=86_400))


def _session(stack: Stack, instructions: int, body_bytes: int) -> tuple[str, str]:
    session = stack.unique("session")
    stack.call("worker", "session_heartbeat", sessionId=session, idempotencyKey=session)
    for n in range(instructions):
        stack.call("person", "post_instruction", sessionId=session, body=str(n) * body_bytes)
    return session, stack.unique("beat")


def session_beat(stack: Stack) -> Action:
    session, key = _session(stack, 0, 0)
    return lambda: stack.call("worker", "session_heartbeat", sessionId=session, idempotencyKey=key)


def session_first_beat(stack: Stack) -> Action:
    """A session's first beat: it creates the session and arms its staleness watch."""
    session = stack.unique("session")
    return lambda: stack.call(
        "worker", "session_heartbeat", sessionId=session, idempotencyKey=session
    )


def session_watch(stack: Stack) -> Action:
    """A beating session's watch arriving when it would have gone stale: it reads the session
    and the namespace's channels, arms itself again and records that (no channel wants
    session.stale here, so an hour on)."""
    from vigil.alarms.kinds import STALE
    from vigil.alarms.timers import Timer
    from vigil.entrypoints import notify

    session, key = _session(stack, 0, 0)
    stack.clock.advance(60)
    stack.call("worker", "session_heartbeat", sessionId=session, idempotencyKey=key)
    found = notify.notifier().store.get_session("cost", session)
    assert found is not None
    assert found.watch_due is not None
    watch = Timer(kind=STALE, namespace="cost", key=session, due_at=found.watch_due)
    stack.advance_to(found.watch_due)

    def deliver() -> Any:
        return notify.handler(queued(watch))

    return deliver


def session_beat_instructed(stack: Stack) -> Action:
    session, key = _session(stack, 2, 4096)
    return lambda: stack.call("worker", "session_heartbeat", sessionId=session, idempotencyKey=key)


def session_beat_whole_result(stack: Stack) -> Action:
    """The same beat with a completion that keeps the whole result, as it did before
    completions left out what the instructions keep (vigil.kit.tooling.Replay)."""
    from vigil import catalog

    session, key = _session(stack, 2, 4096)
    find = catalog.tool
    whole = replace(find("session_heartbeat"), replay=None)

    def call() -> Any:
        catalog.tool = lambda name: whole if name == "session_heartbeat" else find(name)
        try:
            return stack.call("worker", "session_heartbeat", sessionId=session, idempotencyKey=key)
        finally:
            catalog.tool = find

    return call


def session_beat_replayed(stack: Stack) -> Action:
    session, key = _session(stack, 2, 4096)
    stack.call("worker", "session_heartbeat", sessionId=session, idempotencyKey=key)
    return lambda: stack.call("worker", "session_heartbeat", sessionId=session, idempotencyKey=key)


def empty_poll(wait: int) -> Callable[[Stack], Action]:
    def prepare(stack: Stack) -> Action:
        return lambda: stack.call("worker", "inbox_poll", wait_seconds=wait)

    return prepare


# A namespace the overview reads: armed switches, fired ones, sessions, an open request.
CONSOLE_ARMED, CONSOLE_FIRED, CONSOLE_SESSIONS = 20, 5, 10


def console_overview(query: str) -> Callable[[Stack], Action]:
    def prepare(stack: Stack) -> Action:
        if "console" not in stack.ids:  # the warm-up's namespace is the measured one
            fill(stack)
            stack.ids["console"] = "filled"
        return stack.console("person", query)

    def fill(stack: Stack) -> None:
        from vigil.entrypoints import alarm

        for _ in range(CONSOLE_ARMED):
            stack.call("worker", "heartbeat", **_beat(stack, stack.unique("watched")))
        for _ in range(CONSOLE_FIRED):
            scope = stack.unique("dying")
            stack.call("worker", "heartbeat", **_beat(stack, scope, window=60))
            timer = stack.timer_of(scope)
            stack.clock.advance(61)
            alarm.handler(queued(timer))
        for _ in range(CONSOLE_SESSIONS):
            session = stack.unique("session")
            stack.call("worker", "session_heartbeat", sessionId=session, idempotencyKey=session)
        stack.call(
            "worker",
            "ask",
            target={"kind": "person", "id": stack.ids["person"]},
            body="May I deploy?",
            kind="approval",
            action={"op": "deploy"},
            idempotency_key=stack.unique("ask"),
        )

    return prepare


def rearm(stack: Stack) -> Action:
    """A switch beaten since its alarm was armed: the alarm arrives at the first deadline and
    arms the next one, on the timer queue (window up to 900 s)."""
    arguments = _beat(stack, stack.unique("rearm"))
    stack.call("worker", "heartbeat", **arguments)
    timer = stack.timer_of(arguments["scope"])
    stack.clock.advance(60)
    stack.call("worker", "heartbeat", **arguments)
    stack.clock.advance(240)
    return alarm_event(queued(timer))


def long_scheduler_stage(stack: Stack) -> Action:
    """A long window's alarm, fired by the Scheduler ten minutes early: onto the queue."""
    from vigil.alarms.timers import SCHEDULER_LEAD

    arguments = _beat(stack, stack.unique("long"), window=86_400)
    stack.call("worker", "heartbeat", **arguments)
    timer = stack.timer_of(arguments["scope"])
    stack.advance_to(timer.due_at - SCHEDULER_LEAD)
    return alarm_event(scheduled(timer))


def long_rearm(stack: Stack) -> Action:
    """A long window beaten since its alarm was armed: at the first deadline, the next alarm
    is a new schedule."""
    arguments = _beat(stack, stack.unique("long"), window=86_400)
    stack.call("worker", "heartbeat", **arguments)
    timer = stack.timer_of(arguments["scope"])
    stack.clock.advance(3600)
    stack.call("worker", "heartbeat", **arguments)
    stack.advance_to(timer.due_at)
    return alarm_event(queued(timer))


def expiry(stack: Stack) -> Action:
    scope = stack.unique("dead")
    stack.call(
        "worker", "acquire_lease", resource=stack.unique("repo"), scope=scope, ttl_seconds=3600
    )
    stack.call("worker", "heartbeat", **_alerting(stack, scope))
    timer = stack.timer_of(scope)
    stack.clock.advance(301)
    return alarm_event(queued(timer))


def expiry_again(stack: Stack) -> Action:
    deliver = expiry(stack)
    deliver()
    return deliver


def held(stack: Stack) -> Action:
    """A switch past its deadline under a pause: the alarm reads the pauses, holds it and
    comes back at its next hold check."""
    from datetime import timedelta

    from vigil.clock import iso

    scope = stack.unique("held")
    stack.call("worker", "heartbeat", **_alerting(stack, scope))
    until = iso(stack.clock.now() + timedelta(hours=1))
    stack.call("operator", "pause_switches", scope_prefix=scope, until=until)
    timer = stack.timer_of(scope)
    stack.clock.advance(301)
    return alarm_event(queued(timer))


STEPS = [
    Step("steady", "`heartbeat`, steady state", "api", steady_beat),
    Step(
        "first",
        "`heartbeat`, first beat, window ≤ 900 s, with queue_alert",
        "api",
        first_beat,
    ),
    Step("first_long", "`heartbeat`, first beat, window > 900 s", "api", first_long_beat),
    Step("session", "`session_heartbeat`, nothing to hand out", "api", session_beat),
    Step(
        "session_first",
        "`session_heartbeat`, a new session (arms its watch)",
        "api",
        session_first_beat,
    ),
    Step(
        "session_watch",
        "notify, a beating session's watch (moves itself)",
        "notify",
        session_watch,
    ),
    Step(
        "session_4k",
        "`session_heartbeat` handing out two 4 KB instructions",
        "api",
        session_beat_instructed,
    ),
    Step(
        "session_4k_whole",
        "the same, completion keeping the whole result (before)",
        "api",
        session_beat_whole_result,
    ),
    Step(
        "session_4k_replay",
        "the same, replayed (same idempotencyKey)",
        "api",
        session_beat_replayed,
    ),
    Step("poll", "`inbox_poll`, empty, wait_seconds 0", "api", empty_poll(0)),
    Step(
        "console_refresh",
        f"console overview's refresh ({CONSOLE_ARMED} armed, {CONSOLE_FIRED} fired)",
        "api",
        console_overview("fragment=1"),
    ),
    Step("console_page", "console overview, the whole page", "api", console_overview("")),
    Step("rearm", "alarm, deadline moved by beats (re-arms on the queue)", "alarm", rearm),
    Step(
        "long_scheduler",
        "alarm, window > 900 s, the Scheduler's delivery (onto the queue)",
        "alarm",
        long_scheduler_stage,
    ),
    Step(
        "long_rearm",
        "alarm, window > 900 s, deadline moved (re-arms with a schedule)",
        "alarm",
        long_rearm,
    ),
    Step("expiry", "alarm, expiry with all three actions", "alarm", expiry),
    Step("expiry_again", "alarm, delivered again after the expiry", "alarm", expiry_again),
    Step("held", "alarm, past its deadline under a pause (held)", "alarm", held),
]

# -- notifications: one event to one channel of each kind ------------------------------------
NOTIFY_KINDS = ("webhook", "slack", "email")
CHANNEL_TARGETS: dict[str, dict[str, str]] = {
    "webhook": {"url": "https://hooks.example.com/vigil"},
    "slack": {"url": "https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX"},
    "email": {"email": "oncall@example.com"},
}
EMAIL_SENDER = "notifications@example.com"
CONSOLE_BASE = "https://abcdef1234.execute-api.us-east-1.amazonaws.com"
# The notify queue's event source mapping receives each message and deletes it once handled:
# two SQS requests per event at one message a batch (fewer when batches fill), billed by SQS,
# made by Lambda and so not counted by the meter.
ESM_SQS_REQUESTS = 2


def _channel(stack: Stack, kind: str) -> str:
    """The namespace's one channel, of ``kind``, taking switch.fired; made on first use."""
    if "channel" not in stack.ids:
        made = stack.call(
            "operator",
            "create_channel",
            name=f"cost {kind}",
            kind=kind,
            rules=[{"events": ["switch.fired"]}],
            **CHANNEL_TARGETS[kind],
        )
        stack.ids["channel"] = made["channel"]["id"]
    return stack.ids["channel"]


def fired_to(kind: str) -> Callable[[Stack], Action]:
    """The expiry of ``expiry``, in a namespace with one channel of ``kind``: the source's side
    of the event (the channels query, the notification in the step's transaction, the notify
    queue's message)."""

    def prepare(stack: Stack) -> Action:
        _channel(stack, kind)
        return expiry(stack)

    return prepare


def delivered_to(kind: str) -> Callable[[Stack], Action]:
    """The notify function's first attempt at an expiry's switch.fired, handed over by the
    notify queue as its event source mapping would, and delivered: a webhook's or Slack's POST
    answered 200 (the transport injected, no connection made), an email sent by moto's SES."""

    def prepare(stack: Stack) -> Action:
        from vigil.entrypoints import notify

        _channel(stack, kind)
        worker = stack.notifier or _notifier(stack)
        sqs, url = worker.alarms.sqs, os.environ["NOTIFY_QUEUE_URL"]
        _drain(sqs, url)
        expiry(stack)()
        [message] = _drain(sqs, url)
        event = {"Records": [{"messageId": message["MessageId"], "body": message["Body"]}]}
        sent = stack.sent[kind]

        def deliver() -> Any:
            before = sent()
            result = notify.handler(event)
            assert result == {"batchItemFailures": []}, stack.logs.last
            assert sent() == before + 1, f"the {kind} message was not sent"
            return result

        return deliver

    return prepare


def _drain(sqs: Any, url: str) -> list[dict[str, Any]]:
    """Every message on the queue, deleted (the meter is paused while a case is prepared)."""
    found: list[dict[str, Any]] = []
    while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
        for message in batch:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        found += batch
    return found


def _notifier(stack: Stack) -> Any:
    """The notify function's handler state, built as on Lambda, its AWS clients metered and
    its HTTP transport replaced by one that answers 200 and counts the POSTs."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.ses.models import ses_backends

    from vigil.entrypoints import notify
    from vigil.notifications.outbound import SendResult

    notify.notifier.cache_clear()
    worker = notify.notifier()
    posts: list[int] = []

    def post(url: str, body: bytes, headers: Any, **_: Any) -> SendResult:
        posts.append(len(body))
        return SendResult("delivered", 200, "HTTP 200")

    worker.sender.post = post
    clients = [worker.store.client, worker.alarms.sqs, worker.alarms.scheduler]
    if worker.sender.ses is not None:
        clients.append(worker.sender.ses)
    for client in clients:
        stack.meter.hook(client)
        stack.sdk.hook(client)
    ses = ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"]
    stack.sent.update(
        webhook=lambda: len(posts), slack=lambda: len(posts), email=lambda: len(ses.sent_messages)
    )
    stack.notifier = worker
    return worker


def measure_notifications(repeats: int, log_level: str) -> dict[str, tuple[Measured, Measured]]:
    """For each kind of channel: the source's expiry with one such channel, and the notify
    function's delivery to it, each on a deployment of its own."""
    import boto3
    from moto import mock_aws

    os.environ["CONSOLE_BASE_URL"] = CONSOLE_BASE
    measured = {}
    for kind in NOTIFY_KINDS:
        steps = (
            Step(f"fired_{kind}", f"alarm, expiry, one {kind} channel", "alarm", fired_to(kind)),
            Step(f"sent_{kind}", f"notify, {kind} delivered", "notify", delivered_to(kind)),
        )
        rows = []
        for step in steps:
            if kind == "email":
                os.environ["NOTIFY_EMAIL_SENDER"] = EMAIL_SENDER
            with mock_aws():
                if kind == "email":
                    boto3.client("sesv2").create_email_identity(EmailIdentity=EMAIL_SENDER)
                stack = Stack.up(Meter(), SdkTime(), LogBytes(), log_level)
                rows.append(measure(stack, step, repeats))
            os.environ.pop("NOTIFY_EMAIL_SENDER", None)
        measured[kind] = (rows[0], rows[1])
    return measured


# A long poll is timed once: what it shows is that the handler waits out the wait.
LONG_POLL_SECONDS = 2
LONG_POLL = Step("long_poll", "`inbox_poll`, empty", "api", empty_poll(LONG_POLL_SECONDS))


@dataclass
class Measured:
    step: Step
    calls: str
    write_units: float
    read_units: float
    largest_item: int
    requests_usd: float  # per call
    log_bytes: int
    log_lines: int
    response_bytes: int
    median_ms: float
    sdk_ms: float
    trace: list[Traced] = field(default_factory=list)


def measure(stack: Stack, step: Step, repeats: int) -> Measured:
    meter, sdk, logs = stack.meter, stack.sdk, stack.logs
    meter.paused = True
    step.prepare(stack)()  # warm-up: validators built on first use, queues looked up
    action = step.prepare(stack)
    meter.paused = False
    meter.reset()
    logs.bytes = logs.lines = 0
    result = action()
    counted = Measured(
        step=step,
        calls=meter.summary(),
        write_units=meter.write_units,
        read_units=meter.read_units,
        largest_item=meter.largest_item,
        requests_usd=meter.cost(via_api=step.function == "api"),
        log_bytes=logs.bytes,
        log_lines=logs.lines,
        response_bytes=len(json.dumps(result).encode()),
        median_ms=0.0,
        sdk_ms=0.0,
        trace=list(meter.trace),
    )
    meter.paused = True
    durations, in_sdk = [], []
    for _ in range(repeats):
        action = step.prepare(stack)
        sdk.seconds = 0.0
        started = time.perf_counter()
        action()
        durations.append((time.perf_counter() - started) * 1000)
        in_sdk.append(sdk.seconds * 1000)
    counted.median_ms = statistics.median(durations)
    counted.sdk_ms = statistics.median(in_sdk)
    return counted


# -- pricing ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Prices:
    memory_gb: float
    platform_log_bytes: int
    access_log_format: str  # empty: no access log (ApiAccessLog off, or a Function URL)

    def duration_usd(self, milliseconds: float) -> float:
        """Lambda bills duration by the millisecond, rounded up."""
        return math.ceil(milliseconds) / 1000 * self.memory_gb * PRICE["lambda_arm64_gb_second"]

    def log_bytes(self, row: Measured) -> int:
        access = (
            access_log_bytes(self.access_log_format, row.response_bytes)
            if self.access_log_format
            else 0
        )
        return (
            row.log_bytes + self.platform_log_bytes + (access if row.step.function == "api" else 0)
        )

    def logs_usd(self, row: Measured) -> float:
        return self.log_bytes(row) / GB * PRICE["logs_ingested_gb"]

    def total_usd(self, row: Measured) -> float:
        return row.requests_usd + self.duration_usd(row.median_ms) + self.logs_usd(row)


def xray_traced(calls_per_second: float) -> float:
    """The share of calls Lambda's default sampling traces at a steady rate."""
    reservoir = min(calls_per_second, XRAY_RESERVOIR_PER_SECOND)
    return (reservoir + XRAY_FIXED_RATE * (calls_per_second - reservoir)) / calls_per_second


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=25, help="timed calls per step")
    only = parser.add_mutually_exclusive_group()
    only.add_argument(
        "--notifications",
        action="store_true",
        help="measure only the notifications' section (and the expiry it is added to)",
    )
    only.add_argument(
        "--events",
        action="store_true",
        help="measure only the agents' events by poll and by webhook (section 8)",
    )
    only.add_argument(
        "--steady",
        action="store_true",
        help="measure only the steady beat, all in, by front door and logging (section 7)",
    )
    parser.add_argument(
        "--json", action="store_true", help="with --steady: print its figures as JSON"
    )
    options = parser.parse_args()

    from moto import mock_aws

    os.environ["VIGIL_LOG_LEVEL"] = "WARNING"
    os.environ.update(AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x")
    os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
    os.environ.pop("AWS_ENDPOINT_URL", None)
    facts = template_facts()
    assert facts["architectures"] == {"arm64"}, facts["architectures"]
    memory = set(facts["memory_mb"].values())
    assert len(memory) == 1, facts["memory_mb"]
    prices = Prices(
        memory_gb=memory.pop() / 1024,
        platform_log_bytes=len(LAMBDA_PLATFORM_LINES[facts["platform_log_level"]].encode()),
        access_log_format=facts["access_log_format"] if facts["access_log"] else "",
    )
    if options.events:
        report_events(measure_events(options.repeats, facts["log_level"]), prices)
        return
    if options.steady:
        beats = measure_steady_beats(options.repeats)
        if options.json:
            print(json.dumps(steady_figures(beats, prices, facts), indent=2))
        else:
            report_steady(beats, prices, facts)
        return
    rows: dict[str, Measured] = {}
    chosen = [*STEPS, LONG_POLL]
    if options.notifications:
        chosen = [step for step in STEPS if step.key == "expiry"]
    for step in chosen:
        # Each step on a deployment of its own: moto's transactions copy the whole table, so a
        # table grown by other steps would slow this one's.
        meter, sdk, logs = Meter(), SdkTime(), LogBytes()
        with mock_aws():
            stack = Stack.up(meter, sdk, logs, facts["log_level"])
            rows[step.key] = measure(stack, step, 1 if step is LONG_POLL else options.repeats)
    if not options.notifications:
        report(rows, rows.pop(LONG_POLL.key), prices, facts, options.repeats)
    notified = measure_notifications(options.repeats, facts["log_level"])
    report_notifications(rows["expiry"], notified, prices)
    if not options.notifications:
        report_steady(measure_steady_beats(options.repeats), prices, facts)
        report_events(measure_events(options.repeats, facts["log_level"]), prices)


# -- 7. a steady beat, all in, by front door and logging ---------------------------------------
# The goals (issue 26), USD per million steady beats, everything included.
GOALS = {"HttpApi": 2.00, "FunctionUrl": 1.00}
# The goal (issue 36) for a beat sent in a batch of BATCH_BEATS, whatever the door.
BATCH_GOAL = 0.70
# Vigil's own level (the LogLevel parameter) decides whether a call writes its line.
APP_LOG_LEVELS = ("INFO", "WARNING")


@dataclass(frozen=True)
class Choice:
    """A deploy's choices that a steady beat's price depends on: its template parameters."""

    door: str  # FrontDoor
    log_level: str  # LogLevel
    platform_log_level: str  # PlatformLogLevel
    access_log: bool  # ApiAccessLog; a Function URL has none

    @property
    def label(self) -> str:
        access = ("on" if self.access_log else "off") if self.door == "HttpApi" else "-"
        return f"{self.door:12} {self.log_level:8} {self.platform_log_level:8} {access:6}"


CHOICES = (
    Choice("HttpApi", "INFO", "INFO", True),
    Choice("HttpApi", "INFO", "WARN", True),
    Choice("HttpApi", "WARNING", "WARN", True),
    Choice("HttpApi", "WARNING", "WARN", False),
    Choice("FunctionUrl", "INFO", "INFO", False),
    Choice("FunctionUrl", "INFO", "WARN", False),
    Choice("FunctionUrl", "WARNING", "WARN", False),
)


BATCH_STEP = Step(
    "batch", f"`heartbeat_batch` of {BATCH_BEATS} beats, steady state", "api", steady_batch
)


def measure_steady_beats(repeats: int) -> dict[str, Measured]:
    """The steady beat, and a steady batch (keyed ``batch:<level>``), at each of Vigil's log
    levels, each on a deployment of its own. A batch's beats run one after another here: the
    meter counts one call at a time, and moto serves one at a time anyway; on AWS they run
    side by side, so its duration here is more than AWS would bill."""
    from moto import mock_aws

    from vigil.kit import fanout

    fanout.serial = True
    step = next(step for step in STEPS if step.key == "steady")
    beats = {}
    for level in APP_LOG_LEVELS:
        for key, measured in ((level, step), (f"batch:{level}", BATCH_STEP)):
            with mock_aws():
                stack = Stack.up(Meter(), SdkTime(), LogBytes(), level)
                beats[key] = measure(stack, measured, repeats)
    return beats


def price_steady(beat: Measured, choice: Choice, prices: Prices, beats: int = 1) -> dict[str, Any]:
    """One steady beat's price, USD per million, part by part, for ``choice``, where the call
    measured carried ``beats`` beats (a batch's price is shared by its beats); and how many
    billed milliseconds its goal leaves for the duration of the call."""
    per_ms = prices.memory_gb * PRICE["lambda_arm64_gb_second"] / 1000
    access = (
        access_log_bytes(prices.access_log_format, beat.response_bytes)
        if choice.access_log and choice.door == "HttpApi" and prices.access_log_format
        else 0
    )
    platform = len(LAMBDA_PLATFORM_LINES[choice.platform_log_level].encode())
    log_bytes = beat.log_bytes + platform + access
    parts = {
        "http_api": PRICE["http_api_request"] if choice.door == "HttpApi" else 0.0,
        "lambda_request": PRICE["lambda_request"],
        "dynamodb": beat.write_units * PRICE["dynamodb_write_unit"]
        + beat.read_units * PRICE["dynamodb_read_unit"],
        "duration": prices.duration_usd(beat.median_ms),
        "logs": log_bytes / GB * PRICE["logs_ingested_gb"],
    }
    parts = {name: value / beats for name, value in parts.items()}
    counted = sum(value for name, value in parts.items() if name != "duration")
    goal = (BATCH_GOAL if beats > 1 else GOALS[choice.door]) / 1e6
    return {
        **{name: value * 1e6 for name, value in parts.items()},
        "total": sum(parts.values()) * 1e6,
        "goal": BATCH_GOAL if beats > 1 else GOALS[choice.door],
        "log_bytes": {"vigil": beat.log_bytes, "platform": platform, "access": access},
        "billed_ms": math.ceil(beat.median_ms),
        # The handler's own milliseconds here, outside AWS calls: a floor for its duration.
        "own_ms": beat.median_ms - beat.sdk_ms,
        "own_duration": prices.duration_usd(beat.median_ms - beat.sdk_ms) * 1e6 / beats,
        # What the goal leaves for the duration, in billed milliseconds (negative: nothing).
        "budget_ms": math.floor((goal - counted) * beats / per_ms) if goal > counted else -1,
    }


def steady_figures(
    beats: dict[str, Measured], prices: Prices, facts: dict[str, Any]
) -> dict[str, Any]:
    steady = beats[APP_LOG_LEVELS[0]]
    batch = beats[f"batch:{APP_LOG_LEVELS[0]}"]
    return {
        "calls": dict(_counted(steady)),
        "write_units": steady.write_units,
        "read_units": steady.read_units,
        "item_bytes": steady.largest_item,
        "memory_mb": int(prices.memory_gb * 1024),
        "defaults": {
            "FrontDoor": facts["front_door"],
            "LogLevel": facts["log_level"],
            "PlatformLogLevel": facts["platform_log_level"],
            "ApiAccessLog": "on" if facts["access_log"] else "off",
        },
        "choices": [
            {
                "FrontDoor": choice.door,
                "LogLevel": choice.log_level,
                "PlatformLogLevel": choice.platform_log_level,
                "ApiAccessLog": "on" if choice.access_log else "off",
                **price_steady(beats[choice.log_level], choice, prices),
            }
            for choice in CHOICES
        ],
        "batch": {
            "beats": BATCH_BEATS,
            "calls": dict(_counted(batch)),
            "write_units": batch.write_units,
            "read_units": batch.read_units,
            "median_ms": batch.median_ms,
            "choices": [
                {
                    "FrontDoor": choice.door,
                    "LogLevel": choice.log_level,
                    "PlatformLogLevel": choice.platform_log_level,
                    "ApiAccessLog": "on" if choice.access_log else "off",
                    **price_steady(beats[f"batch:{choice.log_level}"], choice, prices, BATCH_BEATS),
                }
                for choice in CHOICES
            ],
        },
    }


def report_steady(beats: dict[str, Measured], prices: Prices, facts: dict[str, Any]) -> None:
    figures = steady_figures(beats, prices, facts)
    steady = beats[APP_LOG_LEVELS[0]]
    info = figures["choices"][0]
    print(
        "\n7. A steady beat, all in, by front door and logging (USD per million beats; goals: "
        + ", ".join(f"{door} ${goal:.2f}" for door, goal in GOALS.items())
        + ")"
    )
    print(
        f"   AWS calls: {steady.calls}: {steady.write_units:g} write unit (the item is "
        f"{steady.largest_item} bytes, under 1 KB) at ${PRICE['dynamodb_write_unit'] * 1e6:.3f}"
        f" per million and {steady.read_units:g} read unit (an eventually consistent read of the "
        f"caller's principal, under 4 KB) at ${PRICE['dynamodb_read_unit'] * 1e6:.3f};"
    )
    print(
        f"   one Lambda request (${PRICE['lambda_request'] * 1e6:.2f} per million), and one HTTP "
        f"API request (${PRICE['http_api_request'] * 1e6:.2f}) through the HTTP API, none "
        "through a Function URL;"
    )
    print(
        f"   duration: the handler's median here, {steady.median_ms:.1f} ms ({steady.sdk_ms:.1f} "
        f"of it in moto's AWS calls, {steady.median_ms - steady.sdk_ms:.1f} its own), billed by "
        f"the ms at {figures['memory_mb']} MB arm64; on AWS the two DynamoDB round trips "
        "replace moto's work, on about a third of a vCPU;"
    )
    print(
        f"   logs at ${PRICE['logs_ingested_gb']:.2f} per GB: Vigil's own line per call, "
        f"{beats['INFO'].log_bytes} bytes at LogLevel INFO and {beats['WARNING'].log_bytes} at "
        f"WARNING (measured); Lambda's JSON records, {info['log_bytes']['platform']} bytes at "
        "PlatformLogLevel INFO (platform.start and platform.report) and none at WARN; the "
        f"access log's line, {info['log_bytes']['access']} bytes (its format, this response)."
    )
    print(
        f"   Defaults: {', '.join(f'{k} {v}' for k, v in figures['defaults'].items())}; "
        "API Gateway cannot sample an access log: on or off."
    )
    print_choices(figures["choices"], digits=2, per="beat")
    report_batch(figures["batch"])


def print_choices(rows: list[dict[str, Any]], digits: int, per: str) -> None:
    """The price of each choice, part by part, and the billed ms its goal leaves ``per`` call
    or beat."""
    leaves = "the goal leaves" if per == "beat" else "per call the goal leaves"
    print(
        f"{'FrontDoor':12} {'LogLevel':8} {'platform':8} {'access':6} {'HTTP API':>8} "
        f"{'Lambda':>6} {'DynamoDB':>8} {'duration':>8} {'logs':>5} {'total':>6} "
        f"{'goal':>5}  billed ms {leaves}"
    )
    for choice, row in zip(CHOICES, rows, strict=True):
        cells = " ".join(
            f"{row[name]:{width}.{digits}f}"
            for name, width in (
                ("http_api", 8),
                ("lambda_request", 6),
                ("dynamodb", 8),
                ("duration", 8),
                ("logs", 5),
                ("total", 6),
                ("goal", 5),
            )
        )
        budget = row["budget_ms"]
        left = f"{budget} (this {per} bills {row['billed_ms']})" if budget >= 0 else "none"
        print(f"{choice.label} {cells}  {left}")


def report_batch(batch: dict[str, Any]) -> None:
    print(
        f"\n   The same beats sent {batch['beats']} to a call (`heartbeat_batch`), per beat; goal "
        f"${BATCH_GOAL:.2f} whatever the door. AWS calls per call: {batch['calls']}: "
        f"{batch['write_units']:g} write units and {batch['read_units']:g} read unit (one "
        f"authentication for all). The duration is the handler's median here, "
        f"{batch['median_ms']:.1f} ms with the beats one after another on moto; on AWS they "
        "run ten at a time."
    )
    print_choices(batch["choices"], digits=3, per="call")


def report(
    rows: dict[str, Measured],
    long_poll: Measured,
    prices: Prices,
    facts: dict[str, Any],
    repeats: int,
) -> None:
    memory_mb = int(prices.memory_gb * 1024)
    print("1. AWS calls, DynamoDB capacity units and the price of the requests")
    print("   (moto, counted at botocore; units from the items' sizes; USD per million)")
    print(f"{'step':68} {'WRU':>5} {'RRU':>5} {'item B':>7} {'USD/M':>7}   calls")
    for row in rows.values():
        print(
            f"{row.step.label:68} {row.write_units:5g} {row.read_units:5g} "
            f"{row.largest_item:7d} {row.requests_usd * 1e6:7.2f}   {row.calls}"
        )

    print(
        f"\n2. Lambda duration and logs (handler on moto, median of {repeats} calls, and the part "
        "of it spent in AWS calls, moto's work here;"
    )
    print(
        f"   duration billed by the ms at {memory_mb} MB arm64, ${PRICE['lambda_arm64_gb_second']} "
        f"per GB-s; logs: Vigil's lines at {facts['log_level']}, Lambda's "
        f"{prices.platform_log_bytes} bytes and the API's access log line, "
        f"${PRICE['logs_ingested_gb']:.2f} per GB; USD per million)"
    )
    print(
        f"{'step':68} {'ms':>6} {'in AWS':>6} {'own':>5} {'dur USD':>7} {'log B':>5} "
        f"{'logs USD':>8} {'total':>6}"
    )
    for row in rows.values():
        print(
            f"{row.step.label:68} {row.median_ms:6.1f} {row.sdk_ms:6.1f} "
            f"{row.median_ms - row.sdk_ms:5.1f} {prices.duration_usd(row.median_ms) * 1e6:7.2f} "
            f"{prices.log_bytes(row):5d} {prices.logs_usd(row) * 1e6:8.2f} "
            f"{prices.total_usd(row) * 1e6:6.2f}"
        )
    print(
        "   (Vigil's own log bytes per step: "
        + ", ".join(f"{key} {row.log_bytes} in {row.log_lines} lines" for key, row in rows.items())
        + ")"
    )

    print(
        f"\n3. X-Ray (tracing: {', '.join(sorted(set(facts['tracing'].values())))}; Lambda's "
        f"sampling: {XRAY_RESERVOIR_PER_SECOND}/s, then {XRAY_FIXED_RATE:.0%}; "
        f"${PRICE['xray_trace_recorded'] * 1e6:.2f} per million traces)"
    )
    print(f"{'calls per second, steady':>26} {'traced':>8} {'USD per million calls':>22}")
    for rate in (0.1, 1, 10, 100, 1000):
        share = xray_traced(rate)
        print(f"{rate:26g} {share:8.1%} {share * PRICE['xray_trace_recorded'] * 1e6:22.2f}")

    print("\n4. One switch for 30 days, beaten every third of its window (USD per switch)")
    steady = prices.total_usd(rows["steady"])
    for window, stages in (
        (300, ["rearm"]),
        (3600, ["long_scheduler", "long_rearm"]),
        (86_400, ["long_scheduler", "long_rearm"]),
    ):
        beats = 3 * MONTH_SECONDS / window
        # The alarm re-arms when it arrives at a deadline the beats have moved, and the next
        # one is due a window after the last beat: between 2/3 of a window and a window later.
        rearms = 1.5 * MONTH_SECONDS / window
        scheduler = PRICE["scheduler_invocation"] if "long_scheduler" in stages else 0.0
        alarm = sum(prices.total_usd(rows[s]) for s in stages) + scheduler
        print(
            f"  window {window:>6} s: {beats:6.0f} beats ${beats * steady:.4f}; "
            f"at most {rearms:5.0f} re-arms at ${alarm * 1e6:.2f} per million "
            f"({' + '.join(stages)}{' + a Scheduler invocation' if scheduler else ''}) "
            f"${rearms * alarm:.4f}"
        )
    print("  A beat never re-arms the alarm: a steady beat is one conditional write. The alarm")
    print("  re-arms when it arrives at a deadline that beats have moved; beyond 900 s with a")
    print("  new schedule, whose invocation ten minutes early puts it on the timer queue.")
    print(
        f"\n5. Long polling inbox_poll (an empty poll waited {LONG_POLL_SECONDS} s: handler "
        f"{long_poll.median_ms:.0f} ms, {long_poll.sdk_ms:.0f} ms of it in AWS calls)"
    )
    empty = rows["poll"]
    overhead_ms = empty.median_ms
    requests = empty.requests_usd + prices.logs_usd(empty)
    print(f"{'wait_seconds':>13} {'billed ms':>10} {'duration USD/M':>15} {'total USD/M':>12}")
    per_poll = {}
    for wait in (0, 1, 5, 10, 20):
        billed = overhead_ms + 1000 * wait
        per_poll[wait] = requests + prices.duration_usd(billed)
        print(
            f"{wait:13d} {math.ceil(billed):10d} {prices.duration_usd(billed) * 1e6:15.2f} "
            f"{per_poll[wait] * 1e6:12.2f}"
        )
    print("  An idle agent for 30 days:")
    plans = [
        ("long polls back to back (wait_seconds 20)", 20, per_poll[20]),
        ("wait_seconds 0 every 20 s", 20, per_poll[0]),
        ("wait_seconds 0 every 60 s", 60, per_poll[0]),
        ("wait_seconds 0, backing off to every 300 s", 300, per_poll[0]),
    ]
    for label, every, each in plans:
        polls = MONTH_SECONDS / every
        print(f"    {label:48} {polls:8.0f} polls  ${polls * each:.2f}")


def _counted(row: Measured) -> Counter[str]:
    return Counter(traced.call for traced in row.trace)


def _own(row: Measured) -> float:
    """The handler's milliseconds outside AWS calls (moto's work here)."""
    return row.median_ms - row.sdk_ms


def _calls(counts: Counter[str]) -> str:
    return ", ".join(f"{name} {count:+d}" for name, count in sorted(counts.items()) if count)


def report_notifications(
    baseline: Measured, measured: dict[str, tuple[Measured, Measured]], prices: Prices
) -> None:
    """What one switch.fired event delivered to one channel adds, per kind, and its price."""
    per_ms = prices.memory_gb * PRICE["lambda_arm64_gb_second"] / 1000
    print(
        "\n6. Notifications: one switch.fired event delivered to one channel (the expiry's extra "
        "work over a namespace with no channel, and the notify function's attempt)"
    )
    print(f"{'':30} {'WRU':>5} {'RRU':>5} {'ms':>6} {'own':>5}   calls")
    for kind, (fired, sent) in measured.items():
        extra = _counted(fired)
        extra.subtract(_counted(baseline))
        print(
            f"  source, {kind:21} {fired.write_units - baseline.write_units:5g} "
            f"{fired.read_units - baseline.read_units:5g} "
            f"{fired.median_ms - baseline.median_ms:6.1f} "
            f"{_own(fired) - _own(baseline):5.1f}   {_calls(extra)}"
        )
        print(
            f"  notify, {kind:21} {sent.write_units:5g} {sent.read_units:5g} "
            f"{sent.median_ms:6.1f} {_own(sent):5.1f}   {sent.calls}"
            + ("" if kind == "email" else ", and the HTTPS POST")
        )
    print(
        f"\n   USD per million events (DynamoDB, SQS at ${PRICE['sqs_request'] * 1e6:.2f} per "
        f"million requests with the event source mapping's {ESM_SQS_REQUESTS} per message, one "
        f"Lambda request at ${PRICE['lambda_request'] * 1e6:.2f} per million, duration at "
        f"{prices.memory_gb * 1024:.0f} MB arm64, logs, SES ${PRICE['ses_email'] * 1000:.2f} "
        "per 1000 emails)"
    )
    print(
        f"{'channel':10} {'source':>8} {'notify requests':>16} {'duration':>9} {'logs':>6} "
        f"{'ESM SQS':>8} {'SES':>7} {'total':>8}"
    )
    for kind, (fired, sent) in measured.items():
        source = (
            fired.requests_usd
            - baseline.requests_usd
            + (fired.median_ms - baseline.median_ms) * per_ms
            + prices.logs_usd(fired)
            - prices.logs_usd(baseline)
        )
        esm = ESM_SQS_REQUESTS * PRICE["sqs_request"]
        ses = PRICE["ses_email"] if kind == "email" else 0.0
        parts = [
            source,
            sent.requests_usd,
            prices.duration_usd(sent.median_ms),
            prices.logs_usd(sent),
            esm,
            ses,
        ]
        cells = " ".join(
            f"{value * 1e6:{width}.2f}"
            for value, width in zip(parts, (8, 16, 9, 6, 8, 7), strict=True)
        )
        print(f"{kind:10} {cells} {sum(parts) * 1e6:8.2f}")

    print(
        "   The notify function's duration above leaves out the message's own time: the POST is "
        "injected and moto's SES answers at once. On AWS Lambda bills that wait: each 100 ms a "
        f"receiver or SES takes adds ${100 * per_ms * 1e6:.2f} per million."
    )
    # The channels query is the first call that reads their partition; what follows it is the
    # notify step's.
    first = next(i for i, t in enumerate(baseline.trace) if t.partition.endswith("#CHANNELS"))
    paid = baseline.trace[first:]
    usd = sum(
        t.write_units * PRICE["dynamodb_write_unit"] + t.read_units * PRICE["dynamodb_read_unit"]
        for t in paid
    )
    calls = "; ".join(
        f"{t.call} of {t.partition or 'a transaction'}, {t.write_units:g} WRU {t.read_units:g} RRU"
        for t in paid
    )
    print(
        "\n   A namespace with no channel pays, per switch.fired event (the expiry's last calls): "
        f"{calls}; ${usd * 1e6:.2f} per million"
    )


# -- 8. agents' events: by poll and by webhook ---------------------------------------------------
EVENTS_SECRET = "whsec_" + "Y29zdHMtb2YtYWdlbnRzLWV2ZW50cy1ieS13ZWJob29r"
EVENTS_URL = "https://host.example.com/events"
# A page of this many events, to show what a poll costs per event when events gather.
EVENTS_PAGE = 10


def _message(stack: Stack) -> Action:
    """The worker's message to the watcher, in the conversation the two reuse."""
    target = {"kind": "agent", "id": stack.ids["watcher"]}
    return lambda: stack.call("worker", "send", target=target, body="hello", reuse_direct=True)


def _poll_cursor(stack: Stack) -> str:
    return str(stack.mcp("watcher", "events/poll", name="delivery.waiting", arguments={})["cursor"])


def sent_to(listener: str) -> Callable[[Stack], Action]:
    """A message to the watcher, who listens to its events ``listener`` ("nobody", "poll" or
    "webhook"): what its delivery.waiting event adds at the source."""

    def prepare(stack: Stack) -> Action:
        if listener == "poll":
            _poll_cursor(stack)
        elif listener == "webhook":
            delivery = {"mode": "webhook", "url": EVENTS_URL, "secret": EVENTS_SECRET}
            stack.mcp(
                "watcher",
                "events/subscribe",
                name="delivery.waiting",
                arguments={},
                delivery=delivery,
            )
        return _message(stack)

    return prepare


def polled(events: int) -> Callable[[Stack], Action]:
    """The watcher's poll that reads ``events`` new events."""

    def prepare(stack: Stack) -> Action:
        cursor = _poll_cursor(stack)
        for _ in range(events):
            _message(stack)()

        def poll() -> Any:
            page = stack.mcp(
                "watcher", "events/poll", name="delivery.waiting", arguments={}, cursor=cursor
            )
            assert len(page["events"]) == events, page
            return page

        return poll

    return prepare


def delivered_to_subscriber(stack: Stack) -> Action:
    """The notify function's attempt at a delivery.waiting event for a webhook subscription."""
    from vigil.entrypoints import notify

    worker = stack.notifier or _notifier(stack)
    sqs, url = worker.alarms.sqs, os.environ["NOTIFY_QUEUE_URL"]
    _drain(sqs, url)
    sent_to("webhook")(stack)()
    [message] = _drain(sqs, url)
    event = {"Records": [{"messageId": message["MessageId"], "body": message["Body"]}]}
    sent = stack.sent["webhook"]

    def deliver() -> Any:
        before = sent()
        result = notify.handler(event)
        assert result == {"batchItemFailures": []}, stack.logs.last
        assert sent() == before + 1, "the event was not posted"
        return result

    return deliver


EVENT_STEPS = (
    Step("quiet", "`send`, to an agent nobody listens for", "api", sent_to("nobody")),
    Step("to_poller", "`send`, to an agent that polls", "api", sent_to("poll")),
    Step("to_webhook", "`send`, to an agent with a webhook", "api", sent_to("webhook")),
    Step("poll_one", "`events/poll`, one event", "api", polled(1)),
    Step("poll_page", f"`events/poll`, {EVENTS_PAGE} events", "api", polled(EVENTS_PAGE)),
    Step("webhook", "notify, the webhook's event delivered", "notify", delivered_to_subscriber),
)


def measure_events(repeats: int, log_level: str) -> dict[str, Measured]:
    from moto import mock_aws

    rows = {}
    for step in EVENT_STEPS:
        with mock_aws():
            stack = Stack.up(Meter(), SdkTime(), LogBytes(), log_level)
            rows[step.key] = measure(stack, step, repeats)
    return rows


def report_events(rows: dict[str, Measured], prices: Prices) -> None:
    """What an agent's event costs, by poll and by webhook, per million events."""
    per_ms = prices.memory_gb * PRICE["lambda_arm64_gb_second"] / 1000
    quiet = rows["quiet"]

    def source(row: Measured) -> float:
        return (
            row.requests_usd
            - quiet.requests_usd
            + (row.median_ms - quiet.median_ms) * per_ms
            + prices.logs_usd(row)
            - prices.logs_usd(quiet)
        )

    print("\n8. Agents' events: a delivery.waiting event by poll and by webhook")
    print(f"{'':44} {'WRU':>5} {'RRU':>5} {'ms':>6} {'own':>5}   calls")
    for row in rows.values():
        print(
            f"  {row.step.label:42} {row.write_units:5g} {row.read_units:5g} "
            f"{row.median_ms:6.1f} {_own(row):5.1f}   {row.calls}"
        )
    for key in ("to_poller", "to_webhook"):
        extra = _counted(rows[key])
        extra.subtract(_counted(quiet))
        print(f"  source's extra, {rows[key].step.label}: {_calls(extra)}")
    print(
        "\n   USD per million events (the source's extra over nobody listening; a poll's request, "
        "duration and logs shared by the events it reads; the notify function's attempt with "
        f"the event source mapping's {ESM_SQS_REQUESTS} SQS requests)"
    )
    for label, poll, events in (
        ("poll, one event a poll", rows["poll_one"], 1),
        (f"poll, {EVENTS_PAGE} events a poll", rows["poll_page"], EVENTS_PAGE),
    ):
        reading = prices.total_usd(poll) / events
        total = source(rows["to_poller"]) + reading
        print(
            f"  {label:32} source {source(rows['to_poller']) * 1e6:6.2f}  "
            f"poll {reading * 1e6:6.2f}  total {total * 1e6:6.2f}"
        )
    webhook = rows["webhook"]
    attempt = (
        webhook.requests_usd
        + prices.duration_usd(webhook.median_ms)
        + prices.logs_usd(webhook)
        + ESM_SQS_REQUESTS * PRICE["sqs_request"]
    )
    total = source(rows["to_webhook"]) + attempt
    print(
        f"  {'webhook':32} source {source(rows['to_webhook']) * 1e6:6.2f}  "
        f"notify {attempt * 1e6:6.2f}  total {total * 1e6:6.2f}"
    )
    print(
        f"   Nobody listening costs the feed's read: {quiet.read_units:g} RRU in all for the send "
        "above, of which one consistent GetItem of the watcher's feed record "
        f"(${PRICE['dynamodb_read_unit'] * 1e6:.3f} per million)."
    )


if __name__ == "__main__":
    main()
