"""What the people's commands share in calling and printing: a listing's pages, JSON or a
table, the display names that stand for ids, and a fresh idempotency key.

Only the standard library and the REST client at import: rich (in ``render``) is imported
when something is drawn.
"""

from __future__ import annotations

import argparse
import json
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from vigil.identity.display_names import names_of
from vigil.people.client import Exit, Refused, RestClient, next_cursor

if TYPE_CHECKING:
    from rich.console import RenderableType

# A listing's table: its items, the time they are shown at, and the display names.
Draw = Callable[[list[dict[str, Any]], datetime, Mapping[str, str]], "RenderableType"]


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2))


def show(renderable: RenderableType) -> None:
    from vigil.people.render import console

    console().print(renderable)


def now() -> datetime:
    return datetime.now(UTC)


def plain(text: str) -> str:
    from vigil.people.render import printable

    return printable(text)


def names(client: RestClient) -> Mapping[str, str]:
    """The namespace's display names by principal id (identity/display_names.py), or none
    where the directory refuses this caller: the ids are shown then."""
    try:
        return names_of(client.call)
    except Refused:
        return {}


def listing(
    client: RestClient, args: argparse.Namespace, tool: str, key: str, query: dict[str, Any]
) -> dict[str, Any]:
    """One page of a listing from ``--cursor``, or with ``--all`` every page from there, as
    one result of the tool's own shape."""
    if args.cursor is not None:
        query["cursor"] = args.cursor
    if not args.all:
        return client.call(tool, query)
    items: list[dict[str, Any]] = []
    for page in client.pages(tool, query):
        items += page[key]
    return {**page, key: items}


def show_listing(
    args: argparse.Namespace, client: RestClient, result: dict[str, Any], table: Draw, key: str
) -> Exit:
    """The listing as JSON, as it came, or as ``table`` with the principals by name."""
    if args.json:
        print_json(result)
        return Exit.OK
    from rich.console import Group
    from rich.text import Text

    parts: list[RenderableType] = [table(result[key], now(), names(client))]
    cursor = next_cursor(result)
    if cursor:
        more = f"More: the same with --cursor {cursor}, or --all for every page"
        parts.append(Text(more, style="dim"))
    show(Group(*parts))
    return Exit.OK


def without_none(**arguments: Any) -> dict[str, Any]:
    return {name: value for name, value in arguments.items() if value is not None}


def idempotency_key() -> str:
    """A fresh key for this invocation: the client's own retries reuse it, so a retry never
    does the work twice."""
    return f"cli-{uuid.uuid4().hex}"
