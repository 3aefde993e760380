"""Bring your own identity provider: access tokens of an external issuer (Amazon Cognito,
Microsoft Entra ID, Auth0, Keycloak, Okta...), checked with its published keys and mapped to a
Vigil principal by a rule the operator writes.

The issuer's metadata (OpenID Connect discovery, which each of those serves) names its
JWKS; both are fetched with the outbound guard and kept in this process for an hour, the keys
fetched again at most every five minutes when a token names a key they lack (the issuer
rotated). A token holds if its signature is one of those keys' (asymmetric algorithms only),
its ``iss`` is the issuer, its audience is the one configured (``aud``, or the claim the rule
names: Cognito's access tokens carry ``client_id`` instead), and it has not expired (a minute's
leeway for clocks). The rule then names the principal:

    namespace=acme;principal={custom:vigil_principal};require={groups}:vigil-users

- ``namespace``: a namespace's name, or ``{claim}`` for the claim that holds one;
- ``principal`` (required): ``{claim}``, the claim holding the principal's id (per_..., agt_...);
- ``require`` (any number): ``{claim}:value``, a claim that must equal the value, or list it;
- ``audience_claim``: the claim the audience is read from (``aud`` unless named).

The principal must exist and be active, as for a secret: revoking it stops its tokens. A
token's scopes are those of its ``scope`` (or ``scp``) claim that Vigil knows; if it has none,
all that its principal may hold (vigil.oauth.scopes)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from vigil.observability import get_logger, log_event

if TYPE_CHECKING:
    from vigil.notifications.outbound import Fetched

log = get_logger("vigil.oauth")

KEYS_SECONDS = 60 * 60
REFETCH_SECONDS = 5 * 60
LEEWAY_SECONDS = 60
MAX_METADATA_BYTES = 64 * 1024
ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA"]
_PRINCIPAL_ID = re.compile(r"^(per|agt|svc)_[a-z2-7]{16}$")
_NAMESPACE = re.compile(r"^[a-z0-9][a-z0-9-]{1,62}$")
_CLAIM = re.compile(r"^\{([^{}]+)\}$")

Fetch = Callable[[str], "Fetched"]


def fetcher(allow_private: bool) -> Fetch:
    """How the issuer's metadata and keys are fetched: the outbound guard's GET (private
    addresses only where the runtime is local)."""

    def fetch(url: str) -> Fetched:
        from vigil.notifications.outbound import get

        return get(
            url,
            max_bytes=MAX_METADATA_BYTES,
            timeout_seconds=5,
            accept="application/json",
            allow_private=allow_private,
        )

    return fetch


class RuleError(ValueError):
    """The operator's rule cannot be read; the message says where."""


@dataclass(frozen=True)
class ClaimRule:
    namespace: str  # a name, or "{claim}"
    principal_claim: str
    required: tuple[tuple[str, str], ...] = ()
    audience_claim: str = "aud"

    @classmethod
    def parse(cls, text: str) -> ClaimRule:
        fields: dict[str, str] = {}
        required: list[tuple[str, str]] = []
        for part in (p.strip() for p in text.split(";")):
            if not part:
                continue
            name, sep, value = part.partition("=")
            name, value = name.strip(), value.strip()
            if not sep or not value:
                raise RuleError(f"{part!r}: each part of the rule is name=value")
            if name == "require":
                claim, colon, wanted = value.rpartition(":")
                found = _CLAIM.match(claim)
                if not colon or found is None or not wanted:
                    raise RuleError(f"require={value}: write require={{claim}}:value")
                required.append((found.group(1), wanted))
            elif name in ("namespace", "principal", "audience_claim") and name not in fields:
                fields[name] = value
            else:
                raise RuleError(f"{name}: not a part of a rule, or given twice")
        principal = _CLAIM.match(fields.get("principal", ""))
        if principal is None:
            raise RuleError("principal={claim} is required: the claim that holds the principal id")
        namespace = fields.get("namespace", "")
        if not _CLAIM.match(namespace) and not _NAMESPACE.match(namespace):
            raise RuleError("namespace= names a namespace, or {claim} for the claim holding one")
        return cls(
            namespace, principal.group(1), tuple(required), fields.get("audience_claim", "aud")
        )

    def principal_of(self, claims: Mapping[str, Any]) -> tuple[str, str] | None:
        """The namespace and principal id ``claims`` map to; None if they map to none."""
        for claim, wanted in self.required:
            value = claims.get(claim)
            if not (value == wanted or (isinstance(value, list) and wanted in value)):
                return None
        named = _CLAIM.match(self.namespace)
        namespace = claims.get(named.group(1)) if named else self.namespace
        principal_id = claims.get(self.principal_claim)
        if not isinstance(namespace, str) or not _NAMESPACE.match(namespace):
            return None
        if not isinstance(principal_id, str) or not _PRINCIPAL_ID.match(principal_id):
            return None
        return namespace, principal_id


