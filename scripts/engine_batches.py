"""Whether the local engine would take a batch's beats faster as PartiQL batches: 1,000 steady
beats' conditional writes to DynamoDB Local, as UpdateItem (what a beat is) and as
BatchExecuteStatement of 25 UPDATE ... RETURNING ALL NEW * statements, ten requests at a time
each, alternating (docs/PERFORMANCE.md, "Beats in batches, locally").

Usage: VIGIL_DYNAMODB_LOCAL=$PWD/.tools/dynamodb-local .venv/bin/python scripts/engine_batches.py
    [--switches 1000] [--rounds 2]
Traffic goes to the local runtime's engines on 127.0.0.1 only. moto cannot run these
statements (it fails on RETURNING and on arithmetic), which is why the product does not use them.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PER_STATEMENT_BATCH = 25  # BatchExecuteStatement's limit


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--switches", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    os.environ.setdefault("VIGIL_LOG_LEVEL", "WARNING")
    import boto3

    from vigil.local.runtime import start

    count = args.switches - args.switches % PER_STATEMENT_BATCH
    with tempfile.TemporaryDirectory(prefix="vigil-engine-") as state_dir:
        runtime = start(port=0, state_dir=Path(state_dir), template=ROOT / "template.yaml")
        with runtime:
            # The runtime's environment points DynamoDB at its front, with its key.
            client = boto3.client("dynamodb")
            table = os.environ["TABLE_NAME"]

            def key(n: int) -> dict[str, Any]:
                return {"pk": {"S": f"NS#bench#SW#scope-{n}"}, "sk": {"S": "SWITCH"}}

            for n in range(count):
                client.put_item(
                    TableName=table,
                    Item={
                        **key(n),
                        "state": {"S": "armed"},
                        "holder": {"S": "agent"},
                        "beats": {"N": "1"},
                        "version": {"N": "1"},
                        "recent": {"M": {}},
                        "deadline": {"N": "100"},
                        "alarm_due": {"N": "100"},
                        "sweep": {"S": "SWEEP#1"},
                    },
                )

            def update(n: int, deadline: int) -> None:
                # A steady beat's write, as DynamoSwitches.beat_switch makes it.
                client.update_item(
                    TableName=table,
                    Key=key(n),
                    UpdateExpression=(
                        "SET deadline = :d, #r.#s = :m, beats = beats + :one, "
                        "version = version + :one"
                    ),
                    ConditionExpression=(
                        "#st = :armed AND holder = :h AND deadline > :now AND alarm_due <= :d "
                        "AND attribute_exists(#r) AND attribute_not_exists(notify_address)"
                    ),
                    ExpressionAttributeNames={"#r": "recent", "#s": "12", "#st": "state"},
                    ExpressionAttributeValues={
                        ":d": {"N": str(deadline)},
                        ":m": {"N": "5"},
                        ":one": {"N": "1"},
                        ":armed": {"S": "armed"},
                        ":h": {"S": "agent"},
                        ":now": {"N": "50"},
                    },
                    ReturnValues="ALL_NEW",
                )

            def statements(first: int, deadline: int) -> None:
                statement = (
                    f'UPDATE "{table}" SET deadline = ? SET recent."12" = ? '
                    "SET beats = beats + ? SET version = version + ? "
                    'WHERE pk = ? AND sk = ? AND "state" = ? AND holder = ? AND deadline > ? '
                    "AND alarm_due <= ? AND recent IS NOT MISSING AND notify_address IS MISSING "
                    "RETURNING ALL NEW *"
                )
                batch = [
                    {
                        "Statement": statement,
                        "Parameters": [
                            {"N": str(deadline)},
                            {"N": "5"},
                            {"N": "1"},
                            {"N": "1"},
                            key(n)["pk"],
                            key(n)["sk"],
                            {"S": "armed"},
                            {"S": "agent"},
                            {"N": "50"},
                            {"N": str(deadline)},
                        ],
                    }
                    for n in range(first, first + PER_STATEMENT_BATCH)
                ]
                answer = client.batch_execute_statement(Statements=batch)
                refused = [r for r in answer["Responses"] if "Error" in r]
                assert not refused, refused[:1]

            pool = ThreadPoolExecutor(10)
            print(f"{'round':>5} {'UpdateItem/s':>13} {'PartiQL batches, writes/s':>26}")
            for round_ in range(args.rounds):
                deadline = 200 + 2 * round_
                started = time.perf_counter()
                list(pool.map(update, range(count), [deadline] * count))
                single = count / (time.perf_counter() - started)
                started = time.perf_counter()
                firsts = range(0, count, PER_STATEMENT_BATCH)
                list(pool.map(statements, firsts, [deadline + 1] * len(firsts)))
                batched = count / (time.perf_counter() - started)
                print(f"{round_:5d} {single:13.0f} {batched:26.0f}", flush=True)


if __name__ == "__main__":
    main()
