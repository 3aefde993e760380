"""The deployment's service key, and the keys derived from it for each purpose.

One random secret per deployment (template.yaml's ``ServiceKey``, in Secrets Manager, which
``vigil.wiring.keys`` reads), loaded on first use, from which each purpose derives its own
256-bit key: the console signs its cookies with one, channels seal their signing secrets with
another, so no key serves two purposes.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable


class Keys:
    def __init__(self, load: Callable[[], str]) -> None:
        self._load = load
        self._secret: str | None = None
        self._lock = threading.Lock()

    @classmethod
    def fixed(cls, secret: str) -> Keys:
        return cls(lambda: secret)

    def for_purpose(self, purpose: str) -> bytes:
        with self._lock:
            if self._secret is None:
                self._secret = self._load()
            secret = self._secret
        return hashlib.sha256(f"vigil:{purpose}:{secret}".encode()).digest()
