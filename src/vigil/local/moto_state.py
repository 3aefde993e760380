"""What moto holds for the local runtime (queues and their messages, objects, schedules), kept
on disk so that a restart or a ``kill -9`` loses at most the last second.

moto keeps its state in memory, in the same process. A ``Snapshotter`` thread writes each
service's state once a second when a request may have changed it, to a file per service
(written aside, flushed and renamed, so a crash leaves the previous file whole). Requests that
change state run under a lock that the snapshot also takes, so a snapshot never sees half a
request. ``restore`` puts the files back into moto before the template is provisioned.

The files are pickles of moto's own models: they are read back only from the state directory
(mode 0700) and only by the moto version that wrote them; another version refuses them with a
message that says how to start afresh.
"""

from __future__ import annotations

import io
import os
import pickle
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from vigil.observability import get_logger, log_event

log = get_logger("vigil.local.moto_state")

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

# The attributes of each service's backend that hold what the runtime creates.
STATE: Mapping[str, tuple[str, ...]] = {
    "sqs": ("queues",),
    "s3": ("buckets",),
    "scheduler": ("schedules", "schedule_groups"),
    "secretsmanager": ("secrets",),
}
_INTERVAL_SECONDS = 1.0
_LOCKS = (type(threading.Lock()), type(threading.RLock()))

# Reads: nothing to write down after them. A receive only hides messages for a while, and a
# restart showing them again is what the visibility timeout would do anyway.
_SQS_READS = ("Get", "List", "Receive")


def _moto_version() -> str:
    import moto

    return str(moto.__version__)


def _new_lock(kind: type) -> Any:
    return kind()


class _Pickler(pickle.Pickler):
    """moto's models hold locks; a lock is saved as a new, free lock of its kind."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, _LOCKS):
            return _new_lock, (type(obj),)
        return NotImplemented


def _backends(service: str) -> Iterable[tuple[str, str, Any]]:
    from moto.backends import get_backend

    for account_id, regions in list(get_backend(service).items()):  # type: ignore[call-overload]
        for region, backend in list(regions.items()):
            yield account_id, region, backend


def capture(service: str) -> bytes:
    state = {
        (account_id, region): {name: getattr(backend, name) for name in STATE[service]}
        for account_id, region, backend in _backends(service)
    }
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump((_moto_version(), state))
    return buffer.getvalue()


def restore(directory: Path) -> list[str]:
    """Loads every saved service into moto; returns the services restored."""
    from moto.backends import get_backend

    restored = []
    for service in STATE:
        path = directory / f"{service}.pickle"
        if not path.exists():
            continue
        version, state = pickle.loads(path.read_bytes())  # noqa: S301 - our own 0700 directory
        if version != _moto_version():
            raise RuntimeError(
                f"{path} was written by moto {version}, this is moto {_moto_version()}: "
                "remove the state directory to start afresh"
            )
        backends = get_backend(service)  # type: ignore[call-overload]
        for (account_id, region), attributes in state.items():
            backend = backends[account_id][region]
            # Merged, not replaced: other stacks may live in this process's moto too.
            for name, value in attributes.items():
                current = getattr(backend, name)
                if isinstance(current, dict):
                    current.update(value)
                else:
                    current.extend(one for one in value if one.arn not in {c.arn for c in current})
            if service == "s3":
                for bucket in attributes["buckets"]:
                    backends.bucket_accounts[bucket] = (region, account_id)
        restored.append(service)
    return restored


def saved_schedules() -> Iterable[tuple[str, str, str, str | None]]:
    """Each schedule moto holds, as its group, name, expression and time zone."""
    for _, _, backend in _backends("scheduler"):
        for group in list(backend.schedule_groups.values()):
            for schedule in list(group.schedules.values()):
                yield (
                    group.name,
                    schedule.name,
                    schedule.schedule_expression,
                    schedule.schedule_expression_timezone,
                )


def _write(path: Path, data: bytes) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as stream:
        stream.write(data)
        stream.flush()
        os.fsync(stream.fileno())
    os.replace(temporary, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def service_of(environ: Mapping[str, Any]) -> str | None:
    """The service a request may change, or None when it only reads.

    SDK requests are signed: the credential scope names the service. A request with no
    signature (a presigned POST's form) is taken to change S3.
    """
    method = environ.get("REQUEST_METHOD", "GET")
    if method in ("GET", "HEAD", "OPTIONS"):
        return None
    authorization = environ.get("HTTP_AUTHORIZATION", "")
    scope = authorization.partition("Credential=")[2].split(",")[0].split("/")
    service = scope[3] if len(scope) > 3 else "s3"
    if service == "sqs":
        action = environ.get("HTTP_X_AMZ_TARGET", "").rpartition(".")[2]
        if action.startswith(_SQS_READS):
            return None
    return service if service in STATE else None


class Snapshotter:
    """Writes the services that requests changed, once a second, and once more on stop."""

    def __init__(self, directory: Path, interval: float = _INTERVAL_SECONDS) -> None:
        self.directory = directory
        self.interval = interval
        # Held by each changing request and by each capture: a capture sees whole requests.
        self.lock = threading.RLock()
        self._dirty: set[str] = set()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def changed(self, service: str) -> None:
        self._dirty.add(service)

    def flush(self) -> None:
        with self.lock:
            dirty, self._dirty = self._dirty, set()
        for service in sorted(dirty):
            try:
                with self.lock:
                    data = capture(service)
                _write(self.directory / f"{service}.pickle", data)
            except Exception:
                self._dirty.add(service)
                log.exception("cannot save moto state", extra={"fields": {"service": service}})

    def start(self) -> None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._thread = threading.Thread(target=self._loop, name="vigil-moto-state", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.flush()
        log_event(log, "moto state saved", directory=str(self.directory))

    def _loop(self) -> None:
        while not self._stopping.wait(self.interval):
            self.flush()


def guarded(app: WsgiApp, snapshots: Snapshotter) -> WsgiApp:
    """WSGI middleware: a changing request runs under the snapshot lock and marks its service."""

    def middleware(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        service = service_of(environ)
        if service is None:
            return app(environ, start_response)
        with snapshots.lock:
            # The body is produced inside the lock: moto does its work while it is iterated.
            body = list(app(environ, start_response))
            snapshots.changed(service)
        return body

    return middleware
