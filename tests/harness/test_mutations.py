"""The mutator itself, on a model shaped like tools to come: nested objects with declared
properties (reached through $ref), arrays of them, formats. Every defect it derives must be one
that a strict model refuses, and the nested ones must be there."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tests.harness.mutations import mutations
from tests.harness.schema import inline, simplest, valid
from vigil.kit.tooling import strict_schema


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
