"""The display names the console and the people's commands show instead of ids: every kind of
principal of the caller's namespace, read through the tools any caller may use, page by page
up to a bound."""

from __future__ import annotations

from typing import Any

from tests.liveness_support import World
from vigil.identity import display_names
from vigil.identity.display_names import names_of


def caller(world: World, secret: str) -> display_names.Call:
    def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return world.call(tool, secret, **arguments)

    return call


def test_people_agents_and_services_are_named(world: World) -> None:
    pat, pat_secret = world.tenant.register(kind="person", name="Pat Doe")
    ann, _ = world.tenant.register(name="ann")
    svc, _ = world.tenant.register(kind="service", name="billing")
    names = names_of(caller(world, pat_secret))
    assert names[pat] == "Pat Doe"
    assert names[ann] == "ann"
    assert names[svc] == "billing"
    # Another namespace's principals are not in it.
    other = world.tenant.__class__(world.app, world.clock, "globex")
    stranger, _ = other.register(kind="person", name="Mallory")
    assert stranger not in names


def test_the_directory_is_read_page_by_page_up_to_a_bound(world: World) -> None:
    _, pat_secret = world.tenant.register(kind="person", name="pat")
    seen: list[tuple[str, dict[str, Any]]] = []
    read = caller(world, pat_secret)

    def counted(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        seen.append((tool, arguments))
        return read(tool, {**arguments, "limit": 1} if tool == "list_directory" else arguments)

    for n in range(display_names.DIRECTORY_PAGES + 2):
        world.tenant.register(kind="person", name=f"person {n}")
    names = names_of(counted)
    people = [a for tool, a in seen if tool == "list_directory" and a["kind"] == "person"]
    assert len(people) == display_names.DIRECTORY_PAGES
    # One person a page (the tenant's own operator among them, wherever its id sorts).
    assert len([i for i in names if i.startswith("per_")]) == display_names.DIRECTORY_PAGES
