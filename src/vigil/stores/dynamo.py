"""The store on DynamoDB: one object over every capability's DynamoDB adapter."""

from __future__ import annotations

from vigil.attachments.dynamo import DynamoAttachments
from vigil.audit.dynamo import DynamoAudit
from vigil.conversations.dynamo import DynamoConversations
from vigil.grants.dynamo import DynamoOAuth
from vigil.identity.dynamo import DynamoIdentity
from vigil.leases.dynamo import DynamoLeases
from vigil.mailboxes.dynamo import DynamoMailboxes
from vigil.notifications.dynamo import DynamoChannels
from vigil.progress.dynamo import DynamoProgress
from vigil.quotas.dynamo import DynamoQuotas
from vigil.requests.dynamo import DynamoRequests
from vigil.runs.dynamo import DynamoRuns
from vigil.sessions.dynamo import DynamoSessions
from vigil.store import Store
from vigil.switches.dynamo import DynamoSwitches


class DynamoStore(
    DynamoAttachments,
    DynamoAudit,
    DynamoChannels,
    DynamoConversations,
    DynamoIdentity,
    DynamoLeases,
    DynamoMailboxes,
    DynamoOAuth,
    DynamoProgress,
    DynamoQuotas,
    DynamoRequests,
    DynamoRuns,
    DynamoSessions,
    DynamoSwitches,
    Store,
):
    pass
