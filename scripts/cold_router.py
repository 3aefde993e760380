"""The API function's cold start up to a ready router: importing its handler module and
building everything its first call uses (the store, the queues, the alarms, the file store and
their AWS clients), in fresh interpreters, for one or more source trees side by side.

Usage: .venv/bin/python scripts/cold_router.py [--runs 7] [--rounds 3] SRC [SRC ...]
(each SRC a tree's src/ folder, e.g. src or /tmp/before/src). Nothing is sent anywhere: the
clients are built, not used.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

_CODE = r"""
import os, time
t = time.perf_counter()
from vigil.entrypoints import api
api.router()
print((time.perf_counter() - t) * 1000)
"""
_ENV = {
    "TABLE_NAME": "vigil",
    "TIMER_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/timers",
    "SCHEDULE_GROUP": "alarms",
    "SCHEDULER_ROLE_ARN": "arn:aws:iam::123456789012:role/scheduler",
    "ALARM_FUNCTION_ARN": "arn:aws:lambda:us-east-1:123456789012:function:alarm",
    "ALARM_DLQ_ARN": "arn:aws:sqs:us-east-1:123456789012:alarm-dlq",
    "MAILBOX_QUEUE_PREFIX": "vigil-mb",
    "ATTACHMENTS_BUCKET": "vigil-attachments",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "x",
    "AWS_SECRET_ACCESS_KEY": "x",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
}


def once(src: str) -> float:
    env = {**os.environ, **_ENV, "PYTHONPATH": src}
    done = subprocess.run(
        [sys.executable, "-c", _CODE], env=env, capture_output=True, text=True, check=True
    )
    return float(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("src", nargs="+")
    args = parser.parse_args()
    times: dict[str, list[float]] = {src: [] for src in args.src}
    for _ in range(args.rounds):  # alternating, so load falls on every tree alike
        for src in args.src:
            times[src] += [once(src) for _ in range(args.runs)]
    for src, found in times.items():
        print(f"{src:30} median {statistics.median(found):7.1f} ms over {len(found)} interpreters")


if __name__ == "__main__":
    main()
