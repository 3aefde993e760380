"""What the switches read and write: their own records, and what a switch's death reaches (the
holder's leases, the progress a successor resumes from, the alert's mailbox, the audit trail
and the armed switches' quota)."""

from __future__ import annotations

from abc import ABC

from vigil.audit.store import AuditStore
from vigil.identity.store import IdentityStore
from vigil.kit.uow import Committer
from vigil.leases.store import LeaseStore
from vigil.mailboxes.store import MailboxStore
from vigil.progress.store import ProgressStore
from vigil.quotas.store import QuotaStore
from vigil.switches.store import SwitchStore


class SwitchPorts(
    Committer,
    AuditStore,
    IdentityStore,
    LeaseStore,
    MailboxStore,
    ProgressStore,
    QuotaStore,
    SwitchStore,
    ABC,
):
    """The store ports of the switches' engine, pauses and listings."""
