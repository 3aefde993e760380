"""One runtime per state directory: the lock a runtime holds on its state for as long as it runs.

Two runtimes on one state directory would both run its timers and the second would rewrite
``local.json`` to its own address. The lock is an ``flock`` on a file in the directory, so the
kernel drops it when the process ends, even by ``kill -9``, and a crash never leaves a stale
lock to clear by hand. The file also says who holds it (pid, since when, where it serves), for
the refusal of the next one. ``flock`` exists on Linux and macOS, the systems the runtime runs
on (it needs POSIX permissions and signals already).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path

from vigil.clock import Clock

LOCK_FILE = "local.lock"


class StateDirectoryInUse(RuntimeError):
    """Another runtime holds the state directory."""

    def __init__(self, state_dir: Path, holder: dict[str, str]) -> None:
        if holder:
            who = (
                f"pid {holder.get('pid', '?')}, started {holder.get('started_at', '?')}, "
                f"serving {holder.get('url', 'nothing yet: it is still starting')}"
            )
        else:
            who = "it is still starting"
        super().__init__(
            f"the state directory {state_dir} is in use by another vigil local ({who}); "
            "stop it, or pass another --state-dir"
        )


@dataclass
class StateLock:
    """The state directory, held; the lock file tells who holds it."""

    _fd: int
    _holder: dict[str, str]

    def serving(self, url: str) -> None:
        """Records where the holder serves, for a refused runtime to say."""
        self._holder["url"] = url
        self._record()

    def release(self) -> None:
        os.close(self._fd)

    def _record(self) -> None:
        data = json.dumps(self._holder).encode()
        # In place, through the locked descriptor: a file put in its place would be another
        # file, unlocked.
        os.pwrite(self._fd, data, 0)
        os.ftruncate(self._fd, len(data))


def hold(state_dir: Path, clock: Clock) -> StateLock:
    """Takes the state directory for this process, or raises ``StateDirectoryInUse`` having
    changed nothing in it."""
    path = state_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(fd)
        os.close(fd)
        raise StateDirectoryInUse(state_dir, holder) from None
    except BaseException:
        os.close(fd)
        raise
    lock = StateLock(fd, {"pid": str(os.getpid()), "started_at": clock.now().isoformat()})
    lock._record()
    return lock


def _holder(fd: int) -> dict[str, str]:
    """What the holder wrote of itself; nothing if it has not written it yet."""
    with contextlib.suppress(ValueError, OSError):
        holder = json.loads(os.pread(fd, 4096, 0))
        if isinstance(holder, dict):
            return {str(key): str(value) for key, value in holder.items()}
    return {}
