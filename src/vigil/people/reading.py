"""The people's commands that read: ``vigil status`` and ``vigil watch`` (what needs a
person's eye), and the listings of switches, deaths, sessions and requests, with the
principals in them shown by name.

Only the standard library and the REST client at import: rich (in ``render``) is imported
when something is drawn.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from vigil.people import output
from vigil.people.client import Exit, Failure, Refused, RestClient, Unreachable, next_cursor

if TYPE_CHECKING:
    from vigil.people.render import Overview

# vigil status and vigil watch read at most this many pages of each listing.
STATUS_PAGES = 20


# -- watching -------------------------------------------------------------------------------
def _items(pages: Iterable[dict[str, Any]], key: str) -> tuple[list[dict[str, Any]], bool]:
    """Every item of ``pages``, and whether the last page read had more after it."""
    items: list[dict[str, Any]] = []
    more = False
    for page in pages:
        items += page[key]
        more = next_cursor(page) is not None
    return items, more


def overview(client: RestClient, me: str) -> Overview:
    from vigil.people.render import Overview

    switches, truncated = _items(
        client.pages("list_switches", {}, max_pages=STATUS_PAGES), "switches"
    )
    stale, _ = _items(
        client.pages("list_sessions", {"staleOnly": True}, max_pages=STATUS_PAGES), "sessions"
    )
    waiting, _ = _items(
        client.pages("request_status", {"waiting": True}, max_pages=STATUS_PAGES), "requests"
    )
    return Overview(switches, stale, waiting, truncated, _pauses(client))


def _named(client: RestClient, found: Overview, known: Mapping[str, str]) -> Overview:
    """``found`` with the display names of the principals in it: ``known``, read again
    only when it lacks one of them (a principal new since, or beyond what is read)."""
    shown = (
        {s["holder"] for s in found.switches}
        | {s["owner"] for s in found.stale_sessions}
        | {r["requester"] for r in found.waiting}
    )
    return replace(found, names=known if shown <= known.keys() else output.names(client))


def _pauses(client: RestClient) -> list[dict[str, Any]]:
    """The pauses in force; none for an agent, which may not list them: its switches are
    shown as they stand."""
    try:
        pauses, _ = _items(client.pages("list_pauses", {}, max_pages=STATUS_PAGES), "pauses")
    except Refused as refused:
        if refused.code != "forbidden":
            raise
        return []
    return pauses


def _whoami(client: RestClient) -> dict[str, Any]:
    principal: dict[str, Any] = client.call("whoami")["principal"]
    return principal


def _heading(client: RestClient, principal: dict[str, Any]) -> str:
    clock = datetime.now().astimezone().strftime("%H:%M:%S")
    # Short enough for one line of 80 columns: who, where (the host, not the scheme), when.
    where = client.endpoint.base.split("://", 1)[-1]
    return f"{principal['name']} at {where}, {clock}"


def status(args: argparse.Namespace, client: RestClient) -> Exit:
    from vigil.people.render import status_screen

    principal = _whoami(client)
    found = overview(client, principal["id"])
    if args.json:
        output.print_json(found.as_json())
    else:
        found = _named(client, found, {})
        output.show(status_screen(found, output.now(), _heading(client, principal)))
    return Exit.OK


def _transient(failure: Failure) -> bool:
    return isinstance(failure, Unreachable) or (isinstance(failure, Refused) and failure.retryable)


def watch(args: argparse.Namespace, client: RestClient) -> Exit:
    """vigil status every ``--interval`` seconds until Ctrl+C: redrawn in place on a terminal,
    one screen after another elsewhere, one JSON document a line with ``--json``. A refresh
    that cannot reach the endpoint says so and the next one tries again."""
    from rich.live import Live

    from vigil.people.render import console, status_screen

    principal = _whoami(client)
    out = console()
    last: Overview | None = None
    live = Live(console=out, auto_refresh=False) if out.is_terminal and not args.json else None
    try:
        if live is not None:
            live.start()
        while True:
            problem = None
            try:
                last = (
                    overview(client, principal["id"])
                    if args.json
                    else _named(
                        client, overview(client, principal["id"]), last.names if last else {}
                    )
                )
            except Failure as failure:
                if not _transient(failure):
                    raise
                problem = failure.message
            if args.json:
                if last is not None and problem is None:
                    print(json.dumps(last.as_json()), flush=True)
                else:
                    print(f"error: {output.plain(str(problem))}", file=sys.stderr, flush=True)
            else:
                shown = last if last is not None else _empty_overview()
                screen = status_screen(shown, output.now(), _heading(client, principal), problem)
                if live is not None:
                    live.update(screen, refresh=True)
                else:
                    out.print(screen)
                    out.print()
                    out.file.flush()
            time.sleep(args.interval)
    except KeyboardInterrupt:
        return Exit.OK
    finally:
        if live is not None:
            live.stop()


def _empty_overview() -> Overview:
    from vigil.people.render import Overview

    return Overview([], [], [])


# -- listings -------------------------------------------------------------------------------
def switches(args: argparse.Namespace, client: RestClient) -> Exit:
    from vigil.people.render import switches_table

    query = output.without_none(state=args.state, scope_prefix=args.scope_prefix)
    result = output.listing(client, args, "list_switches", "switches", query)
    pauses = [] if args.json else _pauses(client)
    return output.show_listing(
        args,
        client,
        result,
        lambda found, now, names: switches_table(found, now, pauses, names=names),
        "switches",
    )


def deaths(args: argparse.Namespace, client: RestClient) -> Exit:
    from vigil.people.render import deaths_table

    query = output.without_none(limit=args.limit)
    result = output.listing(client, args, "list_deaths", "deaths", query)
    return output.show_listing(
        args,
        client,
        result,
        lambda found, now, names: deaths_table(found, now, names=names),
        "deaths",
    )


def sessions(args: argparse.Namespace, client: RestClient) -> Exit:
    from vigil.people.render import sessions_table

    query = {"staleOnly": True} if args.stale else {}
    result = output.listing(client, args, "list_sessions", "sessions", query)
    return output.show_listing(
        args,
        client,
        result,
        lambda found, now, names: sessions_table(found, now, names=names),
        "sessions",
    )


def requests(args: argparse.Namespace, client: RestClient) -> Exit:
    from vigil.people.render import requests_table

    query: dict[str, Any] = {} if args.state == "all" else {"state": args.state}
    query |= {"everyone": True} if args.everyone else {}
    query |= {"waiting": True} if args.waiting else {}
    me = "" if args.json else _whoami(client)["id"]
    result = output.listing(client, args, "request_status", "requests", query)
    return output.show_listing(
        args,
        client,
        result,
        lambda found, now, names: requests_table(found, now, names=names, me=me),
        "requests",
    )


def audit(args: argparse.Namespace, client: RestClient) -> Exit:
    from vigil.people.render import audit_table

    query = output.without_none(actor=args.actor, target_kind=args.kind, target=args.target)
    result = output.listing(client, args, "list_audit_events", "events", query)
    return output.show_listing(
        args,
        client,
        result,
        lambda found, now, names: audit_table(found, now, names=names),
        "events",
    )


def standing(args: argparse.Namespace, client: RestClient) -> Exit:
    """Your live standing approvals (an operator's ``--everyone``: all of them), soonest to
    expire first, with the agents and people in them by name."""
    from vigil.people.render import standing_table

    query: dict[str, Any] = {"everyone": True} if args.everyone else {}
    result = output.listing(client, args, "list_standing_approvals", "standing", query)
    return output.show_listing(
        args,
        client,
        result,
        lambda found, now, names: standing_table(found, now, names=names),
        "standing",
    )


def routing(args: argparse.Namespace, client: RestClient) -> Exit:
    """The namespace's routing rules in words, with names (operators; vigil routing set FILE
    replaces them)."""
    found = client.call("routing_rules", {})
    if args.json:
        output.print_json(found)
        return Exit.OK
    from vigil.people.render import routing_text

    print(routing_text(found, output.names(client)))
    return Exit.OK
