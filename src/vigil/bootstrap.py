"""What only the deployer's AWS credentials do: create a namespace's first operator, and replace
an operator's secret.

There is no default password: whoever can write to the table (the deployer) creates the first
operator, receives its secret once, and every other principal is registered through the API. No
operator can rotate or revoke another through the tools, so an operator whose secret is lost or
stolen is recovered here: the new secret is printed once and the old one stops working at once.
"""

from __future__ import annotations

import re

from vigil.audit.records import AuditEvent
from vigil.clock import Clock
from vigil.errors import conflict, invalid, not_found
from vigil.identity.records import (
    NAMESPACE_PATTERN,
    Namespace,
    Principal,
    hash_secret,
    issue_secret,
)
from vigil.kit.principals import new_principal_id
from vigil.kit.uow import ConditionFailed
from vigil.store import Store


def bootstrap_operator(
    store: Store, clock: Clock, namespace: str, name: str, *, existing_ok: bool = False
) -> tuple[Principal, str]:
    """Creates ``namespace`` and an operator in it; returns the operator and its secret."""
    if not re.match(NAMESPACE_PATTERN, namespace):
        raise invalid("namespace must be 2-63 characters: lower-case letters, digits and '-'")
    if not 1 <= len(name) <= 100:
        raise invalid("name must be 1-100 characters")
    now = clock.now()
    try:
        store.commit([store.add_namespace(Namespace(name=namespace, created_at=now))])
    except ConditionFailed:
        if not existing_ok:
            raise conflict(
                f"namespace {namespace!r} exists; pass --existing-ok to add an operator"
            ) from None
    principal_id = new_principal_id("person")
    secret = issue_secret(namespace, principal_id)
    operator = Principal.registered(
        namespace, "person", name, "operator", hash_secret(secret), None, now, principal_id
    )
    audit = AuditEvent.of(namespace, None, "bootstrap", "principal", principal_id, None, 1, now)
    store.commit([store.add_principal(operator), store.add_audit_event(audit)])
    return operator, secret


def rotate_operator(
    store: Store, clock: Clock, namespace: str, operator_id: str
) -> tuple[Principal, str]:
    """Replaces the secret of the operator ``operator_id``; returns it and its new secret."""
    operator = store.get_principal(namespace, operator_id)
    if operator is None or operator.role != "operator":
        raise not_found("operator")
    if operator.status != "active":
        raise invalid("the operator is revoked")
    secret = issue_secret(namespace, operator_id)
    rotated = operator.rotated(hash_secret(secret), clock.now())
    audit = AuditEvent.of(
        namespace,
        None,
        "rotate_operator",
        "principal",
        operator_id,
        operator.version,
        rotated.version,
        rotated.updated_at,
    )
    try:
        store.commit([store.save_principal(rotated), store.add_audit_event(audit)])
    except ConditionFailed:
        raise conflict("the operator changed concurrently; run the command again") from None
    return rotated, secret
