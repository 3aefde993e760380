"""The mutator itself, on a model shaped like tools to come: nested objects with declared
properties (reached through $ref), arrays of them, formats; and on a bounded free-form JSON
value, whose levels that admit every type name none. Every defect it derives must be one that a
strict model refuses, and the nested ones must be there."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema

from tests.harness.mutations import mutations
from tests.harness.schema import (
    JSON_TYPES,
    branches,
    example,
    inline,
    properties,
    simplest,
    strategy,
    types_of,
    valid,
)
from vigil.kit.bounds import KEY_LENGTH, JsonBounds
from vigil.kit.tooling import published, strict_schema


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Step(_Strict):
    name: Annotated[str, Field(min_length=1, max_length=20, pattern=r"^[a-z]+$")]
    weight: Annotated[int, Field(ge=0, le=10)] = 1


class Plan(_Strict):
    owner: Annotated[str, Field(pattern=r"^agt_[a-z2-7]{16}$")]
    first: Step
    rest: Annotated[list[Step], Field(max_length=3)] = []
    mode: Literal["fast", "safe"] = "safe"
    note: str | None = None


@pytest.fixture(scope="module")
def schema() -> dict[str, object]:
    return inline(strict_schema(Plan.model_json_schema()))


@pytest.mark.parametrize("complete", [False, True])
def test_every_defect_is_refused_by_a_strict_model(
    schema: dict[str, object], complete: bool
) -> None:
    base = simplest(schema, complete=complete)
    Plan.model_validate(base)
    found = mutations(schema, base)
    for mutation in found:
        assert not valid(schema, mutation.arguments), mutation.label
        with pytest.raises(ValidationError):
            Plan.model_validate(mutation.arguments)
    labels = " | ".join(m.label for m in found)
    for expected in (
        "first: required name missing",
        "first: unknown property",
        "first.weight: above maximum 10",
        "first.name: a trailing newline",
        "rest: 4 items (maxItems 3)",
        "rest.0: unknown property",
        "owner: a wrong prefix",
        "mode: not one of the enum",
    ):
        assert expected in labels, expected


# A free-form JSON value as the catalog publishes one (kit/bounds.py): levels that admit every
# type name none, and only the deepest level names its types (the scalars).
BOUNDS = JsonBounds(max_bytes=4096, max_depth=2, max_keys=3, max_string=5)


class Report(_Strict):
    document: Annotated[
        dict[str, Any], AfterValidator(BOUNDS.checked), WithJsonSchema(BOUNDS.json_schema())
    ]
    value: Annotated[
        Any, AfterValidator(BOUNDS.checked_value), WithJsonSchema(BOUNDS.value_schema())
    ]


@pytest.fixture(scope="module")
def report_schema() -> dict[str, Any]:
    return inline(published(strict_schema(Report.model_json_schema())))


def test_a_node_without_a_type_admits_every_type() -> None:
    assert types_of({"maxLength": 3}) == set(JSON_TYPES)
    assert types_of({"patternProperties": {"^a$": {}}, "maxProperties": 1}) == set(JSON_TYPES)
    assert types_of({"description": "anything"}) == set(JSON_TYPES)
    assert [b["type"] for b in branches({"maxLength": 3})] == [
        "string",
        "number",
        "boolean",
        "null",
        "object",
        "array",
    ]
    assert branches({"description": "anything"}) == [{"description": "anything"}]


def test_every_defect_of_a_bounded_json_value_is_refused(report_schema: dict[str, Any]) -> None:
    value = properties(report_schema)["value"]
    assert "type" not in value, "the value's own level should admit every type"
    assert "type" not in value["items"]
    leaf = value["items"]["items"]
    assert leaf["type"] == ["string", "number", "boolean", "null"]
    base = simplest(report_schema)
    Report.model_validate(base)
    found = mutations(report_schema, base)
    for mutation in found:
        with pytest.raises(ValidationError):
            Report.model_validate(mutation.arguments)
        # NaN and Infinity are numbers to a JSON Schema validator; the server refuses them.
        # A key too long is the one bound the schema leaves to the server: it accepts the rest.
        if mutation.unstated:
            assert valid(report_schema, mutation.arguments), mutation.label
        elif not mutation.label.endswith(("NaN", "Infinity")):
            assert not valid(report_schema, mutation.arguments), mutation.label
    labels = {m.label for m in found}
    for name in ("value", "value.0", "value.k", "document.k"):
        # Every type is allowed here: no wrong type, but each bound of each type is crossed.
        assert not [
            label for label in labels if label.startswith(f"{name}: ") and "instead" in label
        ]
        for defect in (
            "longer than maxLength 5",
            "4 properties (maxProperties 3)",
            f"a key of {KEY_LENGTH + 1} characters",
            "NaN",
        ):
            assert f"{name}: {defect}" in labels, f"{name}: {defect}"
    # Too deep: a container where only scalars may be.
    for name in ("value.0.0", "value.k.k", "document.k.k", "document.k.0"):
        assert f"{name}: object instead of {sorted(types_of(leaf))}" in labels
        assert f"{name}: array instead of {sorted(types_of(leaf))}" in labels
    assert "document: string instead of ['object']" in labels


@pytest.mark.parametrize("kind", [str, float, bool, type(None), dict, list])
def test_values_of_every_type_are_generated_for_a_node_without_a_type(
    report_schema: dict[str, Any], kind: type
) -> None:
    def wanted(arguments: dict[str, Any]) -> bool:
        found = arguments["value"]
        if kind is float:
            return isinstance(found, int | float) and not isinstance(found, bool)
        if kind in (dict, list):
            return isinstance(found, kind) and bool(found)
        return isinstance(found, kind)

    arguments = example(strategy(report_schema), wanted)
    Report.model_validate(arguments)
    assert valid(report_schema, arguments)
