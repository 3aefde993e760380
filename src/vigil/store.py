"""The persistence port: one abstract class per tool family (vigil.ports), one object per
backend. The real adapter (DynamoDB) and the in-memory fake pass the same contract tests
(tests/contract).

Every change is conditional: creation on absence, updates on the stored version, and the
completion of an idempotency record on the token of the attempt that claimed it. A domain
write and the completion of its idempotency record happen in one atomic step, so a crash can
never leave a write without its replayable result or a result without its write.
"""

from __future__ import annotations

from vigil.ports.identity import IdentityPort
from vigil.ports.leases import LeasePort
from vigil.ports.mailboxes import MailboxPort
from vigil.ports.progress import ProgressPort
from vigil.ports.runs import RunPort
from vigil.ports.sessions import SessionPort
from vigil.ports.switches import SwitchPort


class ConditionFailed(Exception):
    """A conditional write lost: the record exists, or changed since it was read."""


class Store(IdentityPort, LeasePort, MailboxPort, ProgressPort, RunPort, SessionPort, SwitchPort):
    """Everything kept in the table. Each backend implements it as one object, so that a domain
    write and the completion of its idempotency record can share one atomic step."""
