"""One client beating a fleet of scopes against the local runtime: single heartbeats against
heartbeat_batch, side by side in one run (alternating, on the same runtime and table).

Usage: .venv/bin/python scripts/fleet_rate.py [--scopes 1000] [--batch 50] [--seconds 10]
    [--rounds 2]
Traffic goes to 127.0.0.1 only. Each scope is armed first (in batches); then, for ``--rounds``
rounds, the client beats the scopes one call each for ``--seconds``, then in batches of
``--batch`` for ``--seconds``, cycling through the scopes; it prints beats per second of each
way and their ratio, and the CPU time this process (the client and the runtime's HTTP server
and handler; not the DynamoDB engine, a process of its own) spent per beat.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WINDOW = 3600


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--scopes", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT / "src"), str(ROOT / "scripts")]
    os.environ.setdefault("VIGIL_LOG_LEVEL", "WARNING")
    from lateness import command_line
    from load import Latencies, Rest

    from vigil.local.runtime import start

    scopes = [f"fleet-{n}" for n in range(args.scopes)]
    batches = [scopes[i : i + args.batch] for i in range(0, len(scopes), args.batch)]

    def beats(names: list[str]) -> list[dict[str, object]]:
        return [{"scope": name, "expect_within_seconds": WINDOW} for name in names]

    with tempfile.TemporaryDirectory(prefix="vigil-fleet-") as state_dir:
        runtime = start(port=0, state_dir=Path(state_dir), template=ROOT / "template.yaml")
        with runtime:
            operator = Rest(runtime.rest_url, runtime.operator_secret, Latencies())
            issued = operator.call("register", kind="agent", name="orchestrator")
            client = Rest(runtime.rest_url, issued["secret"], Latencies())
            for names in batches:
                armed = client.call("heartbeat_batch", beats=beats(names))
                assert armed["failed"] == 0, armed

            cpu: dict[str, list[float]] = {"single": [], "batched": []}

            def single(seconds: float) -> float:
                done, stop_at = 0, time.monotonic() + seconds
                started = time.process_time()
                while time.monotonic() < stop_at:
                    client.call(
                        "heartbeat", scope=scopes[done % len(scopes)], expect_within_seconds=WINDOW
                    )
                    done += 1
                cpu["single"].append((time.process_time() - started) / done)
                return done / seconds

            def batched(seconds: float) -> float:
                done, calls, stop_at = 0, 0, time.monotonic() + seconds
                started = time.process_time()
                while time.monotonic() < stop_at:
                    names = batches[calls % len(batches)]
                    answer = client.call("heartbeat_batch", beats=beats(names))
                    assert answer["failed"] == 0, answer
                    done, calls = done + len(names), calls + 1
                cpu["batched"].append((time.process_time() - started) / done)
                return done / seconds

            rates: dict[str, list[float]] = {"single": [], "batched": []}
            for _ in range(args.rounds):
                rates["single"].append(single(args.seconds))
                rates["batched"].append(batched(args.seconds))
            client.close()
            operator.close()

    print(f"# {command_line(sys.argv[1:], 'scripts/fleet_rate.py')}")
    print(f"{'way':30} {'beats/s per round':>24} {'median':>8} {'CPU ms a beat':>14}")
    for way, label in (
        ("single", "heartbeat, one call a beat"),
        ("batched", f"heartbeat_batch of {args.batch}"),
    ):
        shown = ", ".join(f"{rate:.1f}" for rate in rates[way])
        cpu_ms = statistics.median(cpu[way]) * 1000
        print(f"{label:30} {shown:>24} {statistics.median(rates[way]):8.1f} {cpu_ms:14.2f}")
    ratio = statistics.median(rates["batched"]) / statistics.median(rates["single"])
    saved = statistics.median(cpu["single"]) / statistics.median(cpu["batched"])
    print(f"batched / single: {ratio:.1f}x the beats a second; {saved:.1f}x less CPU a beat here")


if __name__ == "__main__":
    main()
