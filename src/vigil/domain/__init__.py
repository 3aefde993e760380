"""The domain: plain Python and pydantic, with no knowledge of AWS, Lambda or MCP."""

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """A domain record. Validators are built on first use rather than at import, so a cold
    start pays only for the records its first call touches."""

    model_config = ConfigDict(defer_build=True)
