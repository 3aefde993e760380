"""HTTP primitives shared by the transports, the console and the local server: a request and
a response type, a body read as I-JSON, header helpers, how an error becomes a status, and
static files served under names that carry their content's digest."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from importlib.abc import Traversable
from typing import Any

from vigil.errors import HTTP_STATUS, VigilError, invalid, limit_exceeded_body
from vigil.kit.bounds import InexactNumber
from vigil.kit.events import cut


@dataclass
class HttpResponse:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    cookies: list[str] = field(default_factory=list)  # Set-Cookie values, one each

    @classmethod
    def json(cls, status: int, payload: Any, headers: dict[str, str] | None = None) -> HttpResponse:
        return cls(
            status,
            # ASCII with escapes: valid whatever a caller echoed into it, a lone surrogate too.
            json.dumps(payload, separators=(",", ":")).encode(),
            {"content-type": "application/json", **(headers or {})},
        )


@dataclass
class HttpRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    request_id: str | None = None
    query: dict[str, str] = field(default_factory=dict)
    cookies: dict[str, str] = field(default_factory=dict)
    # The address the request came from, as API Gateway saw it (never a header a client sets).
    source_ip: str | None = None

    def bearer(self) -> str | None:
        value = self.headers.get("authorization", "")
        scheme, _, token = value.partition(" ")
        return token.strip() or None if scheme.lower() == "bearer" else None

    def origin(self) -> str | None:
        """The origin the caller reached: the Host it asked for, by the scheme the edge says it
        came in on (API Gateway and CloudFront set X-Forwarded-Proto)."""
        host = self.headers.get("host")
        if not host:
            return None
        proto = self.headers.get("x-forwarded-proto", "https").split(",")[0].strip()
        return f"{proto}://{host}"


# The largest request body a tool call can need is a 64 KiB attachment in base64 inside JSON;
# anything above this is refused, typed, before it is parsed. Below it, an over-long field is
# reported as that field's problem, which tells a caller more.
MAX_BODY_BYTES = 2 * 1024 * 1024


# A refusal names the member given twice, cut to this many characters.
NAMED_MEMBER = 100


def json_body(body: bytes) -> Any:
    """``body`` read as I-JSON (RFC 7493), or invalid_argument: bytes that are not JSON, and
    an object that names a member twice. A reader keeps only one of the two values (Python's
    the last), so what a person was shown and what a call means could differ: an approval of
    ``{"op": "deploy"}`` would redeem for ``{"op": "delete-all", "op": "deploy"}``. A number no
    double holds exactly is read as an ``InexactNumber``, which every field refuses, naming it
    (kit/bounds.py): ``10000000000000001.0`` would otherwise be kept, and shown, as
    ``10000000000000000``."""
    try:
        return json.loads(
            body,
            object_pairs_hook=_members_once,
            parse_float=_float_or_inexact,
            parse_int=_int_or_inexact,
        )
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise invalid("the body is not valid JSON") from None


# The largest integer every reader (a double, JavaScript's number) holds exactly.
_EXACT_INTEGERS = 2**53


def _float_or_inexact(text: str) -> float | InexactNumber:
    """A JSON number with a fraction or exponent, if the double it reads as is the number
    written (``1.10`` is; ``10000000000000001.0`` and ``1e400`` are not)."""
    from decimal import Decimal  # a body with a fraction is rare: not every cold start's

    value = float(text)
    if not math.isfinite(value) or Decimal(text) != Decimal(repr(value)):
        return InexactNumber(text)
    return value


def _int_or_inexact(text: str) -> int | InexactNumber:
    value = int(text)
    if abs(value) > _EXACT_INTEGERS and float(value) != value:
        return InexactNumber(text)
    return value


def _members_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    members = dict(pairs)
    if len(members) < len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                raise invalid(
                    "the body names a member twice in one object: "
                    "I-JSON (RFC 7493) takes each name once",
                    member=cut(name, NAMED_MEMBER),
                )
            seen.add(name)
    return members


PROTECTED_RESOURCE_METADATA = "/.well-known/oauth-protected-resource"


def challenge(request: HttpRequest) -> dict[str, str]:
    """The WWW-Authenticate header of a 401: a bearer credential, and where the metadata
    saying how to get one is."""
    origin = request.origin()
    metadata = f', resource_metadata="{origin}{PROTECTED_RESOURCE_METADATA}"' if origin else ""
    return {"www-authenticate": f'Bearer realm="vigil"{metadata}'}


def failure(error: VigilError, headers: dict[str, str] | None = None) -> HttpResponse:
    """The typed JSON answer of a refusal, with the status its code has."""
    return HttpResponse.json(HTTP_STATUS[error.code], {"error": error.to_dict()}, headers)


def method_not_allowed(request: HttpRequest, *allowed: str) -> HttpResponse:
    """405, typed: the body says which methods the path takes, as the Allow header does."""
    methods = ", ".join(allowed)
    error = invalid(f"{request.method} is not allowed on {request.path}; use {methods}")
    return HttpResponse.json(405, {"error": error.to_dict()}, {"allow": methods})


def too_large(request: HttpRequest) -> HttpResponse | None:
    """413, typed, for a body over MAX_BODY_BYTES; None for any other."""
    if len(request.body) <= MAX_BODY_BYTES:
        return None
    return failure(limit_exceeded_body(MAX_BODY_BYTES))


# An asset's name changes with its content, so a copy never needs checking again.
ASSET_CACHE_CONTROL = "public, max-age=31536000, immutable"


@dataclass(frozen=True)
class Asset:
    name: str  # the file's own name, e.g. console.css
    path: str  # where it is served, versioned by its content's digest
    body: bytes
    content_type: str


def asset(folder: Traversable, name: str, content_type: str, under: str) -> Asset:
    """The file ``name`` of ``folder``, served under ``under`` as ``stem.<digest>.ext``."""
    body = (folder / name).read_bytes()
    stem, ext = name.rsplit(".", 1)
    digest = hashlib.sha256(body).hexdigest()[:12]
    return Asset(name, f"{under}/{stem}.{digest}.{ext}", body, content_type)
