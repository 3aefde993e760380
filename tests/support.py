"""Helpers shared by tests."""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import signal
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from vigil.alarms.memory import MemoryAlarms
from vigil.app import App
from vigil.attachments.memory import MemoryBlobs
from vigil.bootstrap import bootstrap_operator
from vigil.clock import ManualClock
from vigil.errors import VigilError
from vigil.kit.http import HttpRequest
from vigil.kit.idempotency import LOCK_SECONDS, RETAIN_SECONDS, IdempotencyRecord
from vigil.kit.keys import Keys
from vigil.mailboxes.memory import MemoryMailboxQueues
from vigil.notifications.sending import Sender
from vigil.store import Store

if TYPE_CHECKING:
    from vigil.transports.router import Router

FUNCTIONS = Path(__file__).resolve().parents[1] / "functions"

_MOTO_DYNAMODB = threading.RLock()


def serialise_moto_dynamodb() -> None:
    """In-process moto's DynamoDB serves one request at a time from now on. It is not safe for
    threads (a transaction deep-copies the table while another request may be writing it),
    where DynamoDB serves requests side by side: the tests and scripts that run Vigil's
    concurrent parts (a batch's beats) on moto need it, as a one-thread moto server would."""
    from moto.dynamodb.responses import DynamoHandler

    original = DynamoHandler.call_action
    if getattr(original, "serialised", False):
        return

    def call_action(self: Any) -> Any:
        with _MOTO_DYNAMODB:
            return original(self)

    call_action.serialised = True  # type: ignore[attr-defined]
    DynamoHandler.call_action = call_action  # type: ignore[method-assign]


