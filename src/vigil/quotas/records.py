"""Per-namespace quotas: what one tenant may hold at once, so that no tenant can grow the table,
the queues or the alarms without bound.

The limits come from the deployment (template parameters, through the environment, read once
into vigil.config.Settings) and are the same for every namespace of a stack. Counted quotas
(armed switches, named mailboxes) are kept as counters in one item per namespace, changed in the
same transaction as what they count and conditional on the limit, so two concurrent calls cannot
both take the last place. The others are measured where they are enforced: the live leases of a
scope by a bounded query, and a mailbox's pending deliveries by its queue's depth.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Literal

from vigil.errors import ErrorCode, VigilError

Counter = Literal["armed_switches", "mailboxes", "open_requests", "channels"]

_WHAT: dict[str, str] = {
    "armed_switches": "armed dead-man switches in the namespace",
    "mailboxes": "named mailboxes in the namespace",
    "leases_per_scope": "live leases taken with one scope",
    "pending_deliveries": "deliveries waiting in one mailbox",
    "open_requests": "open requests in the namespace",
    "subscriptions": "live event subscriptions of one principal",
}


@dataclass(frozen=True)
class Quotas:
    armed_switches: int = 25_000
    leases_per_scope: int = 1000
    mailboxes: int = 1000
    pending_deliveries: int = 10_000
    open_requests: int = 10_000
    # A principal's webhook subscriptions at once, and the events its feed keeps for them.
    subscriptions: int = 10
    events_kept: int = 1000

    @classmethod
    def of(cls, limits: Mapping[str, str]) -> Quotas:
        """The limits ``limits`` sets (the deployment's, vigil.config.Settings.quota_limits);
        the defaults for the others."""
        chosen: dict[str, int] = {}
        for field in fields(cls):
            raw = limits.get(field.name)
            if raw:
                value = int(raw)
                if value < 1:
                    raise RuntimeError(f"QUOTA_{field.name.upper()} must be at least 1")
                chosen[field.name] = value
        return cls(**chosen)

    def exceeded(self, name: str) -> VigilError:
        limit: int = getattr(self, name)
        return VigilError(
            ErrorCode.LIMIT_EXCEEDED,
            f"at most {limit} {_WHAT[name]}: the quota is reached",
            quota=name,
            limit=limit,
        )
