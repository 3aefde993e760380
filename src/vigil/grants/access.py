"""Access tokens: JWTs (RFC 9068's profile) signed with the deployment's own key, for one
resource, for ACCESS_TOKEN_SECONDS. Checking one costs no read: the signature, the issuer,
the audience and the expiry; the caller then reads the principal as for a secret, and the
token holds while its grant is among the principal's live ones.

The JOSE library is loaded by the first token, not by a call made with a secret."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from vigil.grants.records import ACCESS_TOKEN_SECONDS
from vigil.kit.keys import Keys

_PURPOSE = "oauth-access-token"
_TYPE = "at+jwt"
# Tokens this process has checked, with their claims and expiry: a host calls many times with
# one token, and its signature need not be checked again. The expiry is checked on each call,
# and the grant's liveness by the caller's read of the principal, as for any token.
_CHECKED: dict[tuple[bytes, str, str], tuple[AccessClaims, int]] = {}
_CHECKED_MAX = 4096


@dataclass(frozen=True)
class AccessClaims:
    namespace: str
    principal_id: str
    grant_id: str
    client_id: str
    scopes: frozenset[str]


def looks_like_access_token(text: str) -> bool:
    """Whether ``text`` has a JWT's shape (a secret and a refresh token never do)."""
    return text.startswith("eyJ") and text.count(".") == 2


def issue(
    keys: Keys,
    *,
    issuer: str,
    resource: str,
    claims: AccessClaims,
    now: datetime,
) -> str:
    from joserfc import jwt
    from joserfc.jwk import OctKey

    at = int(now.timestamp())
    payload = {
        "iss": issuer,
        "aud": resource,
        "sub": claims.principal_id,
        "ns": claims.namespace,
        "gid": claims.grant_id,
        "client_id": claims.client_id,
        "scope": " ".join(sorted(claims.scopes)),
        "iat": at,
        "exp": at + ACCESS_TOKEN_SECONDS,
        "jti": secrets.token_urlsafe(12),
    }
    key = OctKey.import_key(keys.for_purpose(_PURPOSE))
    return jwt.encode({"alg": "HS256", "typ": _TYPE}, payload, key)


def verify(keys: Keys, token: str, resource: str | None, now: datetime) -> AccessClaims | None:
    """The claims of a token this deployment signed for ``resource`` that has not expired at
    ``now``; None for any other text (a token for another resource, or none named)."""
    if resource is None or not looks_like_access_token(token):
        return None
    at = int(now.timestamp())
    secret = keys.for_purpose(_PURPOSE)
    checked = _CHECKED.get((secret, token, resource))
    if checked is not None:
        return checked[0] if at < checked[1] else None
    from joserfc import jwt
    from joserfc.errors import JoseError
    from joserfc.jwk import OctKey

    key = OctKey.import_key(secret)
    try:
        decoded = jwt.decode(token, key, algorithms=["HS256"])
        if decoded.header.get("typ") != _TYPE:
            return None
        registry = jwt.JWTClaimsRegistry(
            now=at,
            aud={"essential": True, "value": resource},
            exp={"essential": True},
            sub={"essential": True},
        )
        registry.validate(decoded.claims)
    except (JoseError, ValueError, TypeError):
        return None
    claims = _claims(decoded.claims)
    if claims is not None:
        if len(_CHECKED) >= _CHECKED_MAX:
            _CHECKED.clear()
        _CHECKED[(secret, token, resource)] = (claims, int(decoded.claims["exp"]))
    return claims


def _claims(claims: dict[str, Any]) -> AccessClaims | None:
    fields = (claims.get("ns"), claims.get("sub"), claims.get("gid"), claims.get("client_id"))
    scope = claims.get("scope")
    if not all(isinstance(value, str) for value in fields) or not isinstance(scope, str):
        return None
    namespace, principal_id, grant_id, client_id = (str(value) for value in fields)
    return AccessClaims(namespace, principal_id, grant_id, client_id, frozenset(scope.split()))
