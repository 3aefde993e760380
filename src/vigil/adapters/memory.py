"""The in-memory store: one object combining every family's fake, for tests."""

from __future__ import annotations

from vigil.adapters.memory_identity import MemoryIdentity
from vigil.store import Store


class MemoryStore(MemoryIdentity, Store):
    pass
