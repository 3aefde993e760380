"""The local engines' lock: AWS Signature Version 4, checked as AWS checks it.

DynamoDB Local and moto check no signature: any caller that names an access key id is served.
Locally they are guarded by this instead. Each request must carry a SigV4 signature (in its
Authorization header, in a presigned URL's query, or as a presigned POST form's policy
signature) made with the secret of a key the runtime knows; the signature is recomputed here
from the request as it arrived and compared in constant time. Expiry is checked too: a
presigned URL or form dies when it says, a signed request 15 minutes after it was signed.

The keys are drawn at random when the runtime starts; they live in its memory and in the
state directory's ``keys.json`` (mode 0600), for the tools of the machine's user.
"""

from __future__ import annotations

import base64
import calendar
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

ALGORITHM = "AWS4-HMAC-SHA256"
UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"
# How far a signed request's date may be from now, as AWS allows.
_SKEW_SECONDS = 15 * 60
_LONGEST_PRESIGN_SECONDS = 7 * 24 * 60 * 60


class Refused(Exception):
    """The request is not signed by a key the runtime knows, or its signature is not valid."""


class UnknownKey(Refused):
    """The request names an access key the runtime does not know."""


@dataclass(frozen=True)
class AccessKey:
    id: str
    secret: str

    @classmethod
    def new(cls, prefix: str) -> AccessKey:
        # Letters and digits only: DynamoDB Local refuses other characters in a key id.
        return cls(prefix + secrets.token_hex(16), secrets.token_hex(32))


@dataclass(frozen=True)
class RuntimeKeys:
    """The keys the runtime signs with, new at each start: ``runtime`` reaches everything and
    never leaves the runtime; ``presign`` signs the presigned URLs and forms it hands out, and
    moto lets it do nothing else."""

    runtime: AccessKey
    presign: AccessKey

    @classmethod
    def new(cls) -> RuntimeKeys:
        return cls(AccessKey.new("vigil"), AccessKey.new("vigilpresign"))

    def saved(self) -> dict[str, dict[str, str]]:
        """What keys.json holds, for a tool of this machine's user (the aws CLI, a script) to
        reach the engines with while the runtime runs."""
        return {
            name: {"id": key.id, "secret": key.secret}
            for name, key in (("runtime", self.runtime), ("presign", self.presign))
        }


@dataclass(frozen=True)
class Signed:
    """Who signed a request, for which service, and how."""

    key_id: str
    service: str
    presigned: bool


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode("utf-8"), hashlib.sha256).digest()


def _signature(secret: str, scope: list[str], string_to_sign: str) -> str:
    key = ("AWS4" + secret).encode("utf-8")
    for part in scope:
        key = _hmac(key, part)
    return hmac.new(key, string_to_sign.encode("utf-8"), hashlib.sha256).hexdigest()


def _epoch(amz_date: str) -> int:
    try:
        return calendar.timegm(time.strptime(amz_date, "%Y%m%dT%H%M%SZ"))
    except ValueError:
        raise Refused("the request's date is not in the form 20260101T000000Z") from None


def _pairs(query: str) -> list[tuple[str, str]]:
    pairs = []
    for part in query.split("&") if query else []:
        name, _, value = part.partition("=")
        pairs.append((unquote(name), unquote(value)))
    return pairs


def _canonical_query(pairs: list[tuple[str, str]]) -> str:
    encoded = sorted((quote(n, safe="-_.~"), quote(v, safe="-_.~")) for n, v in pairs)
    return "&".join(f"{name}={value}" for name, value in encoded)


def _credential(value: str) -> tuple[str, list[str]]:
    """The key id and scope (date, region, service, aws4_request) of a Credential value."""
    key_id, *scope = value.split("/")
    if len(scope) != 4 or scope[3] != "aws4_request" or not key_id:
        raise Refused("the credential is not a SigV4 credential")
    return key_id, scope


def _secret_of(keys: Mapping[str, str], key_id: str) -> str:
    secret = keys.get(key_id)
    if secret is None:
        raise UnknownKey("the access key is not one of this runtime's")
    return secret


def _check(expected: str, given: str) -> None:
    if not hmac.compare_digest(expected.encode(), given.encode()):
        raise Refused("the signature does not match")


def signer_known(query: str, headers: Mapping[str, str], keys: Mapping[str, str]) -> None:
    """Refused unless the request names, in its Authorization header or its query, a key this
    runtime knows: checked before its body is read, so an unsigned or foreign request costs
    nothing but its headers. (A POST form carries its key in its body: its size is bounded.)"""
    authorization = headers.get("authorization", "")
    if authorization:
        _, _, rest = authorization.partition(" ")
        fields = dict(p.strip().partition("=")[::2] for p in rest.split(","))
        credential = fields.get("Credential", "")
    else:
        credential = dict(_pairs(query)).get("X-Amz-Credential", "")
        if not credential:
            raise Refused("the request is not signed")
    key_id, _ = _credential(credential)
    _secret_of(keys, key_id)


