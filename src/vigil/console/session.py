"""The console's session: a signed cookie that stands for a principal's secret for a while.

The secret is given once, on the sign-in form, checked like any call's credential, and never
kept: the cookie carries the principal's name, when it was signed in and until when the
cookie holds, a random session id and a fingerprint of the principal's *current* secret digest,
all signed with HMAC-SHA256 under the deployment's console key. Each request checks the
signature and the expiry, reads the principal (one keyed read, as any call's credential costs)
and checks that it is active and that its secret has not changed since: rotating or revoking a
secret ends every console session made with it at once.

A session lasts ``IDLE_SECONDS`` after its last use (the cookie is reissued as it is used) and
never more than ``MAX_SECONDS`` after sign-in. The CSRF token of every form is derived from the
session id under the same key, so a form works only inside the session that rendered it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass, replace
from datetime import datetime

from vigil.identity.records import Principal

COOKIE = "__Host-vigil-console"
# The sign-in form's own CSRF token (there is no session yet): a random value in a cookie that
# the form must repeat, and that a page of another origin can neither read nor set.
SIGN_IN_COOKIE = "__Host-vigil-sign-in"

IDLE_SECONDS = 60 * 60
MAX_SECONDS = 12 * 60 * 60
# A cookie is reissued when this much or less is left of its idle time, not on every request.
REISSUE_BELOW_SECONDS = IDLE_SECONDS - 5 * 60


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def same(given: str, expected: str) -> bool:
    """Whether ``given`` (from a request: any text at all) is ``expected``, in constant time.
    Compared as UTF-8 bytes: ``hmac.compare_digest`` refuses str with non-ASCII characters
    with a TypeError, which a cookie or a form field must not be able to raise."""
    return hmac.compare_digest(given.encode(), expected.encode())


def fingerprint(principal: Principal) -> str:
    """What a session knows of the secret it was made with: enough to see that the secret
    changed, nothing that helps to find it or to pass for it."""
    return hashlib.sha256(f"vigil-console:{principal.secret_hash}".encode()).hexdigest()[:32]


@dataclass(frozen=True)
class ConsoleSession:
    namespace: str
    principal_id: str
    fingerprint: str
    signed_in_at: int  # Unix seconds
    expires_at: int
    session_id: str

    def holds_for(self, principal: Principal) -> bool:
        return (
            principal.status == "active"
            and principal.namespace == self.namespace
            and principal.id == self.principal_id
            and hmac.compare_digest(fingerprint(principal), self.fingerprint)
        )


class Signer:
    """Issues and reads session cookies and CSRF tokens under one key."""

    def __init__(self, key: bytes) -> None:
        if len(key) < 32:
            raise ValueError("the console key must have at least 256 bits")
        self._key = key

    def _mac(self, purpose: str, message: str) -> str:
        return _b64(hmac.new(self._key, f"{purpose}:{message}".encode(), hashlib.sha256).digest())

    def issue(self, principal: Principal, now: datetime) -> ConsoleSession:
        at = int(now.timestamp())
        return ConsoleSession(
            namespace=principal.namespace,
            principal_id=principal.id,
            fingerprint=fingerprint(principal),
            signed_in_at=at,
            expires_at=min(at + IDLE_SECONDS, at + MAX_SECONDS),
            session_id=secrets.token_urlsafe(16),
        )

    def renewed(self, session: ConsoleSession, now: datetime) -> ConsoleSession | None:
        """The same session with its idle time started again, or None if it need not be yet."""
        at = int(now.timestamp())
        if session.expires_at - at > REISSUE_BELOW_SECONDS:
            return None
        expires = min(at + IDLE_SECONDS, session.signed_in_at + MAX_SECONDS)
        if expires <= session.expires_at:
            return None
        return replace(session, expires_at=expires)

    def encode(self, session: ConsoleSession) -> str:
        payload = _b64(
            json.dumps(
                [
                    session.namespace,
                    session.principal_id,
                    session.fingerprint,
                    session.signed_in_at,
                    session.expires_at,
                    session.session_id,
                ],
                separators=(",", ":"),
            ).encode()
        )
        return f"{payload}.{self._mac('session', payload)}"

    def decode(self, value: str, now: datetime) -> ConsoleSession | None:
        """The session ``value`` signs, if the signature is ours and it has not expired."""
        payload, _, mac = value.partition(".")
        if not payload or not same(mac, self._mac("session", payload)):
            return None
        try:
            namespace, principal_id, print_, signed_in, expires, session_id = json.loads(
                _unb64(payload)
            )
        except (ValueError, TypeError, binascii.Error):
            return None
        at = now.timestamp()
        if not isinstance(expires, int) or not isinstance(signed_in, int):
            return None
        if at >= expires or at >= signed_in + MAX_SECONDS:
            return None
        return ConsoleSession(namespace, principal_id, print_, signed_in, expires, session_id)

    def csrf_token(self, session_id: str) -> str:
        return self._mac("csrf", session_id)

    def csrf_holds(self, session_id: str, token: str | None) -> bool:
        return token is not None and same(token, self.csrf_token(session_id))


def cookie(name: str, value: str, max_age: int, path: str = "/") -> str:
    """A Set-Cookie value no script can read and no other site can send: ``__Host-`` names
    require Secure, Path=/ and no Domain, so no subdomain can set or shadow them."""
    return f"{name}={value}; Max-Age={max_age}; Path={path}; Secure; HttpOnly; SameSite=Strict"


def cleared(name: str) -> str:
    return cookie(name, "", 0)
