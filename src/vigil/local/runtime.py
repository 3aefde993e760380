"""``vigil local``: the whole stack on this machine, from ``template.yaml``.

No AWS account and no Docker: AWS's DynamoDB Local (a child process) holds the table, moto runs
in-process as the endpoint of every other service, the template's resources are created on
them, the deployed handlers run in this process behind the template's front door (its HTTP API,
or with ``--parameter FrontDoor=FunctionUrl`` its Function URL), and the event pump plays the
Scheduler and the event source mappings. Everything lives in the state directory:
a restart, even after ``kill -9``, goes on from where it was (losing at most the last second
of queues, objects and schedules; never a DynamoDB write that was answered).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import TextIO

from vigil.clock import Clock, SystemClock
from vigil.identity.records import Principal
from vigil.local.contention import ContentionSettings
from vigil.local.deployment import LocalDeployment
from vigil.local.doors import front_door
from vigil.local.lock import hold
from vigil.local.logs import LOG_FILE, log_file_handler, logs_to, on_the_terminal
from vigil.local.provisioning import provision
from vigil.local.pump import EventPump, Handler
from vigil.local.server import LocalHttpServer
from vigil.local.signatures import RuntimeKeys
from vigil.local.stack import DEFAULT_REGION, AwsClients, LocalNames
from vigil.observability import get_logger, log_event
from vigil.store import Store

log = get_logger("vigil.local")

NAMESPACE = "local"
OPERATOR_NAME = "Local operator"
STATE_FILE = "local.json"
KEYS_FILE = "keys.json"
DYNAMODB_DIR = "dynamodb"
MOTO_DIR = "aws"

# The code each function of template.yaml runs: the Makefile copies functions/<dir>/app.py as
# the package's app.py, and each of those only re-exports one of these handlers.
ENTRY_POINTS: Mapping[str, str] = {
    "ApiFunction": "vigil.entrypoints.api:handler",
    "AlarmFunction": "vigil.entrypoints.alarm:handler",
    "NotifyFunction": "vigil.entrypoints.notify:handler",
}
API_FUNCTION = "ApiFunction"
LOCAL_EMAIL_SENDER = "notifications@vigil.localhost"


@dataclass
class LocalRuntime:
    mcp_url: str
    rest_url: str
    openapi_url: str
    console_url: str
    aws_endpoint_url: str
    dynamodb_endpoint_url: str
    # The DynamoDB Local this runtime started (None when it uses one already running).
    engine_pid: int | None
    namespace: str
    operator_id: str
    operator_secret: str
    state_dir: Path
    state_file: Path
    deployment: LocalDeployment
    pump: EventPump
    _closer: contextlib.ExitStack

    def stop(self) -> None:
        """Stops what calls the engines before the engines: the pump (the passes under way
        finish), then the HTTP API (the requests being answered finish, and the pump's batches
        under way meanwhile), then moto, the DynamoDB front and DynamoDB Local."""
        self._closer.close()

    def __enter__(self) -> LocalRuntime:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def load_handlers(deployment: LocalDeployment) -> dict[str, Handler]:
    """Imports each function's handler; call it only once the environment is set."""
    missing = sorted(set(deployment.functions) - set(ENTRY_POINTS))
    if missing:
        raise RuntimeError(f"no local entry point for {', '.join(missing)}: add it to ENTRY_POINTS")
    handlers: dict[str, Handler] = {}
    for logical_id in deployment.functions:
        module, _, name = ENTRY_POINTS[logical_id].partition(":")
        handlers[logical_id] = getattr(importlib.import_module(module), name)
    return handlers


def cold_start() -> None:
    """Drops what handlers built on their first call, as a fresh Lambda sandbox would.

    Handlers keep their settings and clients in ``functools`` caches for the life of the
    sandbox; a new local deployment (another moto port, another table) must not reuse them.
    boto3's default session, through which tests and scripts reach the local table, keeps the
    credentials it first read, and each runtime has keys of its own: it goes too.
    """
    import boto3

    boto3.DEFAULT_SESSION = None
    for name, module in list(sys.modules.items()):
        if not name.startswith("vigil.") or name.startswith("vigil.local"):
            continue
        for value in list(vars(module).values()):
            if getattr(value, "__module__", None) == name and hasattr(value, "cache_clear"):
                value.cache_clear()


