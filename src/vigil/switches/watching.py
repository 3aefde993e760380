"""What the people watching a namespace see of its switches: a page of its switches, in scope
order, and a page of its deaths, newest first."""

from __future__ import annotations

from vigil.errors import forbidden
from vigil.identity.records import Caller
from vigil.kit.paging import scan_page
from vigil.switches.records import Death, PublicState, Switch
from vigil.switches.store import SwitchPorts

# A page of list_switches and of list_deaths: one query of the namespace's index and one
# BatchGetItem of the records it names (at most 100 keys). A state filter examines at most
# SWITCHES_SCAN_BUDGET switches a call.
LIST_PAGE = 50
SWITCHES_SCAN_BUDGET = 500


def switches_page(
    caller: Caller,
    state: PublicState | None,
    prefix: str,
    after: str | None,
    *,
    store: SwitchPorts,
) -> tuple[list[Switch], str | None]:
    """A page of the caller's namespace's switches whose scope begins with ``prefix`` (and in
    ``state``, if given), in scope order, and the scope to continue after, or None at the end."""
    if not caller.is_overseer:
        raise forbidden("only people and operators may list switches")
    return scan_page(
        lambda start, size: store.list_switches(caller.namespace, prefix, start, size),
        position=lambda switch: switch.scope,
        keep=lambda switch: state is None or switch.listed_state == state,
        after=after,
        size=LIST_PAGE,
        budget=SWITCHES_SCAN_BUDGET,
    )


def deaths_page(
    caller: Caller, before: str | None, limit: int, *, store: SwitchPorts
) -> tuple[list[Death], str | None]:
    """Up to ``limit`` of the namespace's deaths, newest first, after the position ``before``;
    and the position to continue after, or None at the end."""
    if not caller.is_overseer:
        raise forbidden("only people and operators may list deaths")
    found = store.recent_deaths(caller.namespace, before, limit + 1)
    page = found[:limit]
    return page, page[-1].position if len(found) > limit else None
