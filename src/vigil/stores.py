"""The store's two backends, each one object over every capability's adapter: DynamoDB, and
the in-memory fake for tests."""

from __future__ import annotations

from vigil.identity.dynamo import DynamoIdentity
from vigil.identity.memory import MemoryIdentity
from vigil.leases.dynamo import DynamoLeases
from vigil.leases.memory import MemoryLeases
from vigil.mailboxes.dynamo import DynamoMailboxes
from vigil.mailboxes.memory import MemoryMailboxes
from vigil.progress.dynamo import DynamoProgress
from vigil.progress.memory import MemoryProgress
from vigil.runs.dynamo import DynamoRuns
from vigil.runs.memory import MemoryRuns
from vigil.sessions.dynamo import DynamoSessions
from vigil.sessions.memory import MemorySessions
from vigil.store import Store
from vigil.switches.dynamo import DynamoSwitches
from vigil.switches.memory import MemorySwitches


class DynamoStore(
    DynamoIdentity,
    DynamoLeases,
    DynamoMailboxes,
    DynamoProgress,
    DynamoRuns,
    DynamoSessions,
    DynamoSwitches,
    Store,
):
    pass


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
