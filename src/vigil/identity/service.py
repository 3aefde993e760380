"""Identity use cases: registering principals, rotating and revoking their secrets, and
reading the directory."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from pydantic import BaseModel

from vigil.audit.records import AuditAction, AuditEvent
from vigil.errors import conflict, contended, forbidden, invalid, not_found
from vigil.identity.records import Caller, Principal, hash_secret, issue_secret
from vigil.identity.store import IdentityPorts, IdentityStore
from vigil.kit.idempotency import HANDOVER_SECONDS
from vigil.kit.paging import scan_page
from vigil.kit.principals import Kind, Role, new_principal_id
from vigil.kit.retry import R
from vigil.kit.uow import ConditionFailed, Retirement, UnitOfWork

# One directory call examines at most this many records before it returns a page (possibly
# short) and a place to continue, so a rare search term cannot scan a whole namespace.
DIRECTORY_SCAN_BUDGET = 1000


def register(
    caller: Caller,
    kind: Kind,
    name: str,
    role: Role,
    now: datetime,
    *,
    store: IdentityPorts,
    uow: UnitOfWork,
    present: Callable[[Principal, str | None], R],
) -> R:
    """A new principal of the caller's namespace, presented with its secret, shown once: the
    stored result (``present`` without the secret) never holds it."""
    if not caller.is_operator:
        raise forbidden("only an operator may register principals")
    principal_id = new_principal_id(kind)
    secret = issue_secret(caller.namespace, principal_id)
    principal = Principal.registered(
        caller.namespace,
        kind,
        name,
        role,
        hash_secret(secret),
        caller.principal_id,
        now,
        principal_id=principal_id,
    )
    audit = AuditEvent.of(
        caller.namespace, caller.principal_id, "register", "principal", principal.id, None, 1, now
    )
    try:
        uow.commit(
            store.add_principal(principal),
            store.add_audit_event(audit),
            result=present(principal, None),
        )
    except ConditionFailed:
        raise contended("the registration raced another attempt; retry with the same key") from None
    return present(principal, secret)


def _target(store: IdentityStore, caller: Caller, principal_id: str, version: int) -> Principal:
    """The principal ``caller`` may rotate or revoke: itself, or, for an operator, a worker.
    Another operator is out of reach (forbidden): no operator can take over or lock out another
    through the tools; that takes the deployer's AWS credentials (``vigil rotate-operator``)."""
    if principal_id != caller.principal_id and not caller.is_operator:
        # A worker learns nothing about principals other than itself.
        raise not_found("principal")
    principal = store.get_principal(caller.namespace, principal_id)
    if principal is None:
        raise not_found("principal")
    if principal.id != caller.principal_id and principal.role == "operator":
        raise forbidden("an operator's secret and status are its own to change")
    if principal.status != "active":
        raise invalid("the principal is revoked")
    if principal.version != version:
        raise conflict("stale version", current_version=principal.version)
    return principal


def _save(
    caller: Caller,
    action: AuditAction,
    changed: Principal,
    result: BaseModel,
    retirement: Retirement | None = None,
    *,
    store: IdentityPorts,
    uow: UnitOfWork,
) -> None:
    """Saves ``changed``; a change to another principal is an operator's power, audited."""
    writes = [store.save_principal(changed)]
    if changed.id != caller.principal_id:
        event = AuditEvent.of(
            caller.namespace,
            caller.principal_id,
            action,
            "principal",
            changed.id,
            changed.version - 1,
            changed.version,
            changed.updated_at,
        )
        writes.append(store.add_audit_event(event))
    try:
        uow.commit(*writes, result=result, retirement=retirement)
    except ConditionFailed:
        raise conflict("the principal changed concurrently; read it again") from None


def rotate(
    caller: Caller,
    principal_id: str,
    version: int,
    now: datetime,
    *,
    store: IdentityPorts,
    uow: UnitOfWork,
    present: Callable[[Principal, str | None], R],
) -> R:
    """Replaces the principal's secret; the old one stops working at once. The result shows
    the new secret; the stored result (``present`` without it) does not."""
    principal = _target(store, caller, principal_id, version)
    secret = issue_secret(principal.namespace, principal.id)
    changed = principal.rotated(hash_secret(secret), now)
    issued = present(changed, secret)
    retirement = None
    if changed.id == caller.principal_id:
        # The call's own secret dies with this commit, so a retry after a lost answer can only
        # be made with it: the answer is kept for that retry, sealed under it, for a while.
        until = now + timedelta(seconds=HANDOVER_SECONDS)
        retirement = Retirement(issued, changed.secret_hash, until)
    _save(
        caller,
        "rotate_secret",
        changed,
        present(changed, None),
        retirement,
        store=store,
        uow=uow,
    )
    return issued


def revoke(
    caller: Caller,
    principal_id: str,
    version: int,
    now: datetime,
    *,
    store: IdentityPorts,
    uow: UnitOfWork,
    present: Callable[[Principal], R],
) -> R:
    changed = _target(store, caller, principal_id, version).revoked(now)
    result = present(changed)
    _save(caller, "revoke_principal", changed, result, store=store, uow=uow)
    return result


def directory_page(
    caller: Caller,
    kind: Kind,
    search: str | None,
    after: str | None,
    limit: int,
    *,
    store: IdentityStore,
) -> tuple[list[Principal], str | None]:
    """Up to ``limit`` principals of ``kind`` whose name or id contains ``search``, after the
    id ``after``; and the id to continue after, or None at the end."""
    needle = search.casefold() if search else None
    return scan_page(
        lambda start, size: store.list_principals(caller.namespace, kind, start, size),
        position=lambda principal: principal.id,
        keep=lambda p: needle is None or needle in p.name.casefold() or needle in p.id,
        after=after,
        size=limit,
        budget=DIRECTORY_SCAN_BUDGET,
    )
