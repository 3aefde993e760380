"""Records: plain pydantic models that know nothing of AWS, Lambda or MCP."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """A domain record. Validators are built on first use rather than at import, so a cold
    start pays only for the records its first call touches."""

    model_config = ConfigDict(defer_build=True)


class Versioned(Record):
    """A record changed only by a conditional write on the version it was read at."""

    version: int

    def changed(self, **updates: Any) -> Self:
        """The next version of this record, with ``updates``: the one way a version moves."""
        return self.model_copy(update={**updates, "version": self.version + 1})
