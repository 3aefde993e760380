"""The store on DynamoDB: one object combining every family's adapter over one table."""

from __future__ import annotations

from vigil.adapters.dynamo_identity import DynamoIdentity
from vigil.store import Store


class DynamoStore(DynamoIdentity, Store):
    pass
