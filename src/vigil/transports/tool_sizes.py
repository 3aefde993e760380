"""How much of a model's context the tools take. What a model is shown of a tool is its name,
description and input schema, as tools/list sends them (compact JSON, ASCII with escapes); its
size in tokens is estimated as its bytes / 4. Its outlined output schema and its annotations
are listed too, and some hosts show them: the whole tools/list result is measured as well.
Measured here for each tool, each toolset, the default listing and each kind of principal's
full listing: scripts/tool_sizes.py prints the figures and writes the table into
the README, and tests/unit/test_tool_sizes.py keeps them within their goals and fails while the
README's table differs (docs/PERFORMANCE.md, "Tool definitions")."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vigil.catalog import ALL, DEFAULT_TOOLSETS, TOOLSETS, listed, toolsets
from vigil.kit.principals import Kind, Role
from vigil.transports.mcp import ANONYMOUS, described

if TYPE_CHECKING:
    from vigil.context import Context
    from vigil.kit.tooling import Tool

# The README's table lies between these lines; scripts/tool_sizes.py --write replaces it.
BEGIN = "<!-- tool sizes: scripts/tool_sizes.py --write README.md; do not edit by hand -->"
END = "<!-- end of tool sizes -->"

# Each kind of principal whose full listing (every toolset) the table shows.
PRINCIPALS: tuple[tuple[str, Kind, Role], ...] = (
    ("a worker agent or service", "agent", "worker"),
    ("a person", "person", "worker"),
    ("an operator", "person", "operator"),
)


BYTES_PER_TOKEN = 4


def _tokens(size: int) -> int:
    return -(-size // BYTES_PER_TOKEN)


@dataclass(frozen=True)
class Size:
    tools: int
    # What a model is shown: names, descriptions, input schemas.
    bytes: int
    # The whole tools/list result: output schemas and annotations too.
    listing_bytes: int

    @property
    def tokens(self) -> int:
        return _tokens(self.bytes)

    @property
    def listing_tokens(self) -> int:
        return _tokens(self.listing_bytes)


def wire(document: Any) -> bytes:
    """``document`` as the server writes it."""
    return json.dumps(document, separators=(",", ":")).encode()


def tokens(document: Any) -> int:
    """``document``'s size in tokens, as the server writes it."""
    return _tokens(len(wire(document)))


def shown(tool: Tool[Context]) -> bytes:
    """What a model is shown of ``tool``, serialised as the server sends it."""
    listing = described(tool)
    return wire({key: listing[key] for key in ("name", "description", "inputSchema")})


def shown_tokens(tool: Tool[Context]) -> int:
    return _tokens(len(shown(tool)))


def output_tokens(tool: Tool[Context]) -> int:
    """``tool``'s output schema, as tools/list sends it."""
    return tokens(described(tool)["outputSchema"])


def size_of(tools: Iterable[Tool[Context]]) -> Size:
    chosen = list(tools)
    listing = wire({"tools": [described(tool) for tool in chosen]})
    return Size(len(chosen), sum(len(shown(tool)) for tool in chosen), len(listing))


def toolset_sizes() -> dict[str, Size]:
    """Each toolset's every tool, whoever may call them."""
    return {t.name: size_of(listed((t,), "person", "operator")) for t in TOOLSETS}


def listing_sizes() -> dict[str, Size]:
    """What a connection that chooses nothing is shown, and each principal's full listing."""
    sizes = {"none chosen (the default), whoever asks": size_of(listed(toolsets(), *ANONYMOUS))}
    for label, kind, role in PRINCIPALS:
        sizes[f"`all`, as {label}"] = size_of(listed(toolsets(ALL), kind, role))
    return sizes


def table() -> str:
    """The README's block: the toolsets, then the listings, with their sizes."""
    rows = [
        BEGIN,
        "| toolset | what it is for | tools | tokens | default |",
        "| --- | --- | ---: | ---: | :---: |",
    ]
    sizes = toolset_sizes()
    for toolset in TOOLSETS:
        size = sizes[toolset.name]
        default = "yes" if toolset.name in DEFAULT_TOOLSETS else ""
        rows.append(
            f"| `{toolset.name}` | {toolset.summary} | {size.tools} | {size.tokens:,} | {default} |"
        )
    rows += [
        "",
        "| toolsets chosen | tools | tokens shown | the whole tools/list |",
        "| --- | ---: | ---: | ---: |",
    ]
    rows += [
        f"| {label} | {size.tools} | {size.tokens:,} | {size.listing_tokens:,} |"
        for label, size in listing_sizes().items()
    ]
    return "\n".join([*rows, END])


def with_table(text: str) -> str:
    """``text`` (the README) with the block between BEGIN and END replaced by ``table()``."""
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + table() + text[end:]
