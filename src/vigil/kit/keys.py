"""The deployment's service key, and the keys derived from it for each purpose.

One random secret per deployment (template.yaml's ``ServiceKey``, in Secrets Manager), read on
first use, from which each purpose derives its own 256-bit key: the console signs its cookies
with one, channels seal their signing secrets with another, so no key serves two purposes.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable


class Keys:
    def __init__(self, load: Callable[[], str]) -> None:
        self._load = load
        self._secret: str | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_env(cls) -> Keys:
        """The secret named by SERVICE_KEY_ARN, read from Secrets Manager on first use (once
        per sandbox), not at init: only calls that need a key pay for the read."""

        def load() -> str:
            from vigil.wiring import aws_client

            arn = os.environ.get("SERVICE_KEY_ARN")
            if not arn:
                raise RuntimeError("missing configuration: SERVICE_KEY_ARN")
            value: str = aws_client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"]
            return value

        return cls(load)

    @classmethod
    def fixed(cls, secret: str) -> Keys:
        return cls(lambda: secret)

    def for_purpose(self, purpose: str) -> bytes:
        with self._lock:
            if self._secret is None:
                self._secret = self._load()
            secret = self._secret
        return hashlib.sha256(f"vigil:{purpose}:{secret}".encode()).digest()
