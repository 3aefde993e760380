"""HTML with escaping by default: a value is escaped unless it is already ``Html``."""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from typing import Any


class Html(str):
    """Markup that is safe as it is: made here, from escaped values."""

    __slots__ = ()


def esc(value: Any) -> Html:
    """``value`` as text in HTML (None as nothing)."""
    if isinstance(value, Html):
        return value
    return Html(escape("" if value is None else str(value), quote=True))


def render(template: str, **values: Any) -> Html:
    """``template`` (a ``str.format`` template written here, never from input) with each value
    escaped unless it is ``Html``."""
    return Html(template.format(**{name: esc(value) for name, value in values.items()}))


def join(parts: Iterable[Any], separator: str = "") -> Html:
    return Html(separator.join(esc(part) for part in parts))
