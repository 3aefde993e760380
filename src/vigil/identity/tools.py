"""Identity tools: register principals, rotate and revoke secrets, read the directory."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, Protocol

from pydantic import Field

from vigil.identity import service
from vigil.identity.calls import Call
from vigil.identity.records import Principal, Status
from vigil.identity.store import IdentityPorts
from vigil.kit.cursor import cursor_position, encode_cursor
from vigil.kit.names import PRINTABLE, normalised
from vigil.kit.principals import PRINCIPAL_ID_PATTERN, Kind, Role
from vigil.kit.text import SEARCHABLE
from vigil.kit.tooling import OPERATORS, IdempotencyKey, Output, StrictInput, Tool


class AgentMailboxes(Protocol):
    """The mailboxes of the agents, which a revocation empties. They are built on identity,
    not part of it: the call's context hands them over."""

    def remove_all(self, namespace: str, owner: str) -> None:
        """Deletes the queues of every mailbox of the revoked agent ``owner``, with what they
        hold; idempotent."""


class IdentityContext(Call[IdentityPorts], Protocol):
    """What the identity tools read of a call."""

    @property
    def mailboxes(self) -> AgentMailboxes: ...


Name = Annotated[
    str,
    Field(
        min_length=1,
        max_length=100,
        pattern=PRINTABLE,
        description="Display name.",
    ),
    normalised(100),
]
PrincipalIdField = Annotated[
    str, Field(pattern=PRINCIPAL_ID_PATTERN, description="A principal id, e.g. agt_… or per_….")
]
Version = Annotated[int, Field(ge=1, description="The current version; a stale one conflicts.")]


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
        description="The new secret, shown only here; null on most replays (docs/TOOLS.md)."
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


def register(ctx: IdentityContext, args: RegisterInput) -> SecretIssued:
    return service.register(
        ctx.caller,
        args.kind,
        args.name,
        args.role,
        ctx.clock.now(),
        store=ctx.store,
        uow=ctx.uow,
        present=_issued,
    )


def _issued(principal: Principal, secret: str | None) -> SecretIssued:
    return SecretIssued(principal=PrincipalView.of(principal), secret=secret)


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


def rotate_secret(ctx: IdentityContext, args: RotateSecretInput) -> SecretIssued:
    return service.rotate(
        ctx.caller,
        args.principal_id or ctx.caller.principal_id,
        args.version,
        ctx.clock.now(),
        store=ctx.store,
        uow=ctx.uow,
        present=_issued,
    )


def revoke_principal(ctx: IdentityContext, args: RevokeInput) -> PrincipalResult:
    result = service.revoke(
        ctx.caller,
        args.principal_id,
        args.version,
        ctx.clock.now(),
        store=ctx.store,
        uow=ctx.uow,
        present=lambda principal: PrincipalResult(principal=PrincipalView.of(principal)),
    )
    resume_revoke(ctx, result.model_dump(mode="json"))
    return result


def resume_revoke(ctx: IdentityContext, result: dict[str, Any]) -> None:
    """After a revocation is committed, the revoked agent's mailbox queues are deleted, with
    what they hold: a replay of the call deletes what a crash left."""
    principal = result["principal"]
    if principal["kind"] == "agent":
        ctx.mailboxes.remove_all(ctx.caller.namespace, principal["id"])


# -- reads --------------------------------------------------------------------------------
class NoInput(StrictInput):
    pass


def whoami(ctx: IdentityContext, args: NoInput) -> PrincipalResult:
    return PrincipalResult(principal=PrincipalView.of(ctx.caller.principal))


LIST_AGENTS_MAX = 500


class AgentList(Output):
    agents: list[PrincipalView]
    truncated: bool = Field(
        description="More agents exist than one listing returns; page with list_directory."
    )


def list_agents(ctx: IdentityContext, args: NoInput) -> AgentList:
    found = ctx.store.list_principals(ctx.caller.namespace, "agent", None, LIST_AGENTS_MAX + 1)
    return AgentList(
        agents=[PrincipalView.of(p) for p in found[:LIST_AGENTS_MAX]],
        truncated=len(found) > LIST_AGENTS_MAX,
    )


class ListDirectoryInput(StrictInput):
    kind: Kind = Field(description="Which kind to list.")
    search: Annotated[str, Field(max_length=200), SEARCHABLE] | None = Field(
        default=None,
        description="Text matched in names and ids, any case.",
    )
    cursor: str | None = Field(
        default=None,
        max_length=512,
        description="next_cursor of the last page; same query.",
    )
    limit: int = Field(default=50, ge=1, le=100)


class DirectoryPage(Output):
    items: list[PrincipalView]
    next_cursor: str | None = Field(
        description="Pass back as cursor for the next page; null at the end."
    )
    order: Literal["id_ascending"] = "id_ascending"


def list_directory(ctx: IdentityContext, args: ListDirectoryInput) -> DirectoryPage:
    query = {"kind": args.kind, "q": args.search}
    after = cursor_position(args.cursor, "directory", str, **query) if args.cursor else None
    found, last = service.directory_page(
        ctx.caller, args.kind, args.search, after, args.limit, store=ctx.store
    )
    return DirectoryPage(
        items=[PrincipalView.of(p) for p in found],
        next_cursor=encode_cursor("directory", a=last, **query) if last is not None else None,
    )


TOOLS: tuple[Tool[IdentityContext], ...] = (
    Tool(
        name="register",
        title="Register a principal",
        description=(
            "Create a person, agent or service in your namespace; its secret is shown only "
            "here. An agent's mailbox is agent:<id>."
        ),
        input_model=RegisterInput,
        output_model=SecretIssued,
        run=register,
        roles=OPERATORS,
    ),
    Tool(
        name="rotate_secret",
        title="Rotate a secret",
        description=(
            "Replace a secret, the old one dead at once: yours, or as an operator a "
            "worker's. Answer lost: retry with the old secret and key within 10 minutes."
        ),
        input_model=RotateSecretInput,
        output_model=SecretIssued,
        run=rotate_secret,
    ),
    Tool(
        name="revoke_principal",
        title="Revoke a principal",
        description=(
            "Revoke a principal so its secret stops working: yourself, or as an operator a worker."
        ),
        input_model=RevokeInput,
        output_model=PrincipalResult,
        run=revoke_principal,
        resume=resume_revoke,
        destructive=True,
    ),
    Tool(
        name="whoami",
        title="Who am I",
        description="The caller's id, kind and role.",
        input_model=NoInput,
        output_model=PrincipalResult,
        run=whoami,
        read_only=True,
    ),
    Tool(
        name="list_agents",
        title="List agents",
        description=("Your namespace's agents and their mailbox addresses."),
        input_model=NoInput,
        output_model=AgentList,
        run=list_agents,
        read_only=True,
    ),
    Tool(
        name="list_directory",
        title="Search the directory",
        description=(
            "Page through your namespace's people, agents or services, one kind at a time, "
            "optionally searched."
        ),
        input_model=ListDirectoryInput,
        output_model=DirectoryPage,
        run=list_directory,
        read_only=True,
    ),
)
