"""Cold start to the first answer, as Lambda runs it: one or more checkouts side by side.

Usage:
    git worktree add /tmp/before <commit>
    .venv/bin/python scripts/ab_cold_start.py [--rounds 21] [/tmp/before .]

For each checkout (default: this one), builds the API and alarm functions' artifacts with its
own Makefile (`make build-ApiFunction`, as `sam build` does, for this machine's platform so they
can run here), and a copy of the API artifact without bytecode. Then, round after round, each
variant in turn, fresh Python 3.13 interpreters (the runtime's version; boto3 installed beside
them as the runtime ships it, with bytecode) with PYTHONDONTWRITEBYTECODE, so nothing is written
between runs, time:

- `import boto3` alone;
- the API function: `import app` (its init phase), then an MCP `initialize` and a steady
  `heartbeat` through its handler (the first answer), against a moto server in this process,
  whose own time serving them is measured and taken out of the answer; with
  AWS_LAMBDA_INITIALIZATION_TYPE=on-demand (a cold start without SnapStart: init and answer
  both wait), and =snap-start (init is what the snapshot holds; the answer is what a restored
  sandbox's first request runs);
- the alarm function: `import app` (its init phase);
- for the last checkout, the on-demand cold start step by step: what it spends its time on.

Prints medians and each total as a multiple of `import boto3`. Needs Python 3.13: python3.13
on PATH (pyenv: PYENV_VERSION=3.11.7:3.13.0) or --python.
"""

from __future__ import annotations

import argparse
import glob
import importlib.metadata
import json
import logging
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "build" / "cold_start"
VERSION = "3.13"

# Each child marks its steps on two clocks: the wall's, and its own CPU time, which the
# machine's other load and the AWS stand-in's work do not move.
_CLOCKS = """
import time
marks = []
def mark():
    marks.append((time.perf_counter(), time.process_time()))
def report():
    print([[(b[i] - a[i]) * 1000 for a, b in zip(marks, marks[1:])] for i in (0, 1)])
mark()
"""
_BOTO3 = (
    _CLOCKS
    + """
import boto3
mark()
report()
"""
)
_INIT = (
    _CLOCKS
    + """
import app
mark()
report()
"""
)
_FIRST_ANSWER = (
    _CLOCKS
    + """
import app
mark()
answers = [app.handler(event) for event in EVENTS]
mark()
import json
initialized, beat = (json.loads(answer["body"])["result"] for answer in answers)
assert initialized["protocolVersion"] and beat["isError"] is False, answers
report()
"""
)
# The same cold start, on-demand, step by step (importing the handler's module, not app.py,
# so that nothing is built at import whatever the checkout; with the collector off until the
# router is built, as app.py has it).
_STEPS = (
    "import gc\ngc.disable()\n"
    + _CLOCKS
    + """
from pydantic import BaseModel
mark()
from vigil.entrypoints import api
mark()
import botocore.session
mark()
api.router()
mark()
gc.freeze()
gc.enable()
answers = [api.handler(event) for event in EVENTS]
mark()
report()
"""
)
STEPS = (
    "import pydantic's models",
    "import Vigil's modules (records, stores, transports)",
    "import botocore, after those",
    "build the router: the DynamoDB client",
    "initialize + a steady heartbeat (its tool's module)",
)


def find_python(given: str | None) -> str:
    """A Python 3.13 interpreter: the one given, python3.13 on PATH, or pyenv's."""
    pyenv = glob.glob(os.path.expanduser(f"~/.pyenv/versions/{VERSION}*/bin/python{VERSION}"))
    candidates = [given] if given else [f"python{VERSION}", *pyenv]
    for candidate in candidates:
        path = shutil.which(str(candidate))
        # The interpreter itself, not a shim (pyenv's), which the children's bare PATH breaks.
        code = "import sys; print('%d.%d' % sys.version_info[:2], sys.executable)"
        check = [path or "", "-c", code]
        found = subprocess.run(check, capture_output=True, text=True).stdout.split() if path else []
        if found[:1] == [VERSION]:
            return found[1]
    sys.exit(f"no Python {VERSION} among {candidates}: pass --python")


def install_boto3(python: str) -> Path:
    """boto3 for Python 3.13, compiled as the runtime ships it, at this environment's version."""
    version = importlib.metadata.version("boto3")
    target = WORK / f"boto3-{version}"
    if not (target / "boto3").is_dir():
        install = ["-m", "pip", "install", "--quiet", "--target", str(target)]
        subprocess.run([python, *install, f"boto3=={version}"], check=True)
    return target


