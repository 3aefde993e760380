"""The in-memory store: one object over every capability's fake, for tests. It is never
imported by the functions."""

from __future__ import annotations

from vigil.attachments.memory import MemoryAttachments
from vigil.audit.memory import MemoryAudit
from vigil.conversations.memory import MemoryConversations
from vigil.grants.memory import MemoryOAuth
from vigil.identity.memory import MemoryIdentity
from vigil.leases.memory import MemoryLeases
from vigil.mailboxes.memory import MemoryMailboxes
from vigil.notifications.memory import MemoryChannels
from vigil.progress.memory import MemoryProgress
from vigil.quotas.memory import MemoryQuotas
from vigil.requests.memory import MemoryRequests
from vigil.runs.memory import MemoryRuns
from vigil.sessions.memory import MemorySessions
from vigil.store import Store
from vigil.switches.memory import MemorySwitches


class MemoryStore(
    MemoryAttachments,
    MemoryAudit,
    MemoryChannels,
    MemoryConversations,
    MemoryIdentity,
    MemoryLeases,
    MemoryMailboxes,
    MemoryOAuth,
    MemoryProgress,
    MemoryQuotas,
    MemoryRequests,
    MemoryRuns,
    MemorySessions,
    MemorySwitches,
    Store,
):
    pass
