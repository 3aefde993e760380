"""JSON in its canonical form, and as a person is shown it.

``canonical`` is the form in which two descriptions of one value compare: an approval's action
is redeemed by the action whose canonical bytes equal the approved one's. ``shown_json`` is how
every place a person reads such a value shows it (the console, Slack, email, the CLI): the same
canonical document, indented, with every character outside printable ASCII written as a
``\\uXXXX`` escape and named in a warning above it.

Every such character, rather than a list of suspect ones: invisible characters (zero-width
spaces, joiners, controls) print nothing, bidirectional controls reorder what follows them, and
letters of other scripts share their glyphs with ASCII ones (Cyrillic U+0435 looks like "e",
Greek U+03BF like "o"; the fullwidth and mathematical forms too). Unicode's table of such
lookalikes (the confusables of UTS #39) holds thousands of pairs and grows with each Unicode
version, while the PyPI packages that carry it were last released in 2021 and 2024; a rule that
misses one pair lets an action pass for another. An action is an instruction to a machine,
where exactness is worth more than fluent reading: nothing but printable ASCII is shown as
itself, and the warning names each other character ("U+0435 CYRILLIC SMALL LETTER IE"), so
that a legitimate "café" stays readable.
"""

from __future__ import annotations

import json
import math
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

# A warning names at most this many distinct characters, and counts the rest.
NAMED_CHARACTERS = 10
_UNNAMED = {
    "Cc": "a control character",
    "Cs": "a surrogate",
    "Co": "a private-use character",
    "Cn": "an unassigned code point",
}


def _normal(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _normal(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_normal(inner) for inner in value]
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


def canonical(value: Any) -> bytes:
    """The JSON ``value`` serialised canonically, in the style of RFC 8785: object keys
    sorted, no insignificant whitespace, UTF-8, and a number that is whole written as an
    integer (1.0 is 1), so that two descriptions of one action compare equal byte for byte."""
    text = json.dumps(
        _normal(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return text.encode()


@dataclass(frozen=True)
class ShownJson:
    """A JSON value as a person reads it: ``text``, and the ``warning`` to show above it, or
    None when it is printable ASCII throughout."""

    text: str
    warning: str | None


def shown_json(value: Any) -> ShownJson:
    """``value`` as its canonical document, indented two spaces, every character outside
    printable ASCII escaped (``\\u202e``, ``\\u0435``; a control as JSON writes it, ``\\n``):
    parsed back, it is the very value, canonically. With a warning naming each such
    character when there is one."""
    normal = _normal(value)
    text = json.dumps(normal, sort_keys=True, indent=2, ensure_ascii=True, allow_nan=False)
    # DEL is ASCII, so ensure_ascii leaves it raw, and it prints nothing.
    text = text.replace("\x7f", "\\u007f")
    unusual = dict.fromkeys(
        char for piece in _texts(normal) for char in piece if not " " <= char <= "~"
    )
    return ShownJson(text, _warning(list(unusual)) if unusual else None)


def _texts(value: Any) -> Iterator[str]:
    """The keys and strings of ``value``, in the order its canonical document has them."""
    if isinstance(value, dict):
        for key in sorted(value):
            yield key
            yield from _texts(value[key])
    elif isinstance(value, list):
        for inner in value:
            yield from _texts(inner)
    elif isinstance(value, str):
        yield value


def _warning(unusual: list[str]) -> str:
    named = ", ".join(_name(char) for char in unusual[:NAMED_CHARACTERS])
    more = len(unusual) - NAMED_CHARACTERS
    return (
        "Read this character by character: it holds characters outside printable ASCII, which "
        "may be invisible, reorder the text around them or look like other letters. Each is "
        f"shown as a \\u escape: {named}" + (f" and {more} more." if more > 0 else ".")
    )


def _name(char: str) -> str:
    code = f"U+{ord(char):04X}"
    name = unicodedata.name(char, "") or f"({_UNNAMED.get(unicodedata.category(char), 'unnamed')})"
    return f"{code} {name}"


# An edited value is shown up to this many characters; the whole action is shown beside it.
EDIT_SHOWN = 200


def changed_members(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """The members of ``after`` that ``before`` lacks or holds another value of, compared
    canonically (``true`` is not ``1``), with ``after``'s values, in ``after``'s order."""
    return {
        name: value
        for name, value in after.items()
        if name not in before or canonical(before[name]) != canonical(value)
    }


def edits_in_words(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """What an edit of an action changed, member by member, as people read it:
    amount: 500 → 300, or note: (none) → "net 30" for a member it added: the members
    ``changed_members`` finds."""
    return "; ".join(
        f"{json.dumps(name, ensure_ascii=True)[1:-1]}: "
        + ("(none)" if name not in before else _compact(before[name]))
        + f" → {_compact(value)}"
        for name, value in changed_members(before, after).items()
    )


def _compact(value: Any) -> str:
    """A value in a line of text, every character not printable ASCII escaped (an invisible
    or reordering one cannot hide in it), at most EDIT_SHOWN characters."""
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    return text if len(text) <= EDIT_SHOWN else text[: EDIT_SHOWN - 1] + "…"
