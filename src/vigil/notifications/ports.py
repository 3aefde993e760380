"""The store ports each notifications service reads and writes through, as one abstract type
per service: ``vigil.store.Store`` implements them all. Their bases are in the order of
``Store``'s, which Python's method resolution requires."""

from __future__ import annotations

from abc import ABC

from vigil.audit.store import AuditStore
from vigil.kit.uow import Committer
from vigil.notifications.store import ChannelStore
from vigil.quotas.store import QuotaStore
from vigil.requests.store import RequestStore
from vigil.switches.store import SwitchStore


class ChannelPorts(Committer, AuditStore, ChannelStore, QuotaStore, ABC):
    """What an operator's channel tools read and write: channels, counted in the namespace's
    quota, alerts' acknowledgements and deliveries' failures, audited."""


class DelivererPorts(Committer, AuditStore, ChannelStore, RequestStore, SwitchStore, ABC):
    """What the deliverer reads and writes: the notifications and their channels, a channel
    disabled (audited), and whether what an alert tells of still waits for a person (its
    request, its switch)."""
