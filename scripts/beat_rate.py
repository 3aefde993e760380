"""Steady heartbeats per second over HTTP against the local runtime, from one client and from
eight, for one or more source trees side by side (``scripts/bench.py``'s ``throughput``).

Usage: .venv/bin/python scripts/beat_rate.py [--seconds 5] ROOT [ROOT ...]
(each ROOT a checkout, e.g. . or /tmp/before). Traffic goes to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

# One fresh process per measurement: a runtime's AWS stand-in lives as long as its process.
_CODE = r"""
import sys
sys.path.insert(0, sys.argv[1] + "/scripts")
import bench
rate = bench.throughput(int(sys.argv[3]), float(sys.argv[2]))
print(f"{rate['beats_per_second']:.1f}", flush=True)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("roots", nargs="+")
    args = parser.parse_args()
    for clients in (1, 8):
        for root in args.roots:
            env = {**os.environ, "PYTHONPATH": f"{root}/src", "VIGIL_LOG_LEVEL": "WARNING"}
            done = subprocess.run(
                [sys.executable, "-c", _CODE, root, str(args.seconds), str(clients)],
                env=env,
                capture_output=True,
                text=True,
            )
            if done.returncode != 0:
                sys.exit(f"{root}: the measurement failed:\n{done.stderr[-2000:]}")
            rate = done.stdout.strip().splitlines()[-1]
            print(f"{root:30} {clients} client(s): {rate:>7} beats/s", flush=True)


if __name__ == "__main__":
    main()
