"""What ``reply`` takes to grant a standing approval (vigil.requests.standing): read by the
tools and the console alike, apart from the standing approvals' rules, which the alarm
function loads without any tool's input."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, WithJsonSchema, model_validator

from vigil.kit.tooling import StrictInput
from vigil.requests.standing import (
    DEFAULT_HOURS,
    MAX_FREE,
    MAX_HOURS,
    MAX_NAME,
    MAX_ONE_OF,
    MAX_PREFIX,
    MAX_USES,
    Bound,
    StandingTerms,
)

Finite = Annotated[float, Field(allow_inf_nan=False)]
Number = Annotated[int | Finite, WithJsonSchema({"type": "number"})]
Scalar = Annotated[
    Annotated[str, Field(max_length=MAX_PREFIX)] | int | Finite | bool | None,
    WithJsonSchema({"type": ["string", "number", "boolean", "null"], "maxLength": MAX_PREFIX}),
]


class BoundInput(StrictInput):
    min: Number | None = None
    max: Number | None = None
    one_of: list[Scalar] | None = Field(default=None, min_length=1, max_length=MAX_ONE_OF)
    prefix: str | None = Field(default=None, min_length=1, max_length=MAX_PREFIX)

    @model_validator(mode="after")
    def _one_kind(self) -> BoundInput:
        Bound(**self.model_dump(exclude_none=True))
        return self


# A standing approval granted with an approval (docs/TOOLS.md#standing-approvals).
class StandingInput(StrictInput):
    any_asker: bool = Field(default=False, description="Any agent may ask, not only this one.")
    free: (
        Annotated[
            dict[Annotated[str, Field(max_length=MAX_NAME)], BoundInput],
            Field(max_length=MAX_FREE),
        ]
        | None
    ) = Field(
        default=None,
        description="Members that may vary within a bound; the rest must match.",
    )
    hours: float = Field(default=DEFAULT_HOURS, gt=0, le=MAX_HOURS, allow_inf_nan=False)
    uses: int | None = Field(default=None, ge=1, le=MAX_USES)

    def terms(self) -> StandingTerms:
        free = {
            name: Bound(**bound.model_dump(exclude_none=True))
            for name, bound in (self.free or {}).items()
        }
        return StandingTerms(hours=self.hours, uses=self.uses, free=free, any_asker=self.any_asker)
