"""The store on DynamoDB: one object combining every family's adapter over one table."""

from __future__ import annotations

from vigil.adapters.dynamo_identity import DynamoIdentity
from vigil.adapters.dynamo_leases import DynamoLeases
from vigil.adapters.dynamo_mailboxes import DynamoMailboxes
from vigil.adapters.dynamo_progress import DynamoProgress
from vigil.adapters.dynamo_runs import DynamoRuns
from vigil.adapters.dynamo_sessions import DynamoSessions
from vigil.adapters.dynamo_switches import DynamoSwitches
from vigil.store import Store


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
