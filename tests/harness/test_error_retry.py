"""Every error the tools can raise is told as retryable exactly when its message tells the caller
to retry: a walk over every place in the source that makes an error, so that a new contention
error saying "retry" with ``retryable: false`` (or the reverse) cannot slip in."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import vigil
from vigil.errors import RETRYABLE, ErrorCode, VigilError, conflict, contended, unavailable

SOURCE = Path(vigil.__file__).parent
# The constructors of errors, with whether what they make is retryable (None: it depends on
# the code or keyword they are given).
_MAKERS: dict[str, bool | None] = {
    "invalid": False,
    "forbidden": False,
    "not_found": False,
    "conflict": False,
    "_stale": False,
    "contended": True,
    "unavailable": True,
    "VigilError": None,
}


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _text(node: ast.expr | None) -> str | None:
    """The literal text of a message argument: a string or the literal parts of an f-string."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            part.value
            for part in node.values
            if isinstance(part, ast.Constant) and isinstance(part.value, str)
        )
    return None


def _retryable(call: ast.Call, maker: str) -> bool:
    for keyword in call.keywords:
        if keyword.arg == "retryable" and isinstance(keyword.value, ast.Constant):
            return bool(keyword.value.value)
    fixed = _MAKERS[maker]
    if fixed is not None:
        return fixed
    code = call.args[0] if call.args else None
    assert isinstance(code, ast.Attribute), ast.unparse(call)
    return ErrorCode[code.attr] in RETRYABLE


def _errors_made() -> list[tuple[str, str, bool]]:
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            maker = _name(node.func)
            if maker not in _MAKERS:
                continue
            position = 1 if maker in ("VigilError", "_stale") else 0
            message = node.args[position] if len(node.args) > position else None
            text = _text(message)
            if text is None:
                continue  # a message passed through, checked where it is written
            where = f"{path.relative_to(SOURCE)}:{node.lineno}"
            found.append((where, text, _retryable(node, maker)))
    return found


ERRORS = _errors_made()


def test_the_walk_finds_the_errors_of_every_kind() -> None:
    assert len(ERRORS) > 40
    assert any(retryable for _, _, retryable in ERRORS)
    assert any("kept changing" in text for _, text, _ in ERRORS)


@pytest.mark.parametrize(("where", "text", "retryable"), ERRORS, ids=[e[0] for e in ERRORS])
def test_an_error_is_retryable_exactly_when_it_says_retry(
    where: str, text: str, retryable: bool
) -> None:
    assert ("retry" in text) is retryable, f"{where}: {text!r}"


def test_the_flag_reaches_the_caller() -> None:
    assert contended("lost races; retry").to_dict()["retryable"] is True
    assert conflict("held by another").to_dict()["retryable"] is False
    assert unavailable().to_dict()["retryable"] is True
    assert VigilError(ErrorCode.NOT_FOUND, "x").to_dict()["retryable"] is False
