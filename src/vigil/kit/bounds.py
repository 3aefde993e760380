"""Bounds on a free-form JSON object a caller supplies (progress, a run's result): its size,
depth, keys and strings, checked on input and published as a bounded JSON Schema."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from vigil.errors import ErrorCode, VigilError

_SCALARS = ["string", "number", "boolean", "null"]
# Property names are free text of at most this many characters: checked on input, never
# published (a pattern or propertyNames on every level would cost each listing its bytes, and
# no caller writes a key that long), like the size.
KEY_LENGTH = 2000


# JSON text may escape a lone surrogate (\ud800), which no UTF-8 text can carry.
_NOT_UNICODE = "strings must be valid Unicode: a lone surrogate is not"


def _is_unicode(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


@dataclass(frozen=True)
class InexactNumber:
    """A number as a body wrote it, which no double holds exactly (beyond 2^53, more digits
    than a double keeps, or out of its range): I-JSON (RFC 7493) has it refused, for every
    reader would keep, show and compare another. No field takes one: a typed field refuses it
    as any wrong value, and a free-form document names it (``JsonBounds``)."""

    text: str

    @property
    def problem(self) -> str:
        return (
            f"the number {self.text[:40]} is not one a double holds exactly (I-JSON, RFC "
            "7493): it would be shown and compared as another; send it as a string"
        )


@dataclass(frozen=True)
class JsonBounds:
    """Limits on a JSON object supplied by a caller.

    Depth counts containers: the document itself is level 1, an object or array inside it
    level 2, and so on. Strings count characters, property names at most ``KEY_LENGTH``; the
    size counts the bytes of the compact UTF-8 serialization. The published schema states the
    depth, the keys and the strings; the size and the length of a key are checked here alone.
    """

    max_bytes: int
    max_depth: int
    max_keys: int
    max_string: int

    def size(self, document: Any) -> int:
        text = json.dumps(document, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return len(text.encode())

    def shape_problem(self, document: Any) -> str | None:
        """What is wrong with the document's shape (the first problem found), or None."""
        return self._problem(document, 1)

    def _problem(self, value: Any, level: int) -> str | None:
        if isinstance(value, dict):
            if level > self.max_depth:
                return f"objects and arrays nest at most {self.max_depth} levels deep"
            if len(value) > self.max_keys:
                return f"an object has more than {self.max_keys} keys"
            for key, item in value.items():
                if not isinstance(key, str):
                    return "object keys must be strings"
                if len(key) > KEY_LENGTH:
                    return f"an object key is longer than {KEY_LENGTH} characters"
                if not _is_unicode(key):
                    return _NOT_UNICODE
                found = self._problem(item, level + 1)
                if found:
                    return found
            return None
        if isinstance(value, list):
            if level > self.max_depth:
                return f"objects and arrays nest at most {self.max_depth} levels deep"
            for item in value:
                found = self._problem(item, level + 1)
                if found:
                    return found
            return None
        if isinstance(value, str):
            if len(value) > self.max_string:
                return f"a string is longer than {self.max_string} characters"
            return None if _is_unicode(value) else _NOT_UNICODE
        if isinstance(value, float) and not math.isfinite(value):
            return "numbers must be finite"
        if isinstance(value, InexactNumber):
            return value.problem
        if value is None or isinstance(value, bool | int | float):
            return None
        return "values must be JSON: objects, arrays, strings, numbers, booleans or null"

    def describe(self) -> str:
        """The one bound a JSON Schema cannot state, the size, in words for the descriptions
        of the fields it bounds (the schema states the rest)."""
        return f"at most {self.max_bytes // 1024} KiB of compact JSON"

    def require_size(self, document: Any, what: str) -> None:
        """limit_exceeded if ``document`` (``what``, e.g. "the result") is over the size."""
        if self.size(document) > self.max_bytes:
            raise VigilError(
                ErrorCode.LIMIT_EXCEEDED,
                f"{what} is larger than {self.max_bytes} bytes as compact UTF-8 JSON",
                limit_bytes=self.max_bytes,
            )

    def checked(self, document: dict[str, Any]) -> dict[str, Any]:
        """``document`` if its shape is within bounds; a ValueError naming the problem if not
        (input validation turns it into invalid_argument)."""
        problem = self.shape_problem(document)
        if problem is not None:
            raise ValueError(problem)
        return document

    def checked_whole(self, document: dict[str, Any]) -> dict[str, Any]:
        """As ``checked``, and within the size too (a ValueError if not)."""
        self.checked(document)
        if self.size(document) > self.max_bytes:
            raise ValueError(f"is larger than {self.max_bytes} bytes as compact UTF-8 JSON")
        return document

    def checked_value(self, value: Any) -> Any:
        """As ``checked``, for any JSON value (an answer, a reported result), not only an
        object."""
        problem = self.shape_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    def value_schema(self) -> dict[str, Any]:
        """Any JSON value within the bounds, as a JSON Schema (all but the size and the length
        of a key)."""
        return self._value(1)

    def json_schema(self) -> dict[str, Any]:
        """The same bounds for an object, as a JSON Schema (all but the size, stated in
        descriptions, and the length of a key)."""
        return {"type": "object", **self._object(1)}

    def _object(self, level: int) -> dict[str, Any]:
        # Any name, each value bounded: additionalProperties is a schema, never false.
        return {"maxProperties": self.max_keys, "additionalProperties": self._nested(level + 1)}

    def _nested(self, level: int) -> dict[str, Any]:
        """A value inside a container at ``level``. Its title names the shape by the levels
        still open below it, so that a published schema writes each level once and refers
        to it (kit/tooling.py), instead of repeating it for items and for properties alike."""
        return {"title": f"json{max(self.max_depth - level + 1, 0)}", **self._value(level)}

    def _value(self, level: int) -> dict[str, Any]:
        """A value held at ``level``: a scalar, or a container while the depth allows one.
        Each keyword applies only to the types it is about (maxLength to strings, and so on),
        so one node describes every kind of value without branching. Where every type is
        allowed the node names none (no ``type`` keyword admits any JSON type); the deepest
        level names the scalars, which is how it refuses a container."""
        if level > self.max_depth:
            return {"type": _SCALARS, "maxLength": self.max_string}
        return {
            "maxLength": self.max_string,
            **self._object(level),
            "items": self._nested(level + 1),
        }
