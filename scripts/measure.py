"""Prints the figures quoted in docs/PERFORMANCE.md. Usage: .venv/bin/python scripts/measure.py

1. Import cost: import time of each Lambda handler module, each in a fresh interpreter, beside
   `import boto3` (and the MCP SDK's server, which the handler does not import) in the same run.
   The cold start to a first answer, as Lambda runs the built artifact: scripts/ab_cold_start.py.
2. Warm in-process cost of one tool call (median, p99), on the in-memory store and on DynamoDB
   (moto, in-process), and the AWS API calls each tool makes, counted at the botocore layer.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
os.environ["VIGIL_LOG_LEVEL"] = "WARNING"  # one log line per call would swamp the figures
RUNS = int(os.environ.get("MEASURE_RUNS", "15"))
# The functions' handler modules. Their entry points (functions/*/app.py) also build the AWS
# clients at import, in the init phase: scripts/ab_cold_start.py times that, to a first answer.
API_HANDLER = "import vigil.entrypoints.api"
ALARM_HANDLER = "import vigil.entrypoints.alarm"
# What a function's init imports beyond its handler module: the settings, botocore and the AWS
# adapters it builds (vigil.wiring).
FIRST_CALL = (
    "botocore.session, vigil.wiring, vigil.stores.dynamo, vigil.mailboxes.sqs, vigil.alarms.aws"
)


def import_ms(statement: str, path: list[str]) -> float:
    """Median wall time of `statement` in a fresh interpreter, minus the interpreter's start."""
    code = (
        f"import time, sys; sys.path[:0] = {path!r}; t = time.perf_counter(); {statement}; "
        "print((time.perf_counter() - t) * 1000)"
    )
    samples = []
    for _ in range(RUNS):
        command = [sys.executable, "-c", code]
        out = subprocess.run(command, capture_output=True, text=True, check=True)
        samples.append(float(out.stdout.strip()))
    return statistics.median(samples)


def cold_start() -> None:
    src = [str(ROOT / "src")]
    rows = [
        ("import boto3", "import boto3", []),
        ("API handler module (vigil.entrypoints.api)", API_HANDLER, src),
        ("API handler + what its init imports", f"{API_HANDLER}, {FIRST_CALL}", src),
        ("alarm handler module (vigil.entrypoints.alarm)", ALARM_HANDLER, src),
        ("alarm handler + what its init imports", f"{ALARM_HANDLER}, {FIRST_CALL}", src),
        ("MCP SDK server (not imported by Vigil)", "import mcp.server", []),
    ]
    results = [(label, import_ms(stmt, path)) for label, stmt, path in rows]
    boto = results[0][1]
    version = sys.version.split()[0]
    print(f"\nImport of the handlers: median of {RUNS} fresh interpreters (Python {version})")
    print(f"{'what':64} {'ms':>8} {'x boto3':>8}")
    for label, ms in results:
        print(f"{label:64} {ms:8.1f} {ms / boto:8.2f}")


def _timed(call: Any, n: int) -> tuple[float, float]:
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.99) - 1]


def _cases(app: Any, secret: str) -> dict[str, Any]:
    keys = iter(range(10**9))
    return {
        "whoami": lambda: app.call("whoami", {}, secret),
        "list_agents (1 agent)": lambda: app.call("list_agents", {}, secret),
        "list_directory": lambda: app.call("list_directory", {"kind": "agent"}, secret),
        "register": lambda: app.call("register", {"kind": "agent", "name": "b"}, secret),
        "register + idempotency_key": lambda: app.call(
            "register", {"kind": "agent", "name": "c", "idempotency_key": f"k{next(keys)}"}, secret
        ),
        "register, replayed key": lambda: app.call(
            "register", {"kind": "agent", "name": "c", "idempotency_key": "k0"}, secret
        ),
    }


def warm_calls() -> None:
    import boto3
    from moto import mock_aws

    sys.path.insert(0, str(ROOT))
    from tests.conftest import create_tables_from_template
    from vigil.alarms.memory import MemoryAlarms
    from vigil.app import App
    from vigil.attachments.memory import MemoryBlobs
    from vigil.bootstrap import bootstrap_operator
    from vigil.clock import SystemClock
    from vigil.mailboxes.memory import MemoryMailboxQueues
    from vigil.stores.dynamo import DynamoStore
    from vigil.stores.memory import MemoryStore

    os.environ.update(AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x")
    os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
    os.environ.pop("AWS_ENDPOINT_URL", None)
    n = int(os.environ.get("MEASURE_CALLS", "300"))
    with mock_aws():
        client = boto3.client("dynamodb")
        calls: Counter[str] = Counter()
        client.meta.events.register(
            "before-call.*.*", lambda model, **_: calls.update([model.name])
        )
        table = create_tables_from_template(client)["VigilTable"]
        stores = {"memory": MemoryStore(), "dynamodb (moto)": DynamoStore(client, table)}
        print(f"\nWarm in-process tool calls: {n} calls each, milliseconds")
        print(f"{'tool':30} {'store':16} {'median':>8} {'p99':>8}   AWS calls per call")
        for store_name, store in stores.items():
            queues = MemoryMailboxQueues(SystemClock())
            app = App(
                store, SystemClock(), queues=queues, alarms=MemoryAlarms(), blobs=MemoryBlobs()
            )
            _, secret = bootstrap_operator(store, SystemClock(), "bench", "Ops")
            app.call("register", {"kind": "agent", "name": "a"}, secret)
            for label, call in _cases(app, secret).items():
                calls.clear()
                call()
                shown = ", ".join(f"{k} {v}" for k, v in sorted(calls.items())) or "-"
                median, p99 = _timed(call, n)
                print(f"{label:30} {store_name:16} {median:8.3f} {p99:8.3f}   {shown}")


if __name__ == "__main__":
    cold_start()
    warm_calls()