@contextlib.contextmanager
def _environment(values: Mapping[str, str], remove: list[str]) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in [*values, *remove]}
    for key in remove:
        os.environ.pop(key, None)
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _aws_environment(
    endpoint_url: str, dynamodb_endpoint_url: str, keys: RuntimeKeys
) -> tuple[dict[str, str], list[str]]:
    """Points every AWS client of this process at moto and DynamoDB Local, signing with the
    runtime's key (and presigning with the presign key), and nothing at a real account."""
    values = {
        "AWS_ENDPOINT_URL": endpoint_url,
        "AWS_ENDPOINT_URL_DYNAMODB": dynamodb_endpoint_url,
        "AWS_ACCESS_KEY_ID": keys.runtime.id,
        "AWS_SECRET_ACCESS_KEY": keys.runtime.secret,
        "PRESIGN_ACCESS_KEY_ID": keys.presign.id,
        "PRESIGN_SECRET_ACCESS_KEY": keys.presign.secret,
        "AWS_DEFAULT_REGION": DEFAULT_REGION,
        "AWS_REGION": DEFAULT_REGION,
        # A profile's credentials or endpoints must not leak in.
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    }
    remove = ["AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"]
    # Another service-specific endpoint would win over AWS_ENDPOINT_URL.
    remove += [
        key for key in os.environ if key.startswith("AWS_ENDPOINT_URL_") and key not in values
    ]
    remove.append("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")
    return values, remove


def _notifications_locally(clients: AwsClients) -> dict[str, str]:
    """What notifications need on the local runtime: receivers on this machine are allowed
    (VIGIL_ENV=local; deployed, private and loopback addresses are refused), and email goes out
    from an identity verified in moto's SES (the NotificationEmailSender parameter's, or
    LOCAL_EMAIL_SENDER), which keeps what it sends for tests to read."""
    from vigil.kit.aws import error_code

    sender = os.environ.get("NOTIFY_EMAIL_SENDER") or LOCAL_EMAIL_SENDER
    try:
        clients.sesv2.create_email_identity(EmailIdentity=sender)
    except Exception as error:
        if error_code(error) != "AlreadyExistsException":
            raise
    return {"VIGIL_ENV": "local", "NOTIFY_EMAIL_SENDER": sender}


def _write_state(path: Path, state: Mapping[str, object]) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    # Created 0600 from the start: it holds the operator's secret.
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as stream:
        os.fchmod(stream.fileno(), 0o600)
        json.dump(state, stream, indent=2)
        stream.write("\n")
        stream.flush()
        os.fsync(stream.fileno())
    os.replace(temporary, path)


def _operator(store: Store, clock: Clock, state_file: Path) -> tuple[Principal, str]:
    """The operator of an earlier run when its secret still opens it, else a new one."""
    from vigil.bootstrap import bootstrap_operator
    from vigil.identity.records import secret_matches

    with contextlib.suppress(FileNotFoundError, ValueError, KeyError):
        saved = json.loads(state_file.read_text(encoding="utf-8"))
        operator = store.get_principal(saved["namespace"], saved["operator_id"])
        secret = saved["operator_secret"]
        if (
            operator is not None
            and operator.status == "active"
            and operator.role == "operator"
            and secret_matches(secret, operator.secret_hash)
        ):
            return operator, secret
    return bootstrap_operator(store, clock, NAMESPACE, OPERATOR_NAME, existing_ok=True)


def default_template() -> Path:
    """The template this package was built with (a link to the checkout's template.yaml)."""
    return Path(__file__).with_name("template.yaml")


