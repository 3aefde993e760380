"""Identity tools: register principals, rotate and revoke secrets, read the directory."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from vigil.domain.identity import (
    PRINCIPAL_ID_PATTERN,
    Kind,
    Principal,
    Role,
    Status,
    hash_secret,
    issue_secret,
    new_principal_id,
)
from vigil.errors import conflict, forbidden, invalid, not_found
from vigil.store import ConditionFailed
from vigil.tools.common import Context, IdempotencyKey, Output, StrictInput

Name = Annotated[
    str,
    Field(
        min_length=1,
        max_length=100,
        pattern=r"^[^\x00-\x1f\x7f]+$",
        description="Display name, 1-100 printable characters.",
    ),
]
PrincipalIdField = Annotated[
    str, Field(pattern=PRINCIPAL_ID_PATTERN, description="A principal id, e.g. agt_… or per_….")
]
Version = Annotated[
    int, Field(ge=1, description="The record's current version; a stale version conflicts.")
]


class PrincipalView(Output):
    id: str
    namespace: str
    kind: Kind
    name: str
    role: Role
    status: Status
    address: str | None = Field(
        description="Mailbox address of an agent, agent:<id>; null for others."
    )
    created_at: datetime
    updated_at: datetime
    version: int

    @classmethod
    def of(cls, principal: Principal) -> PrincipalView:
        return cls(
            id=principal.id,
            namespace=principal.namespace,
            kind=principal.kind,
            name=principal.name,
            role=principal.role,
            status=principal.status,
            address=f"agent:{principal.id}" if principal.kind == "agent" else None,
            created_at=principal.created_at,
            updated_at=principal.updated_at,
            version=principal.version,
        )


class SecretIssued(Output):
    principal: PrincipalView
    secret: str | None = Field(
        description=(
            "The new secret, shown in this response only and stored only as a hash. Null when "
            "this result replays an earlier call with the same idempotency key."
        )
    )


# -- register -----------------------------------------------------------------------------
class RegisterInput(StrictInput):
    kind: Kind = Field(description="What the principal is: person, agent or service.")
    name: Name
    role: Role = Field(
        default="worker",
        description="operator may register principals and steer work; worker does the work.",
    )
    idempotency_key: IdempotencyKey | None = None


def register(ctx: Context, args: RegisterInput) -> SecretIssued:
    if not ctx.caller.is_operator:
        raise forbidden("only an operator may register principals")
    now = ctx.clock.now()
    principal_id = new_principal_id(args.kind)
    secret = issue_secret(ctx.caller.namespace, principal_id)
    principal = Principal(
        namespace=ctx.caller.namespace,
        id=principal_id,
        kind=args.kind,
        name=args.name,
        role=args.role,
        status="active",
        secret_hash=hash_secret(secret),
        created_at=now,
        updated_at=now,
        created_by=ctx.caller.principal_id,
        version=1,
    )
    view = PrincipalView.of(principal)
    try:
        ctx.store.create_principal(
            principal, completes=ctx.completion(SecretIssued(principal=view, secret=None))
        )
    except ConditionFailed:
        raise conflict("the registration raced another attempt; retry with the same key") from None
    return SecretIssued(principal=view, secret=secret)


# -- rotate / revoke ----------------------------------------------------------------------
class RotateSecretInput(StrictInput):
    principal_id: PrincipalIdField | None = Field(
        default=None, description="Whose secret to replace; the caller's own when omitted."
    )
    version: Version
    idempotency_key: IdempotencyKey | None = None


class RevokeInput(StrictInput):
    principal_id: PrincipalIdField
    version: Version
    idempotency_key: IdempotencyKey | None = None


class PrincipalResult(Output):
    principal: PrincipalView


def _target(ctx: Context, principal_id: str, version: int) -> Principal:
    if principal_id != ctx.caller.principal_id and not ctx.caller.is_operator:
        # A worker learns nothing about principals other than itself.
        raise not_found("principal")
    principal = ctx.store.get_principal(ctx.caller.namespace, principal_id)
    if principal is None:
        raise not_found("principal")
    if principal.status != "active":
        raise invalid("the principal is revoked")
    if principal.version != version:
        raise conflict("stale version", current_version=principal.version)
    return principal


def _save(ctx: Context, changed: Principal, stored_result: Output) -> None:
    try:
        ctx.store.update_principal(changed, completes=ctx.completion(stored_result))
    except ConditionFailed:
        raise conflict("the principal changed concurrently; read it again") from None


def rotate_secret(ctx: Context, args: RotateSecretInput) -> SecretIssued:
    principal = _target(ctx, args.principal_id or ctx.caller.principal_id, args.version)
    secret = issue_secret(principal.namespace, principal.id)
    changed = principal.model_copy(
        update={
            "secret_hash": hash_secret(secret),
            "updated_at": ctx.clock.now(),
            "version": principal.version + 1,
        }
    )
    view = PrincipalView.of(changed)
    _save(ctx, changed, SecretIssued(principal=view, secret=None))
    return SecretIssued(principal=view, secret=secret)


def revoke_principal(ctx: Context, args: RevokeInput) -> PrincipalResult:
    principal = _target(ctx, args.principal_id, args.version)
    changed = principal.model_copy(
        update={
            "status": "revoked",
            "updated_at": ctx.clock.now(),
            "version": principal.version + 1,
        }
    )
    result = PrincipalResult(principal=PrincipalView.of(changed))
    _save(ctx, changed, result)
    return result


# -- reads --------------------------------------------------------------------------------
class NoInput(StrictInput):
    pass


def whoami(ctx: Context, args: NoInput) -> PrincipalResult:
    return PrincipalResult(principal=PrincipalView.of(ctx.caller.principal))


LIST_AGENTS_MAX = 500


class AgentList(Output):
    agents: list[PrincipalView]
    truncated: bool = Field(
        description="More agents exist than one listing returns; page with list_directory."
    )


def list_agents(ctx: Context, args: NoInput) -> AgentList:
    found = ctx.store.list_principals(ctx.caller.namespace, "agent", None, LIST_AGENTS_MAX + 1)
    return AgentList(
        agents=[PrincipalView.of(p) for p in found[:LIST_AGENTS_MAX]],
        truncated=len(found) > LIST_AGENTS_MAX,
    )


class ListDirectoryInput(StrictInput):
    kind: Kind = Field(description="Which kind of principal to list.")
    search: str | None = Field(
        default=None,
        max_length=200,
        description="Case-insensitive text matched against names and ids.",
    )
    cursor: str | None = Field(
        default=None,
        max_length=512,
        description="Opaque next_cursor from the previous page of the same query.",
    )
    limit: int = Field(default=50, ge=1, le=100, description="Page size.")


class DirectoryPage(Output):
    items: list[PrincipalView]
    next_cursor: str | None = Field(
        description="Pass back as cursor for the next page; null at the end."
    )
    order: Literal["id_ascending"] = "id_ascending"


# One call examines at most this many records before it returns a page (possibly short) and a
# cursor, so a rare search term cannot turn one request into a full namespace scan.
_SCAN_BUDGET = 1000


def _encode_cursor(kind: str, search: str | None, after: str) -> str:
    raw = json.dumps({"k": kind, "q": search, "a": after}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, kind: str, search: str | None) -> str:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        decoded = json.loads(base64.urlsafe_b64decode(padded.encode()))
        after = decoded["a"]
        matches = decoded["k"] == kind and decoded["q"] == search
    except (binascii.Error, ValueError, KeyError, TypeError):
        raise invalid("cursor is not one this tool returned") from None
    if not matches or not isinstance(after, str):
        raise invalid("cursor belongs to a different query")
    return after


def list_directory(ctx: Context, args: ListDirectoryInput) -> DirectoryPage:
    after = _decode_cursor(args.cursor, args.kind, args.search) if args.cursor else None
    needle = args.search.casefold() if args.search else None
    items: list[PrincipalView] = []
    examined = 0
    while len(items) < args.limit and examined < _SCAN_BUDGET:
        batch = ctx.store.list_principals(ctx.caller.namespace, args.kind, after, args.limit)
        if not batch:
            return DirectoryPage(items=items, next_cursor=None)
        for principal in batch:
            examined += 1
            after = principal.id
            if needle is None or needle in principal.name.casefold() or needle in principal.id:
                items.append(PrincipalView.of(principal))
                if len(items) == args.limit:
                    break
        if len(batch) < args.limit and len(items) < args.limit:
            return DirectoryPage(items=items, next_cursor=None)
    assert after is not None
    return DirectoryPage(items=items, next_cursor=_encode_cursor(args.kind, args.search, after))
