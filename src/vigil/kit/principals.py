"""Principals as every capability names them: their kinds and roles, and the ids of
everything Vigil stores (a kind's prefix and base32 characters), made and read back."""

from __future__ import annotations

import re
import secrets
from typing import Literal

Kind = Literal["person", "agent", "service"]
Role = Literal["operator", "worker"]
# The surface a call came through, as the transport knows it (the CLI says so in its
# User-Agent): told beside a decision, never a source of authority. "standing": a vote that a
# person's standing approval cast at ask time (vigil.requests.standing).
Surface = Literal["mcp", "rest", "console", "cli", "slack", "email", "standing"]
CLI_AGENT = "vigil-cli/"

KIND_PREFIX: dict[Kind, str] = {"person": "per", "agent": "agt", "service": "svc"}
PRINCIPAL_ID_PATTERN = r"^(per|agt|svc)_[a-z2-7]{16}$"
_ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"


def _random(length: int) -> str:
    return "".join(secrets.choice(_ID_ALPHABET) for _ in range(length))


def new_id(prefix: str, length: int = 16) -> str:
    return f"{prefix}_{_random(length)}"


def id_pattern(prefix: str) -> str:
    """The pattern of the ids new_id makes with ``prefix``."""
    return rf"^{prefix}_[a-z2-7]{{16}}$"


# A numbered id has the shape of every other id (a kind and 16 base32 characters), and its
# first 8 characters are its number, so that finding what it names is one keyed read; the
# random rest keeps an id of one sequence from naming the same number of another.
_NUMBER_CHARS = 8  # 40 bits: more than one sequence will ever number


def numbered_id(prefix: str, number: int) -> str:
    digits = "".join(_ID_ALPHABET[(number >> (5 * i)) & 31] for i in reversed(range(_NUMBER_CHARS)))
    return f"{prefix}_{digits}{_random(_NUMBER_CHARS)}"


def number_in(prefix: str, numbered: str) -> int | None:
    """The number of an id ``numbered_id(prefix, …)`` made; None for any other text."""
    match = re.fullmatch(prefix + r"_([a-z2-7]{8})[a-z2-7]{8}", numbered)
    if match is None:
        return None
    number = 0
    for char in match.group(1):
        number = number * 32 + _ID_ALPHABET.index(char)
    return number or None


def kind_of(principal_id: str) -> Kind:
    """The kind of the principal ``principal_id`` names: ids begin with their kind."""
    for kind, prefix in KIND_PREFIX.items():
        if principal_id.startswith(prefix + "_"):
            return kind
    raise ValueError("not a principal id")


def new_principal_id(kind: Kind) -> str:
    return new_id(KIND_PREFIX[kind])
