"""What logs and metrics cost a cold start: Powertools' Logger and Metrics, or Vigil's own.

Usage:
    .venv/bin/python scripts/emf_cold_start.py [--rounds 201] [--powertools 3.37.0]

Round after round, each variant in turn (so that the machine's other load falls on all of them
alike), a fresh Python 3.13 interpreter (the runtime's version) with PYTHONDONTWRITEBYTECODE,
so nothing is written between runs, times in itself, on the wall's clock and on its own CPU
clock:

- `import boto3` (the runtime's, with bytecode): the reference;
- Powertools (installed for the measurement only, into build/, with bytecode): the import of
  Logger and Metrics, `Logger()`, `Metrics(namespace="Vigil")`, and one metric added and
  flushed (one EMF line);
- Vigil's own (src/vigil/observability.py, compiled as the build compiles it): its import,
  the logger, and one metric written (one EMF line);
- both again after `import botocore.session` (untimed), as in the functions, where botocore
  is imported before them, so that what they share with it is not counted twice.

Prints, for each variant and each step, the median and the 90th percentile in ms. Needs
Python 3.13: python3.13 on PATH (pyenv: PYENV_VERSION=3.11.7:3.13.0) or --python.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from ab_cold_start import WORK, find_python, install_boto3

ROOT = Path(__file__).resolve().parents[1]
POWERTOOLS = "3.37.0"

# Each child marks its steps on two clocks: the wall's, and its own CPU time, which the
# machine's other load does not move.
_CLOCKS = """
import time
marks = []
def mark():
    marks.append((time.perf_counter(), time.process_time()))
"""
_REPORT = """
print(json.dumps([[(b[i] - a[i]) * 1000 for a, b in zip(marks, marks[1:])] for i in (0, 1)]))
"""
_BOTO3 = """
mark()
import boto3
mark()
import json
"""
_POWERTOOLS = """
mark()
from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
mark()
logger = Logger(service="vigil")
mark()
metrics = Metrics(namespace="Vigil", service="vigil")
mark()
metrics.add_metric(name="ColdStart", unit=MetricUnit.Count, value=1)
metrics.flush_metrics()
mark()
import json
"""
_OWN = """
mark()
from vigil.observability import get_logger, metrics
mark()
logger = get_logger("vigil.api")
mark()
# (the emitter is built by the import: this step is empty)
mark()
metrics.cold_start("api")
mark()
import json
"""
_AFTER_BOTOCORE = "import botocore.session\n"
STEPS = ("import", "logger", "metrics", "one metric written")


def install_powertools(python: str, version: str) -> Path:
    """Powertools for Python 3.13, compiled as pip installs it, for this measurement only."""
    target = WORK / f"powertools-{version}"
    if not (target / "aws_lambda_powertools").is_dir():
        install = ["-m", "pip", "install", "--quiet", "--target", str(target)]
        subprocess.run([python, *install, f"aws-lambda-powertools=={version}"], check=True)
    return target


def compile_own(python: str) -> Path:
    """Vigil's package with only what observability.py needs, compiled by Python 3.13."""
    target = WORK / "own-observability"
    shutil.rmtree(target, ignore_errors=True)
    (target / "vigil").mkdir(parents=True)
    for name in ("__init__.py", "observability.py"):
        shutil.copy(ROOT / "src" / "vigil" / name, target / "vigil" / name)
    subprocess.run([python, "-m", "compileall", "-q", str(target)], check=True)
    return target


Sample = tuple[list[float], list[float]]


def once(python: str, code: str, path: list[Path]) -> Sample:
    """The child's steps in ms, on the wall's clock and on its CPU clock."""
    environment = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": os.pathsep.join(map(str, path)),
        "PYTHONDONTWRITEBYTECODE": "1",
        # As in Lambda, where both write their EMF lines and Powertools looks at it.
        "AWS_LAMBDA_FUNCTION_NAME": "vigil-api",
    }
    done = subprocess.run(
        [python, "-s", "-c", code], env=environment, capture_output=True, text=True, check=True
    )
    wall, cpu = json.loads(done.stdout.strip().splitlines()[-1])
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=201)
    parser.add_argument("--powertools", default=POWERTOOLS, help="the version to measure")
    parser.add_argument("--python", help="a Python 3.13 interpreter")
    args = parser.parse_args()
    python = find_python(args.python)
    boto3 = install_boto3(python)
    powertools = install_powertools(python, args.powertools)
    own = compile_own(python)
    rows: dict[str, tuple[str, list[Path]]] = {
        "import boto3": (_BOTO3, [boto3]),
        f"Powertools {args.powertools} Logger + Metrics": (_POWERTOOLS, [powertools]),
        "own logger + EMF emitter": (_OWN, [own]),
        f"Powertools {args.powertools}, after botocore": (
            _AFTER_BOTOCORE + _POWERTOOLS,
            [powertools, boto3],
        ),
        "own, after botocore": (_AFTER_BOTOCORE + _OWN, [own, boto3]),
    }
    samples: dict[str, list[Sample]] = {row: [] for row in rows}
    for _ in range(args.rounds):  # interleaved, so the machine's load falls on every row alike
        for row, (code, path) in rows.items():
            samples[row].append(once(python, _CLOCKS + code + _REPORT, path))

    def figures(values: list[float]) -> str:
        return f"{statistics.median(values):7.1f} {statistics.quantiles(values, n=10)[-1]:7.1f}"

    print(f"Python 3.13 ({python}), {args.rounds} interleaved rounds, ms: median and p90")
    print(f"{'':44} {'wall':>7} {'p90':>7} {'cpu':>7} {'p90':>7}")
    for row in rows:
        totals = [[sum(sample[clock]) for sample in samples[row]] for clock in (0, 1)]
        print(f"{row:44} {figures(totals[0])} {figures(totals[1])}")
        if len(samples[row][0][0]) == len(STEPS):
            for step, name in enumerate(STEPS):
                wall, cpu = ([sample[clock][step] for sample in samples[row]] for clock in (0, 1))
                print(f"  {name:42} {figures(list(wall))} {figures(list(cpu))}")


if __name__ == "__main__":
    sys.exit(main())
