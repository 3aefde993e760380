"""One rule for every identifier a caller chooses: scopes, resources, session ids, idempotency
keys and display names. (Free text, never compared, follows ``kit/text.py``.)

A name is stored and compared in Unicode NFC, so "café" typed with a combining accent and
"café" typed precomposed are one scope, one lease, one session. Control characters, invisible
format characters (zero-width spaces and joiners, bidirectional overrides, the byte order
mark), unpaired surrogates and line or paragraph separators are refused: they make two names
that look the same differ, or one name look like another.
"""

from __future__ import annotations

import unicodedata

from pydantic import AfterValidator

# Cc control, Cf format (invisible), Cs surrogate, Zl line and Zp paragraph separators.
REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# What a schema can say of the rule without Unicode classes: no ASCII control characters.
PRINTABLE = r"^[^\x00-\x1f\x7f]+$"


def normal_name(value: str, max_length: int) -> str:
    """``value`` in NFC, or ValueError if it holds a refused character or outgrows
    ``max_length`` characters once normalised."""
    for character in value:
        if unicodedata.category(character) in REFUSED_CATEGORIES:
            raise ValueError(
                f"holds U+{ord(character):04X}, a control or invisible character; "
                "names take printable characters only"
            )
    normal = unicodedata.normalize("NFC", value)
    if len(normal) > max_length:
        raise ValueError(f"is longer than {max_length} characters in Unicode NFC")
    return normal


def normalised(max_length: int) -> AfterValidator:
    """The validator of a caller-chosen identifier, for an ``Annotated`` type beside its
    ``Field(min_length=1, max_length=max_length, pattern=PRINTABLE)``."""
    return AfterValidator(lambda value: normal_name(value, max_length))
