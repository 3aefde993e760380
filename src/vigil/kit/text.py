"""Free text a person reads (a title, a step, a label, a search): stored exactly as written.

Unlike a name (``kit/names.py``), such text is never compared for identity, so nothing a seed
lets a client send is refused here: line breaks, tabs, control and invisible characters are
kept, and whoever shows the text to a person escapes what would mislead. Only what is not text
at all is refused: an unpaired surrogate, which JSON can escape but UTF-8 cannot carry.
"""

from __future__ import annotations

import unicodedata

from pydantic import AfterValidator


def unicode_text(value: str) -> str:
    """``value``, or ValueError if it holds an unpaired surrogate."""
    try:
        value.encode()
    except UnicodeEncodeError:
        raise ValueError("holds an unpaired surrogate, which is not text") from None
    return value


def text_within(max_bytes: int) -> AfterValidator:
    """The validator of free text bounded in bytes of UTF-8, for an ``Annotated`` type beside
    its ``Field(max_length=max_bytes)`` (no text has more characters than bytes)."""

    def within(value: str) -> str:
        if len(unicode_text(value).encode()) > max_bytes:
            raise ValueError(f"is over {max_bytes} bytes of UTF-8")
        return value

    return AfterValidator(within)


def searchable(value: str) -> str:
    """Text to look for among names, in the form names are stored in (NFC)."""
    return unicodedata.normalize("NFC", unicode_text(value))


TEXT = AfterValidator(unicode_text)
SEARCHABLE = AfterValidator(searchable)
