"""Sealing: a text encrypted under a key derived from a secret, so that only a holder of that
secret reads it back, and nothing readable is stored.

AES-256-GCM, an AEAD: a wrong key or a changed byte fails to open, never yields garbage. The key
is derived with HKDF-SHA256 from the secret and a random salt. The secrets sealed under carry 256
random bits, so a fast derivation is enough, as for their digests (a slow password hash would
protect nothing more). ``context`` is authenticated, not encrypted: a sealed text opens only in
the context it was sealed in, so it cannot be moved to another record or outlive what it is
bound to.

``cryptography`` is imported when a text is sealed or opened, which is rare, so that a cold start
does not pay for it.
"""

from __future__ import annotations

import base64
import secrets

from vigil.kit.records import Record


class Sealed(Record):
    salt: str  # URL-safe base64, as the two below
    nonce: str
    ciphertext: str


def _encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode()


def _key(secret: str, salt: bytes, context: str) -> bytes:
    from cryptography.hazmat.primitives.hashes import SHA256
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=SHA256(), length=32, salt=salt, info=context.encode()).derive(
        secret.encode()
    )


def seal(secret: str, text: str, context: str) -> Sealed:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    salt, nonce = secrets.token_bytes(16), secrets.token_bytes(12)
    box = AESGCM(_key(secret, salt, context))
    ciphertext = box.encrypt(nonce, text.encode(), context.encode())
    return Sealed(salt=_encode(salt), nonce=_encode(nonce), ciphertext=_encode(ciphertext))


def unseal(secret: str, sealed: Sealed, context: str) -> str | None:
    """The text sealed under ``secret`` in ``context``; None for any other secret or context."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    salt, nonce, ciphertext = (
        base64.urlsafe_b64decode(part) for part in (sealed.salt, sealed.nonce, sealed.ciphertext)
    )
    try:
        text = AESGCM(_key(secret, salt, context)).decrypt(nonce, ciphertext, context.encode())
    except InvalidTag:
        return None
    return text.decode()