def build(tree: Path, label: str, python: str) -> dict[str, Path]:
    """The tree's artifacts, built by its own Makefile; the API's also without bytecode."""
    platform_tag = f"manylinux2014_{platform.machine()}"
    built: dict[str, Path] = {}
    for function, target in (("Api", "api"), ("Alarm", "alarm")):
        directory = WORK / label / target
        shutil.rmtree(directory, ignore_errors=True)
        variables = {
            "ARTIFACTS_DIR": directory,
            "LAMBDA_PLATFORM": platform_tag,
            "LAMBDA_PYTHON": python,
            "PYTHON": sys.executable,
        }
        make = ["make", "-s", "-C", str(tree), f"build-{function}Function"]
        make += [f"{name}={value}" for name, value in variables.items()]
        subprocess.run(make, check=True, capture_output=True)
        built[target] = directory
    bare = WORK / label / "api-no-bytecode"
    shutil.rmtree(bare, ignore_errors=True)
    shutil.copytree(built["api"], bare, ignore=shutil.ignore_patterns("__pycache__"))
    built["api-no-bytecode"] = bare
    return built


def event(body: dict[str, Any], secret: str | None = None) -> dict[str, Any]:
    """An API Gateway HTTP API (payload 2.0) event for POST /mcp."""
    headers = {"content-type": "application/json", "accept": "application/json"}
    if secret:
        headers["authorization"] = f"Bearer {secret}"
    return {
        "version": "2.0",
        "rawPath": "/mcp",
        "headers": headers,
        "requestContext": {"http": {"method": "POST", "path": "/mcp"}, "requestId": "cold"},
        "isBase64Encoded": False,
        "body": json.dumps({"jsonrpc": "2.0", "id": 1, **body}),
    }


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"method": "tools/call", "params": {"name": name, "arguments": arguments}}


BEAT = {"scope": "cold-start", "expect_within_seconds": 86_400}


class Served:
    """WSGI middleware: the time the AWS stand-in spends serving, summed, to take it out."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seconds = 0.0

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        started = time.perf_counter()
        body = list(self.app(environ, start_response))
        self.seconds += time.perf_counter() - started
        return body


def stand_in() -> tuple[dict[str, str], list[dict[str, Any]], Served]:
    """A moto server with the template's resources and an agent whose switch is armed: the
    functions' environment, the events of a first answer (initialize, a steady beat), and the
    server's clock of its own work."""
    from vigil.infra.template import translate
    from vigil.local.moto_server import LocalMotoServer, Signers
    from vigil.local.provisioning import provision
    from vigil.local.stack import (
        LOCAL_ACCESS_KEY_ID,
        LOCAL_SECRET_ACCESS_KEY,
        UNGUARDED_KEY,
        AwsClients,
        LocalNames,
    )

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per request otherwise
    moto = LocalMotoServer(
        ip_address="127.0.0.1", port=0, verbose=False, signers=Signers(UNGUARDED_KEY)
    )
    moto.start()
    served = moto._server.app = Served(moto._server.app)  # werkzeug reads it per request
    host, port = moto.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    names = LocalNames()
    deployment = provision(translate(ROOT / "template.yaml"), AwsClients.local(endpoint), names)
    env = {
        **deployment.environment(),
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": LOCAL_ACCESS_KEY_ID,
        "AWS_SECRET_ACCESS_KEY": LOCAL_SECRET_ACCESS_KEY,
        "AWS_DEFAULT_REGION": names.region,
        "AWS_REGION": names.region,
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "VIGIL_LOG_LEVEL": "WARNING",
    }
    os.environ.update(env)
    from vigil.bootstrap import bootstrap_operator
    from vigil.clock import SystemClock
    from vigil.entrypoints import api
    from vigil.wiring import store

    _, operator = bootstrap_operator(store(), SystemClock(), "cold", "Ops")
    registered = api.handler(event(call("register", {"kind": "agent", "name": "w"}), operator))
    secret = json.loads(registered["body"])["result"]["structuredContent"]["secret"]
    api.handler(event(call("heartbeat", BEAT), secret))  # arms the switch: later beats are steady
    initialize = {
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "cold", "version": "1"},
        },
    }
    return env, [event(initialize), event(call("heartbeat", BEAT), secret)], served


Sample = tuple[list[float], list[float], float]