@dataclass(frozen=True)
class ExternalClaims:
    namespace: str
    principal_id: str
    scopes: frozenset[str]  # as the token says; empty if it names none of Vigil's


@dataclass
class ExternalIssuer:
    issuer: str
    audience: str
    rule: ClaimRule
    fetch: Fetch
    _keys: Any = None
    _keys_until: float = 0.0
    _fetched_at: float = float("-inf")
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def configured(
        cls, issuer: str, audience: str, rule: str, fetch: Fetch
    ) -> ExternalIssuer | None:
        """The issuer the settings name, or None where they name none. A rule that cannot be
        read, or an issuer without an audience, is a RuleError: a deployment that cannot
        check tokens as its operator meant must not start."""
        if not issuer:
            return None
        parts = urlsplit(issuer)
        if parts.scheme not in ("https", "http") or not parts.hostname:
            raise RuleError(f"the issuer {issuer!r} is not a URL")
        if not audience:
            raise RuleError("an external issuer needs the audience its tokens are for")
        return cls(issuer.rstrip("/"), audience, ClaimRule.parse(rule), fetch)

    def issued(self, token: str) -> bool:
        """Whether ``token`` says (unverified) that this issuer issued it."""
        from joserfc.errors import JoseError
        from joserfc.jws import extract_compact

        try:
            payload = json.loads(extract_compact(token.encode()).payload)
        except (JoseError, ValueError, TypeError):
            return False
        return isinstance(payload, dict) and payload.get("iss") == self.issuer

    def claims(self, token: str, now: datetime) -> ExternalClaims | None:
        """What a token of this issuer's stands for, checked; None for any token that fails
        a check."""
        from joserfc import jwt
        from joserfc.errors import JoseError

        at = now.timestamp()
        try:
            keys = self._key_set(at, refresh=False)
            try:
                decoded = jwt.decode(token, keys, algorithms=ALGORITHMS)
            except JoseError:
                refreshed = self._key_set(at, refresh=True)
                if refreshed is keys:
                    return None
                decoded = jwt.decode(token, refreshed, algorithms=ALGORITHMS)
            registry = jwt.JWTClaimsRegistry(
                now=int(at), leeway=LEEWAY_SECONDS, iss={"essential": True, "value": self.issuer}
            )
            registry.validate(decoded.claims)
        except (JoseError, ValueError, TypeError, _Unreadable) as refused:
            log_event(log, "external token refused", reason=type(refused).__name__)
            return None
        claims = decoded.claims
        if "exp" not in claims or not self._for_us(claims):
            return None
        mapped = self.rule.principal_of(claims)
        if mapped is None:
            return None
        named = claims.get("scope", claims.get("scp", ""))
        words = (
            named.split() if isinstance(named, str) else named if isinstance(named, list) else []
        )
        return ExternalClaims(
            mapped[0], mapped[1], frozenset(w for w in words if isinstance(w, str))
        )

    def _for_us(self, claims: Mapping[str, Any]) -> bool:
        said = claims.get(self.rule.audience_claim)
        return said == self.audience or (isinstance(said, list) and self.audience in said)

    def _key_set(self, at: float, *, refresh: bool) -> Any:
        """The issuer's keys: those kept, unless they are older than KEYS_SECONDS or a token
        named one they lack (``refresh``, at most every REFETCH_SECONDS)."""
        from joserfc.jwk import KeySet

        with self._lock:
            stale = self._keys is None or at >= self._keys_until
            if not stale and not (refresh and at - self._fetched_at >= REFETCH_SECONDS):
                return self._keys
            self._fetched_at = at
            document = self._json(self._metadata_url())
            jwks_uri = document.get("jwks_uri")
            if document.get("issuer", "").rstrip("/") != self.issuer or not isinstance(
                jwks_uri, str
            ):
                raise _Unreadable("the issuer's metadata names another issuer, or no jwks_uri")
            self._keys = KeySet.import_key_set(self._json(jwks_uri))  # type: ignore[arg-type]
            self._keys_until = at + KEYS_SECONDS
            return self._keys

    def _metadata_url(self) -> str:
        """OpenID Connect discovery's address (every provider named above serves it)."""
        return f"{self.issuer}/.well-known/openid-configuration"

    def _json(self, url: str) -> dict[str, Any]:
        fetched = self.fetch(url)
        if fetched.body is None:
            raise _Unreadable(fetched.problem)
        try:
            found = json.loads(fetched.body)
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise _Unreadable("not JSON") from None
        if not isinstance(found, dict):
            raise _Unreadable("not a JSON object")
        return found


class _Unreadable(Exception):
    """The issuer's metadata or keys could not be read."""