def start(
    host: str = "127.0.0.1",
    port: int = 8080,
    state_dir: Path = Path(".vigil"),
    template: Path | None = None,
    clock: Clock | None = None,
    parameters: Mapping[str, str] | None = None,
    dynamodb_endpoint_url: str | None = None,
    contention: bool | ContentionSettings = False,
) -> LocalRuntime:
    """Starts DynamoDB Local, moto, the template's resources, the event pump and the HTTP API.

    Everything lives in ``state_dir`` and survives a restart; the runtime holds it, and one
    started on a state directory another holds raises ``StateDirectoryInUse`` having changed
    nothing there. The logs go to its ``local.log`` too. ``dynamodb_endpoint_url`` names a
    DynamoDB Local already running (the tests share one); by default the runtime starts its
    own. ``contention`` (True, or settings of one's own) has DynamoDB's front refuse what
    DynamoDB would under load: transaction conflicts and throttled partitions
    (``vigil.local.contention``).
    """
    from vigil import wiring
    from vigil.config import Settings
    from vigil.infra.template import translate
    from vigil.local.dynamodb_front import start_front
    from vigil.local.dynamodb_local import database_key, start_dynamodb_local
    from vigil.local.expiry import INDEX_FILE as EXPIRY_INDEX_FILE
    from vigil.local.expiry import ExpiryIndex
    from vigil.local.expiry_sweep import ExpirySweeper
    from vigil.local.moto_server import LocalMotoServer, Signers
    from vigil.local.moto_state import Snapshotter, restore, saved_schedules
    from vigil.stores.dynamo import DynamoStore

    clock = clock or SystemClock()
    state_dir = Path(state_dir)
    template = template or default_template()
    closer = contextlib.ExitStack()
    try:
        state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        lock = hold(state_dir, clock)
        closer.callback(lock.release)
        closer.enter_context(logs_to(log_file_handler(state_dir)))
        keys = RuntimeKeys.new()
        _write_state(state_dir / KEYS_FILE, keys.saved())
        engine_pid = None
        if dynamodb_endpoint_url is None:
            engine = start_dynamodb_local(state_dir / DYNAMODB_DIR)
            closer.callback(engine.stop)
            dynamodb_endpoint_url, engine_pid = engine.endpoint_url, engine.process.pid
        expiry_index = state_dir / DYNAMODB_DIR / EXPIRY_INDEX_FILE
        front = start_front(
            dynamodb_endpoint_url,
            database_key(state_dir / DYNAMODB_DIR),
            {keys.runtime.id: keys.runtime.secret},
            state_dir / DYNAMODB_DIR,
            expiry_index,
            contention=ContentionSettings() if contention is True else contention or None,
        )
        closer.callback(front.stop)
        dynamodb_endpoint_url = front.endpoint_url

        # moto logs every request it serves through werkzeug; the pump polls several a second.
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        restored = restore(state_dir / MOTO_DIR)
        snapshots = Snapshotter(state_dir / MOTO_DIR)
        signers = Signers(keys.runtime)
        moto = LocalMotoServer(
            ip_address="127.0.0.1", port=0, verbose=False, signers=signers, snapshots=snapshots
        )
        for schedule in saved_schedules():
            moto.timetable.note(*schedule)
        moto.start()
        closer.callback(moto.stop)
        snapshots.start()
        closer.callback(snapshots.stop)
        moto_host, moto_port = moto.get_host_and_port()
        endpoint_url = f"http://{moto_host}:{moto_port}"
        closer.enter_context(
            _environment(*_aws_environment(endpoint_url, dynamodb_endpoint_url, keys))
        )

        names = LocalNames(parameters=dict(parameters or {}))
        cfn = translate(template, dict(parameters or {}))
        clients = AwsClients.local(endpoint_url, names.region, dynamodb_endpoint_url, keys.runtime)
        deployment = provision(cfn, clients, names)
        # Before any function runs: a table watched for the first time is then scanned once.
        expiry = ExpirySweeper(clients.dynamodb, ExpiryIndex(expiry_index))
        closer.callback(expiry.index.close)
        expiry.watch(
            {t.name: t.ttl_attribute for t in deployment.tables.values() if t.ttl_attribute}
        )
        # The functions presign for the bucket their settings name, and for that one only.
        signers.allow_presigned(keys.presign, deployment.environment()["ATTACHMENTS_BUCKET"])
        if deployment.ignored:
            log_event(log, "not played locally", resources=deployment.ignored)
        if restored:
            log_event(log, "state restored", services=restored, directory=str(state_dir))

        closer.enter_context(_environment(deployment.environment(), []))
        closer.enter_context(_environment(_notifications_locally(clients), []))
        cold_start()
        closer.callback(cold_start)
        wiring.use_clock(clock)
        closer.callback(wiring.use_clock, SystemClock())
        handlers = load_handlers(deployment)

        settings = Settings.from_env()
        state_file = state_dir / STATE_FILE
        operator, secret = _operator(
            DynamoStore(clients.dynamodb, settings.table_name), clock, state_file
        )

        pump = EventPump(
            deployment, clients, handlers, clock, timetable=moto.timetable, expiry=expiry
        )
        # After the HTTP API's stop: the batches under way finish while its requests do.
        closer.callback(pump.finish)

        api = deployment.functions[API_FUNCTION]
        server = LocalHttpServer(
            front_door(cfn, deployment),
            handlers[API_FUNCTION],
            host=host,
            port=port,
            context_factory=api.context,
            account_id=names.account_id,
            clock=clock,
        )
        closer.callback(server.stop)
        server.start()
        lock.serving(server.url)
        # Links in notifications lead to this server's console; set before the first timer runs.
        # The API page (/docs) calls the API from the server's own origin, which is allowed
        # with those the template names; a page of another origin, one rebinding a name of
        # its own to this address included, is still refused.
        origins = [o for o in os.environ.get("ALLOWED_ORIGINS", "").split(",") if o]
        origins.append(server.url)
        closer.enter_context(
            _environment({"CONSOLE_BASE_URL": server.url, "ALLOWED_ORIGINS": ",".join(origins)}, [])
        )

        pump.start()
        closer.callback(pump.stop_receiving)

        state = {
            "mcp_url": f"{server.url}/mcp",
            "rest_url": f"{server.url}/v1",
            "openapi_url": f"{server.url}/openapi.json",
            "console_url": f"{server.url}/console",
            "namespace": operator.namespace,
            "operator_id": operator.id,
            "operator_secret": secret,
            "aws_endpoint_url": endpoint_url,
            "dynamodb_endpoint_url": dynamodb_endpoint_url,
        }
        _write_state(state_file, state)
    except BaseException:
        closer.close()
        raise
    return LocalRuntime(
        mcp_url=state["mcp_url"],
        rest_url=state["rest_url"],
        openapi_url=state["openapi_url"],
        console_url=state["console_url"],
        aws_endpoint_url=endpoint_url,
        dynamodb_endpoint_url=dynamodb_endpoint_url,
        engine_pid=engine_pid,
        namespace=operator.namespace,
        operator_id=operator.id,
        operator_secret=secret,
        state_dir=state_dir,
        state_file=state_file,
        deployment=deployment,
        pump=pump,
        _closer=closer,
    )


