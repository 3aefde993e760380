"""Namespaces, principals and credentials, and the console's sign-ins."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from vigil.kit.principals import Kind, Role, Surface, new_principal_id
from vigil.kit.records import Record, Versioned

Status = Literal["active", "revoked"]

NAMESPACE_PATTERN = r"^[a-z0-9][a-z0-9-]{1,62}$"
_SECRET_RE = re.compile(
    r"^vgl\.([a-z0-9][a-z0-9-]{1,62})\.((?:per|agt|svc)_[a-z2-7]{16})\.[A-Za-z0-9_-]{43}$"
)


class Namespace(Record):
    name: str
    created_at: datetime


class Principal(Versioned):
    namespace: str
    id: str
    kind: Kind
    name: str
    role: Role
    status: Status
    secret_hash: str
    created_at: datetime
    updated_at: datetime
    created_by: str | None
    # The ids of its live OAuth grants (vigil.grants.records): a token of any other grant of
    # its fails on the read that every call makes of its principal anyway.
    grants: tuple[str, ...] = ()

    @classmethod
    def registered(
        cls,
        namespace: str,
        kind: Kind,
        name: str,
        role: Role,
        secret_hash: str,
        created_by: str | None,
        now: datetime,
        principal_id: str | None = None,
    ) -> Principal:
        return cls(
            namespace=namespace,
            id=principal_id or new_principal_id(kind),
            kind=kind,
            name=name,
            role=role,
            status="active",
            secret_hash=secret_hash,
            created_at=now,
            updated_at=now,
            created_by=created_by,
            version=1,
        )

    def rotated(self, secret_hash: str, now: datetime) -> Principal:
        return self.changed(secret_hash=secret_hash, updated_at=now)

    def revoked(self, now: datetime) -> Principal:
        return self.changed(status="revoked", updated_at=now)


@dataclass(frozen=True)
class Caller:
    """Who is calling, established from the credential alone, and through which surface."""

    namespace: str
    principal_id: str
    kind: Kind
    role: Role
    principal: Principal  # as read while authenticating, so tools need not read it again
    via: Surface
    # An OAuth token's scopes (vigil.oauth.scopes); None for a secret, which may call all
    # that its role admits.
    scopes: frozenset[str] | None = None

    @property
    def is_operator(self) -> bool:
        return self.role == "operator"

    @property
    def is_overseer(self) -> bool:
        """People and operators oversee the namespace's agents: they watch its switches and
        deaths, and steer its sessions; agents and services see and work only their own."""
        return self.kind == "person" or self.is_operator


def issue_secret(namespace: str, principal_id: str) -> str:
    """A bearer secret that names its principal, so checking it costs one keyed read.

    The random part carries 256 bits; only its SHA-256 is stored. A fast hash is right here
    because the secret is not a human password: it cannot be guessed, only stolen.
    """
    return f"vgl.{namespace}.{principal_id}.{secrets.token_urlsafe(32)}"


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def parse_secret(secret: str) -> tuple[str, str] | None:
    match = _SECRET_RE.match(secret)
    return (match.group(1), match.group(2)) if match else None


def secret_matches(secret: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_secret(secret), stored_hash)


# Attempts to sign in to the console are counted in fixed windows of this length.
ATTEMPT_WINDOW_SECONDS = 15 * 60


@dataclass(frozen=True)
class SignInSession:
    """A console session as the server keeps it: live until ``ends_at``, when its cookie
    expires too, unless it is ended first."""

    namespace: str
    principal_id: str
    session_id: str
    ends_at: datetime


@dataclass(frozen=True)
class AttemptWindow:
    """The window of attempts to sign in that a moment falls in."""

    starts_at: datetime
    ends_at: datetime

    @classmethod
    def at(cls, now: datetime) -> AttemptWindow:
        start = int(now.timestamp()) // ATTEMPT_WINDOW_SECONDS * ATTEMPT_WINDOW_SECONDS
        return cls(
            datetime.fromtimestamp(start, UTC),
            datetime.fromtimestamp(start + ATTEMPT_WINDOW_SECONDS, UTC),
        )