def verify(
    *,
    method: str,
    path: str,
    query: str,
    headers: Mapping[str, str],
    body: bytes,
    keys: Mapping[str, str],
    now: float,
) -> Signed:
    """Checks a request signed in its Authorization header or presigned in its query.

    ``path`` and ``query`` are as they arrived (still percent-encoded); ``headers`` has lower
    case names; ``keys`` maps each key id the runtime knows to its secret.
    """
    pairs = _pairs(query)
    given = dict(pairs)
    authorization = headers.get("authorization", "")
    if authorization:
        algorithm, _, rest = authorization.partition(" ")
        fields = dict(p.strip().partition("=")[::2] for p in rest.split(","))
        credential = fields.get("Credential", "")
        signed_headers = fields.get("SignedHeaders", "")
        signature = fields.get("Signature", "")
        amz_date = headers.get("x-amz-date", "")
        presigned = False
    elif "X-Amz-Signature" in given:
        algorithm = given.get("X-Amz-Algorithm", "")
        credential = given.get("X-Amz-Credential", "")
        signed_headers = given.get("X-Amz-SignedHeaders", "")
        signature = given["X-Amz-Signature"]
        amz_date = given.get("X-Amz-Date", "")
        pairs = [(n, v) for n, v in pairs if n != "X-Amz-Signature"]
        presigned = True
    else:
        raise Refused("the request is not signed")
    if algorithm != ALGORITHM:
        raise Refused(f"only {ALGORITHM} signatures are accepted")
    key_id, scope = _credential(credential)
    secret = _secret_of(keys, key_id)
    signed_at = _epoch(amz_date)
    if scope[0] != amz_date[:8]:
        raise Refused("the credential's date is not the request's")
    if presigned:
        try:
            expires = int(given.get("X-Amz-Expires", ""))
        except ValueError:
            raise Refused("a presigned request must say when it expires") from None
        if not 0 < expires <= _LONGEST_PRESIGN_SECONDS or now > signed_at + expires:
            raise Refused("the presigned request has expired")
    elif abs(now - signed_at) > _SKEW_SECONDS:
        raise Refused("the request was signed too long ago")
    names = signed_headers.split(";")
    if "host" not in names:
        raise Refused("the signature must cover the host")
    service = scope[2]
    canonical_headers = "".join(f"{n}:{' '.join(headers.get(n, '').split())}\n" for n in names)
    payload = headers.get("x-amz-content-sha256") or (
        UNSIGNED_PAYLOAD if presigned else hashlib.sha256(body).hexdigest()
    )
    # S3 signs the path as sent; the other services sign it encoded once more.
    canonical_path = path if service == "s3" else quote(path, safe="/~")
    canonical_request = "\n".join(
        [
            method.upper(),
            canonical_path or "/",
            _canonical_query(pairs),
            canonical_headers,
            signed_headers,
            payload,
        ]
    )
    string_to_sign = "\n".join(
        [
            ALGORITHM,
            amz_date,
            "/".join(scope),
            hashlib.sha256(canonical_request.encode("utf-8")).hexdigest(),
        ]
    )
    _check(_signature(secret, scope, string_to_sign), signature)
    return Signed(key_id, service, presigned)


@dataclass(frozen=True)
class PostPolicy:
    """A presigned POST form's policy, once its signature is checked."""

    key_id: str
    conditions: list[Any]


def verify_post_policy(form: Mapping[str, str], keys: Mapping[str, str], now: float) -> PostPolicy:
    """Checks the policy signature of a presigned POST form (its fields, names in any case)."""
    fields = {name.lower(): value for name, value in form.items()}
    if fields.get("x-amz-algorithm") != ALGORITHM:
        raise Refused(f"only {ALGORITHM} forms are accepted")
    key_id, scope = _credential(fields.get("x-amz-credential", ""))
    secret = _secret_of(keys, key_id)
    policy_text = fields.get("policy", "")
    _check(_signature(secret, scope, policy_text), fields.get("x-amz-signature", ""))
    try:
        policy = json.loads(base64.b64decode(policy_text, validate=True))
        expires = calendar.timegm(time.strptime(policy["expiration"], "%Y-%m-%dT%H:%M:%SZ"))
        conditions = list(policy["conditions"])
    except (ValueError, KeyError, TypeError):
        raise Refused("the form's policy is not a policy") from None
    if now > expires:
        raise Refused("the form has expired")
    return PostPolicy(key_id, conditions)


def _covered_fields(conditions: list[Any]) -> set[str]:
    names: set[str] = set()
    for condition in conditions:
        if isinstance(condition, dict):
            names.update(name.lower() for name in condition)
        elif isinstance(condition, list) and len(condition) == 3 and isinstance(condition[1], str):
            names.add(condition[1].removeprefix("$").lower())
    return names


def admit_form(policy: PostPolicy, form: Mapping[str, str], bucket: str, size: int) -> None:
    """Checks a form against its policy as S3 does: every condition holds, and every field the
    form sends (but the policy, its signature and ``x-ignore-`` fields) is named by one."""
    fields = {name.lower(): value for name, value in form.items()}
    fields["bucket"] = bucket
    for condition in policy.conditions:
        if isinstance(condition, dict):
            held = all(fields.get(name.lower()) == value for name, value in condition.items())
        elif isinstance(condition, list) and len(condition) == 3:
            operator, name, value = condition
            if operator == "content-length-range":
                held = int(name) <= size <= int(value)
            elif operator in ("eq", "starts-with") and isinstance(name, str):
                given = fields.get(name.removeprefix("$").lower())
                held = given is not None and (
                    given == value if operator == "eq" else given.startswith(str(value))
                )
            else:
                held = False
        else:
            held = False
        if not held:
            raise Refused(f"the form does not meet its policy's condition {condition}")
    uncovered = {
        name
        for name in fields
        if name not in {"policy", "x-amz-signature"} and not name.startswith("x-ignore-")
    } - _covered_fields(policy.conditions)
    if uncovered:
        raise Refused(f"the form's policy does not name {', '.join(sorted(uncovered))}")
