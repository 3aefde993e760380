"""The store: every capability's store port in one object, so that the writes of one call,
whichever capabilities they touch, commit together with its idempotency completion.

Each backend implements it as one object (vigil.stores.dynamo, vigil.stores.memory): DynamoDB
and the in-memory fake, which pass the same contract tests (tests/contract).
"""

from __future__ import annotations

from vigil.attachments.store import AttachmentPorts, AttachmentStore
from vigil.audit.store import AuditStore
from vigil.conversations.store import ConversationPorts, ConversationStore
from vigil.grants.store import OAuthPorts, OAuthStore
from vigil.identity.store import IdentityPorts, IdentityStore, SignInStore
from vigil.kit.idempotency import IdempotencyStore
from vigil.leases.store import LeaseStore
from vigil.mailboxes.store import DeadLetterPorts, MailboxPorts, MailboxStore
from vigil.notifications.store import (
    AccountPorts,
    ChannelPorts,
    ChannelStore,
    DelivererPorts,
    FeedPorts,
    FeedStore,
    SlackResponsePorts,
)
from vigil.progress.store import ProgressPorts, ProgressStore
from vigil.quotas.store import QuotaStore
from vigil.requests.store import RequestPorts, RequestStore
from vigil.runs.store import RunStore
from vigil.sessions.store import SessionStore, WatchPorts
from vigil.switches.store import SwitchPorts, SwitchStore


# Each capability's intersection of ports (the ports its services take) first, then the ports
# themselves: Python builds the class only if every intersection lists its bases in an order
# this one keeps.
class Store(
    SwitchPorts,
    ChannelPorts,
    DelivererPorts,
    FeedPorts,
    SlackResponsePorts,
    AccountPorts,
    DeadLetterPorts,
    WatchPorts,
    IdentityPorts,
    OAuthPorts,
    MailboxPorts,
    ProgressPorts,
    RequestPorts,
    ConversationPorts,
    AttachmentPorts,
    IdempotencyStore,
    AttachmentStore,
    AuditStore,
    ChannelStore,
    FeedStore,
    ConversationStore,
    IdentityStore,
    LeaseStore,
    MailboxStore,
    OAuthStore,
    ProgressStore,
    QuotaStore,
    RequestStore,
    RunStore,
    SessionStore,
    SignInStore,
    SwitchStore,
):
    """Everything kept in the table."""
