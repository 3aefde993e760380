"""Queuing into mailboxes: ``deliver``, the one way an envelope reaches a mailbox, and
``require_registered``, the one rule for which addresses exist.

Sending is write-only: whoever queues an envelope never reads the mailbox; only its owner
receives from it.
"""

from __future__ import annotations

from vigil.clock import Clock
from vigil.errors import ErrorCode, VigilError, not_found
from vigil.mailboxes.queues import MailboxQueues
from vigil.mailboxes.records import Envelope, parse_address, queue_name
from vigil.observability import get_logger, log_event
from vigil.store import Store

log = get_logger("vigil.mailboxes")

# SQS refuses larger messages.
MAX_ENVELOPE_BYTES = 256 * 1024


def require_registered(store: Store, namespace: str, address: str) -> str:
    """The owner of the mailbox at ``address``; not_found unless the address is registered.

    An agent's own address is registered by the agent's principal record; a named box, by
    create_mailbox."""
    parsed = parse_address(address)
    if parsed is None:
        raise not_found("mailbox")
    agent_id, box = parsed
    if box is None:
        agent = store.get_principal(namespace, agent_id)
        registered = agent is not None and agent.kind == "agent"
    else:
        registered = store.get_mailbox(namespace, address) is not None
    if not registered:
        raise not_found("mailbox")
    return agent_id


def deliver(
    store: Store,
    queues: MailboxQueues,
    clock: Clock,
    namespace: str,
    address: str,
    envelope: Envelope,
) -> Envelope:
    """Queues ``envelope`` into the registered mailbox at ``address`` of ``namespace``, and
    returns it; an address that is not registered is not_found.

    A sender that may retry after a crash builds the envelope with the same id each time
    (``envelope_id_for``): all its copies are then one envelope, handed out once.
    """
    if (envelope.namespace, envelope.address) != (namespace, address):
        raise ValueError("the envelope is addressed to another mailbox")
    require_registered(store, namespace, address)
    body = envelope.model_dump_json()
    if len(body.encode()) > MAX_ENVELOPE_BYTES:
        raise VigilError(
            ErrorCode.LIMIT_EXCEEDED,
            f"an envelope may take at most {MAX_ENVELOPE_BYTES} bytes as JSON",
        )
    queues.send(queues.ensure(queue_name(queues.prefix, namespace, address)), body)
    # How long the envelope waited to be queued; for an alert, since its switch fired.
    lag = clock.now() - envelope.sent_at
    log_event(
        log,
        "envelope queued",
        envelope_id=envelope.id,
        kind=envelope.kind,
        sender=envelope.sender,
        lag_ms=round(lag.total_seconds() * 1000),
    )
    return envelope