def import_entry_point(function: str) -> ModuleType:
    """Runs ``functions/<function>/app.py`` as Lambda's init phase does: a fresh import."""
    spec = importlib.util.spec_from_file_location(
        f"{function}_app", FUNCTIONS / function / "app.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    finally:
        # The entry point leaves what it made to no collection, for the sandbox's life; this
        # process goes on to other tests.
        gc.unfreeze()
        gc.enable()
    return module


def interruptible() -> None:
    """The ``preexec_fn`` of a child a test stops with Ctrl+C: it takes SIGINT as it would on a
    terminal, even when the suite ignores SIGINT and would pass that on, as a background job
    of a non-interactive shell (``make test &``) does."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def error_of(call: Callable[..., Any], *args: Any, **kwargs: Any) -> VigilError:
    """The error that ``call(*args, **kwargs)`` refuses with; the test fails if it succeeds."""
    with pytest.raises(VigilError) as caught:
        call(*args, **kwargs)
    return caught.value


def refuse_aws_clients(*args: Any, **kwargs: Any) -> Any:
    """Stands in for ``vigil.wiring.aws_client`` once nothing may build a client any more."""
    raise AssertionError("an AWS client was built after init")


# The service key of every test application (a deployment's comes from Secrets Manager).
TEST_KEYS = Keys.fixed("test-service-key-" + "k" * 47)


def app_on(store: Store, clock: ManualClock, **parts: Any) -> App:
    """The application on ``store``, with in-memory queues and alarms unless ``parts`` names
    others: every part the production path needs, as fakes."""
    parts.setdefault("queues", MemoryMailboxQueues(clock))
    parts.setdefault("alarms", MemoryAlarms())
    parts.setdefault("blobs", MemoryBlobs())
    parts.setdefault("keys", TEST_KEYS)
    parts.setdefault("sender", Sender(keys=parts["keys"], clock=clock))
    return App(store, clock, **parts)


class Tenant:
    """A namespace with its operator, for tests that call tools."""

    def __init__(self, app: App, clock: ManualClock, namespace: str) -> None:
        self.app = app
        self.namespace = namespace
        self.operator, self.operator_secret = bootstrap_operator(app.store, clock, namespace, "Ops")

    def call(self, tool: str, secret: str | None = None, **arguments: Any) -> dict[str, Any]:
        return self.app.call(tool, arguments, secret or self.operator_secret, via="rest")

    def register(
        self, kind: str = "agent", role: str = "worker", name: str = "w"
    ) -> tuple[str, str]:
        result = self.call("register", kind=kind, role=role, name=name)
        return result["principal"]["id"], result["secret"]


def pending_claim(
    clock: ManualClock, principal_id: str, tool: str, token: str = "t1", key: str = "k"
) -> IdempotencyRecord:
    """An idempotency key claimed just now and not yet completed, as App.call leaves it."""
    now = clock.now()
    return IdempotencyRecord(
        namespace="acme",
        principal_id=principal_id,
        tool=tool,
        key=key,
        fingerprint="f",
        status="pending",
        token=token,
        locked_until=now + timedelta(seconds=LOCK_SECONDS),
        expires_at=now + timedelta(seconds=RETAIN_SECONDS),
    )


def interleaving_store(request: Any, read: str) -> Any:
    """A store (in memory, or DynamoDB on moto, after the request's parameter) that runs its
    ``interloper`` once, right after the next call of ``read`` has read and before its caller
    can write: another caller reads and writes in between, deterministically."""
    import boto3

    from tests.conftest import create_tables_from_template
    from vigil.stores.dynamo import DynamoStore
    from vigil.stores.memory import MemoryStore

    base: type[Any] = MemoryStore if request.param == "memory" else DynamoStore

    def reading(self: Any, *args: Any, **kwargs: Any) -> Any:
        found = getattr(super(interleaving, self), read)(*args, **kwargs)
        run, self.interloper = self.interloper, None
        if run is not None:
            run()
        return found

    interleaving = type(
        f"Interleaving{base.__name__}", (base,), {read: reading, "interloper": None}
    )
    if base is MemoryStore:
        return interleaving()
    request.getfixturevalue("aws")
    client = boto3.client("dynamodb", region_name="us-east-1")
    return interleaving(client, create_tables_from_template(client)["VigilTable"])


def completion_bytes(store: Store, namespace: str, principal_id: str, tool: str, key: str) -> int:
    """The size of the item that keeps the completion of ``key``: on DynamoDB the stored item,
    by DynamoDB's rules; on the fake, the record as the fake counts it."""
    from vigil.kit import dynamo, memory
    from vigil.kit.limits import dynamo_item_bytes, item_bytes
    from vigil.stores.dynamo import DynamoStore
    from vigil.stores.memory import MemoryStore

    if isinstance(store, DynamoStore):
        record = store.read_idempotency(namespace, principal_id, tool, key)
        assert record is not None
        found = store.client.get_item(
            TableName=store.table, Key=dynamo.idem_key(record), ConsistentRead=True
        )
        return dynamo_item_bytes(found["Item"])
    assert isinstance(store, MemoryStore)
    stored = store.idempotency[(namespace, principal_id, tool, key)]
    return item_bytes(memory.idem_key(stored), stored)


@contextlib.contextmanager
def served_over_http(router: Router) -> Iterator[str]:
    """``router`` behind a real HTTP port on 127.0.0.1, as the stdio bridge reaches a deployed
    endpoint; yields the MCP URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            headers = {name.lower(): value for name, value in self.headers.items()}
            split = urlsplit(self.path)
            request = HttpRequest("POST", split.path, headers, body)
            request.query = dict(parse_qsl(split.query, keep_blank_values=True))
            response = router.handle(request)
            self.send_response(response.status)
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(response.body)))
            self.end_headers()
            self.wfile.write(response.body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


# What a 2026-07-28 request carries besides its method and params: its revision and its
# client's capabilities in _meta, and its method (and, for a call, the tool) in headers.
MODERN = "2026-07-28"
MODERN_META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def modern_headers(message: dict[str, Any]) -> dict[str, str]:
    """The headers the 2026-07-28 revision has a client send with ``message``."""
    headers = {"mcp-protocol-version": MODERN, "mcp-method": message["method"]}
    params = message.get("params") or {}
    named = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
    member = named.get(message["method"])
    if member is not None and isinstance(params.get(member), str):
        headers["mcp-name"] = params[member]
    return headers