def template_parameter(text: str) -> tuple[str, str]:
    """``Name=Value`` from the command line, as a template parameter."""
    name, separator, value = text.partition("=")
    if not separator or not name:
        raise argparse.ArgumentTypeError(f"expected Name=Value, got {text!r}")
    return name, value


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vigil local", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8080, help="port to listen on (0: any free)")
    parser.add_argument("--state-dir", type=Path, default=Path(".vigil"))
    parser.add_argument(
        "--template", type=Path, default=None, help="a SAM template (default: the packaged one)"
    )
    parser.add_argument(
        "--dynamodb-endpoint",
        default=None,
        metavar="URL",
        help="use a DynamoDB Local already running instead of starting one",
    )
    parser.add_argument(
        "--parameter",
        type=template_parameter,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a template parameter (repeatable)",
    )
    parser.add_argument(
        "--contention",
        action="store_true",
        help="refuse what DynamoDB would under load: transaction conflicts, throttled partitions "
        "(at 1/20 of DynamoDB's per-partition rates)",
    )
    parser.add_argument("--access-log", action="store_true", help="show one short line per request")
    parser.add_argument(
        "--log-json",
        action="store_true",
        help=f"show every log line on the terminal, as JSON (they go to {LOG_FILE} either way)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # The banner is the first thing a person reads; warnings and errors follow it.
    with on_the_terminal(access_log=args.access_log, as_json=args.log_json):
        return _run(args)


def _cannot_start(error: Exception) -> int:
    # A command reports why it cannot start; the traceback helps no one running it.
    print(f"vigil local: cannot start: {type(error).__name__}: {error}", file=sys.stderr)
    return 1


def _run(args: argparse.Namespace) -> int:
    try:
        runtime = start(
            host=args.host,
            port=args.port,
            state_dir=args.state_dir,
            template=args.template,
            parameters=dict(args.parameter),
            dynamodb_endpoint_url=args.dynamodb_endpoint,
            contention=args.contention,
        )
    except OSError as error:
        if error.errno != errno.EADDRINUSE:
            return _cannot_start(error)
        # The one a newcomer meets most: another program (another runtime) has the port.
        print(
            f"vigil local: cannot start: port {args.port} on {args.host} is taken by another "
            f"program; pass another with --port (vigil local --port {args.port + 1}, or "
            f"make local PORT={args.port + 1})",
            file=sys.stderr,
        )
        return 1
    except Exception as error:
        return _cannot_start(error)
    # A plain flag: the handler runs on the main thread between two bytecodes, so it must not
    # take a lock the main thread may hold (Event.set() inside Event.wait() deadlocks).
    stopping: list[int] = []

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stopping.append(signum)

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with runtime:
            print("Vigil is running locally")
            print(f"  MCP endpoint:  {runtime.mcp_url}")
            print("                 (send Authorization: Bearer <secret>, or let the host sign")
            print("                 in with OAuth: it opens the console to ask you)")
            print(f"  REST base:     {runtime.rest_url}/{{tool}}")
            print(f"  OpenAPI:       {runtime.openapi_url}")
            print(f"  API page:      {runtime.openapi_url.removesuffix('/openapi.json')}/docs")
            print(f"  Web console:   {runtime.console_url} (sign in with the secret below)")
            print(f"  Operator:      {runtime.operator_id} in namespace {runtime.namespace!r}")
            print(f"  Secret:        {runtime.operator_secret}")
            print(f"  Saved to:      {runtime.state_file}")
            print(f"  State:         {runtime.state_dir} (kept across restarts)")
            print(f"  Logs:          {runtime.state_dir / LOG_FILE} (JSON lines)")
            print(f"  AWS stand-in:  moto at {runtime.aws_endpoint_url}, ", end="")
            print(f"DynamoDB Local at {runtime.dynamodb_endpoint_url}")
            if args.contention:
                print(f"  Contention:    {ContentionSettings().described()};")
                counts = f"{runtime.dynamodb_endpoint_url}/contention"
                print(f"                 refusals counted at {counts}")
            print("Press Ctrl+C to stop.", flush=True)
            # A sleep ends when a signal arrives; the loop then sees the flag.
            while not stopping:
                time.sleep(0.2)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print(goodbye(stopping, sys.stdout))
    return 0


def goodbye(stopped_by: list[int], terminal: TextIO) -> str:
    """The last line: on its own line after the ^C that a terminal echoes for Ctrl+C."""
    echoed = stopped_by[:1] == [signal.SIGINT] and terminal.isatty()
    return ("\n" if echoed else "") + "Vigil stopped."