def once(python: str, code: str, path: list[Path], env: dict[str, str], served: Served) -> Sample:
    """The child's steps in ms on the wall's clock (the last without the time the AWS stand-in
    spent meanwhile) and on its CPU clock, and the stand-in's time."""
    environment = {
        **env,
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": os.pathsep.join(map(str, path)),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    before = served.seconds
    done = subprocess.run(
        [python, "-s", "-c", code], env=environment, capture_output=True, text=True, check=True
    )
    wall, cpu = json.loads(done.stdout.strip().splitlines()[-1])
    aws = (served.seconds - before) * 1000
    return [*wall[:-1], wall[-1] - aws], cpu, aws


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("trees", nargs="*", type=Path, default=[ROOT])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--python", help=f"a Python {VERSION} interpreter")
    args = parser.parse_args()
    python = find_python(args.python)
    boto3 = install_boto3(python)
    artifacts = {
        str(tree): build(tree.resolve(), f"tree{n}", python) for n, tree in enumerate(args.trees)
    }
    env, events, served = stand_in()
    first_answer = f"EVENTS = {events!r}\n{_FIRST_ANSWER}"
    on_demand = {**env, "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand"}
    snap_start = {**env, "AWS_LAMBDA_INITIALIZATION_TYPE": "snap-start"}
    rows: dict[str, tuple[str, list[Path], dict[str, str]]] = {
        "import boto3": (_BOTO3, [boto3], env)
    }
    for label, built in artifacts.items():
        api, bare = [built["api"], boto3], [built["api-no-bytecode"], boto3]
        rows[f"{label}: API, on-demand"] = (first_answer, api, on_demand)
        rows[f"{label}: API, SnapStart init"] = (first_answer, api, snap_start)
        rows[f"{label}: API, on-demand, no bytecode"] = (first_answer, bare, on_demand)
        rows[f"{label}: alarm, init"] = (_INIT, [built["alarm"], boto3], on_demand)
    last = str(args.trees[-1])
    steps = f"{last}: API, on-demand, step by step"
    rows[steps] = (f"EVENTS = {events!r}\n{_STEPS}", [artifacts[last]["api"], boto3], on_demand)
    samples: dict[str, list[Sample]] = {row: [] for row in rows}
    for _ in range(args.rounds):  # interleaved, so the machine's load falls on every row alike
        for row, (code, path, variables) in rows.items():
            samples[row].append(once(python, code, path, variables, served))

    def median(row: str, clock: int, step: int | None = None) -> float:
        """The median of one step, or of the sum of all steps, on one clock (0 wall, 1 CPU)."""
        found = samples[row]
        return statistics.median(sum(s[clock]) if step is None else s[clock][step] for s in found)

    print(f"Python {VERSION} ({python}), median of {args.rounds} interleaved rounds, ms")
    for label, built in artifacts.items():
        compiled = sum(1 for _ in built["api"].rglob("*.pyc"))
        print(f"  {label}: the Makefile's API artifact holds {compiled} .pyc files")
    print(
        "  init: import of app.py (what SnapStart snapshots); answer: initialize + a steady "
        "heartbeat, without the time the AWS stand-in spent on them (aws); total: init + answer;"
        " cpu: the same on the child's CPU clock"
    )
    wall_boto3, cpu_boto3 = median("import boto3", 0), median("import boto3", 1)
    columns = ("init", "answer", "total", "x boto3", "cpu", "x boto3", "aws")
    print(f"{'':50} " + " ".join(f"{name:>7}" for name in columns))
    for row in rows:
        if row == steps:
            continue
        total, cpu = median(row, 0), median(row, 1)
        answer = len(samples[row][0][0]) == 2
        cells = [
            f"{median(row, 0, 0):7.1f}",
            f"{median(row, 0, 1):7.1f}" if answer else f"{'':7}",
            f"{total:7.1f}",
            f"{total / wall_boto3:7.2f}",
            f"{cpu:7.1f}",
            f"{cpu / cpu_boto3:7.2f}",
            f"{statistics.median(s[2] for s in samples[row]):7.1f}" if answer else "",
        ]
        print(f"{row:50} " + " ".join(cells))
    print(f"\n{steps}: {'ms':>7} {'x boto3':>7} {'cpu':>7} {'x boto3':>7}")
    for step, name in enumerate(STEPS):
        wall, cpu = median(steps, 0, step), median(steps, 1, step)
        print(f"  {name:58} {wall:7.1f} {wall / wall_boto3:7.2f} {cpu:7.1f} {cpu / cpu_boto3:7.2f}")


if __name__ == "__main__":
    main()
