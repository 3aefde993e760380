"""The store on DynamoDB: one object combining every family's adapter over one table."""

from __future__ import annotations

from vigil.adapters.dynamo_identity import DynamoIdentity
from vigil.adapters.dynamo_leases import DynamoLeases
from vigil.adapters.dynamo_mailboxes import DynamoMailboxes
from vigil.adapters.dynamo_switches import DynamoSwitches
from vigil.store import Store


class DynamoStore(DynamoIdentity, DynamoLeases, DynamoMailboxes, DynamoSwitches, Store):
    pass
