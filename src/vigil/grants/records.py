"""The authorization server's records: clients, the codes of consents not yet redeemed, and
grants (a person's or agent's consent to one client, and the family of its refresh tokens).

A grant's refresh token names the grant and its generation; only the digest of the current
one is kept. Redeeming it moves the generation on (a conditional write on the grant's
version); presenting one of an earlier generation is a reuse, and revokes the grant, so that
whichever of the two holders was the thief loses it with the other (RFC 9700, 4.14.2). A live
grant's id is also kept on its principal, which every call reads anyway: an access token
holds while its grant is on its principal, so revoking a grant or its principal stops its
tokens at once, for no read more than a secret costs."""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import datetime, timedelta
from typing import Literal

from vigil.kit.principals import new_id
from vigil.kit.records import Record, Versioned

AuthMethod = Literal["none", "client_secret_post", "client_secret_basic"]
ClientSource = Literal["registered", "metadata_document"]
GrantStatus = Literal["active", "revoked"]
# How a grant ended: its holder or an operator revoked it (from the console or RFC 7009's
# endpoint), or one of its refresh tokens came back after it had been replaced.
Ending = Literal["revoked", "refresh_token_reused", "code_replayed"]

GRANT_PREFIX = "grt"
CLIENT_PREFIX = "vgc"
# A principal holds at most this many live grants (its hosts, each signed in once).
MAX_GRANTS_PER_PRINCIPAL = 20
CODE_SECONDS = 300
ACCESS_TOKEN_SECONDS = 15 * 60
# An unused grant ends; each refresh moves its end on by as much.
GRANT_IDLE_DAYS = 90
# A grant is kept this long after its last use or its end (for the Sign-ins page), then
# deleted (DynamoDB's TTL). Its principal's list of live grants forgets it at its next grant.
GRANT_KEPT_DAYS = 180

_REFRESH = re.compile(
    r"^vgr\.([a-z0-9][a-z0-9-]{1,62})\.(grt_[a-z2-7]{16})\.([1-9][0-9]{0,8})\.[A-Za-z0-9_-]{43}$"
)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class Client(Record):
    """A client as this server knows it: registered here (RFC 7591), or described by the
    metadata document its https client_id names (fetched, never stored)."""

    client_id: str
    name: str
    redirect_uris: tuple[str, ...]
    auth_method: AuthMethod
    secret_hash: str | None  # for a confidential client registered here
    source: ClientSource
    created_at: datetime | None = None


class Code(Record):
    """A consent, until its client redeems it once within CODE_SECONDS. Kept by its digest."""

    code_hash: str
    client_id: str
    redirect_uri: str
    scopes: tuple[str, ...]
    resource: str
    challenge: str
    namespace: str
    principal_id: str
    expires_at: datetime
    grant_id: str  # the grant its redemption creates, chosen at consent
    redeemed: bool = False


class Grant(Versioned):
    namespace: str
    id: str
    principal_id: str
    client_id: str
    client_name: str
    redirect_uri: str
    scopes: tuple[str, ...]
    resource: str
    status: GrantStatus
    created_at: datetime
    used_at: datetime  # its last token
    refresh_generation: int
    refresh_hash: str
    ended_by: str | None = None  # who revoked it; None for the server (a reuse) or not ended
    ending: Ending | None = None

    @property
    def kept_until(self) -> datetime:
        return self.used_at + timedelta(days=GRANT_KEPT_DAYS)

    @property
    def host(self) -> str:
        """Where its redirects go: what a person recognises a client by, besides its name."""
        rest = self.redirect_uri.split("://", 1)[-1]
        return rest.split("/", 1)[0] or self.redirect_uri

    def refreshed(self, refresh_hash: str, now: datetime) -> Grant:
        return self.changed(
            refresh_generation=self.refresh_generation + 1, refresh_hash=refresh_hash, used_at=now
        )

    def ended(self, ending: Ending, by: str | None, now: datetime) -> Grant:
        return self.changed(status="revoked", ending=ending, ended_by=by, used_at=now)


def new_grant_id() -> str:
    return new_id(GRANT_PREFIX)


def new_client_id() -> str:
    return new_id(CLIENT_PREFIX)


def refresh_token(namespace: str, grant_id: str, generation: int) -> str:
    return f"vgr.{namespace}.{grant_id}.{generation}.{secrets.token_urlsafe(32)}"


def parse_refresh_token(token: str) -> tuple[str, str, int] | None:
    """The namespace, grant and generation a refresh token names; None for other text."""
    match = _REFRESH.match(token)
    return (match.group(1), match.group(2), int(match.group(3))) if match else None
