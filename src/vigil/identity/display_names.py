"""The display names of a namespace's principals, by id, as any caller reads them through the
tools (``list_agents``, then ``list_directory`` for people and services): what the console and
the people's commands show in place of ids. The reads are bounded, so that a namespace of
many thousands costs a page a few calls; a principal beyond the bound is shown by its id."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

# A tool call made as the reader: the tool's name and arguments, and its JSON result.
Call = Callable[[str, dict[str, Any]], Mapping[str, Any]]

# list_directory's largest page, and how many pages of each kind are read at most.
DIRECTORY_PAGE = 100
DIRECTORY_PAGES = 5


def names_of(call: Call) -> dict[str, str]:
    """Every agent's name (list_agents gives them in one call), and the names of the people
    and services on the directory's first ``DIRECTORY_PAGES`` pages of each."""
    names = {agent["id"]: agent["name"] for agent in call("list_agents", {})["agents"]}
    for kind in ("person", "service"):
        query: dict[str, Any] = {"kind": kind, "limit": DIRECTORY_PAGE}
        for _ in range(DIRECTORY_PAGES):
            page = call("list_directory", query)
            names.update((item["id"], item["name"]) for item in page["items"])
            if page["next_cursor"] is None:
                break
            query = {**query, "cursor": page["next_cursor"]}
    return names
