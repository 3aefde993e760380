"""The in-memory store: one object combining every family's fake, for tests."""

from __future__ import annotations

from vigil.adapters.memory_identity import MemoryIdentity
from vigil.adapters.memory_leases import MemoryLeases
from vigil.adapters.memory_mailboxes import MemoryMailboxes
from vigil.adapters.memory_progress import MemoryProgress
from vigil.adapters.memory_runs import MemoryRuns
from vigil.adapters.memory_sessions import MemorySessions
from vigil.adapters.memory_switches import MemorySwitches
from vigil.store import Store


class MemoryStore(
    MemoryIdentity,
    MemoryLeases,
    MemoryMailboxes,
    MemoryProgress,
    MemoryRuns,
    MemorySessions,
    MemorySwitches,
    Store,
):
    pass
