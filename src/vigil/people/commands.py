"""The people's ``vigil`` commands, wired into the ``vigil`` parser by ``add_commands``.

This module loads only the standard library and the REST client: ``vigil local``, ``vigil
mcp`` and the rest build the same parser, and rich (in ``render``) is imported by a command
only when it runs.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from vigil.people import profiles
from vigil.people.client import Exit, Failure, Refused, RestClient, Unreachable, rest_base

if TYPE_CHECKING:
    from rich.console import RenderableType

    from vigil.people.render import Overview

LocalState = Callable[[], Mapping[str, str]]
Handler = Callable[[argparse.Namespace, RestClient], Exit]

# vigil status and vigil watch read at most this many pages of each listing.
STATUS_PAGES = 20
# Copies of the tools' states: the parser loads no pydantic model (tests/unit/test_people_client.py
# checks they agree).
SWITCH_STATES = ("armed", "disarmed", "failed", "expired")
REQUEST_STATES = (
    "open",
    "answered",
    "approved",
    "denied",
    "completed",
    "failed",
    "rejected",
    "expired",
    "replaced",
)

EPILOG = """\
The people's commands (status, watch, switches, deaths, sessions, post, requests, approve,
deny, answer, ack, send) call Vigil's REST mirror. Where, and with which secret: --profile NAME
(see `vigil profile add`); else VIGIL_ENDPOINT with VIGIL_SECRET, where VIGIL_ENDPOINT is the
REST base (http://127.0.0.1:8080) or, as `vigil mcp` takes it, the MCP URL ending in /mcp;
else the local runtime's .vigil/local.json in this directory.

exit codes:
  0  done
  1  the service refused the call (stderr says: error: <code>: <message>), or an approval
     was declined at its prompt
  2  usage error
  3  the endpoint cannot be reached, or there is no profile, endpoint or secret to use
  4  unauthenticated or forbidden
"""


# -- wiring ---------------------------------------------------------------------------------
def add_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], local_state: LocalState
) -> None:
    """Adds the people's commands to ``commands`` (the ``vigil`` parser's subparsers);
    ``local_state`` reads the local runtime's state file."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--profile", metavar="NAME", help="the profile to use (see vigil --help for the default)"
    )
    common.add_argument("--json", action="store_true", help="print the tools' results as JSON")

    def command(name: str, summary: str, handler: Handler) -> argparse.ArgumentParser:
        parser = commands.add_parser(name, help=summary, description=summary, parents=[common])
        parser.set_defaults(run=_calling(handler, local_state))
        return parser

    def paged(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--cursor", help="continue from a previous page's next_cursor")
        parser.add_argument("--all", action="store_true", help="read every page")

    command("status", "switches, stale sessions and requests waiting for you", status)
    watch_ = command("watch", "vigil status, redrawn until Ctrl+C", watch)
    watch_.add_argument(
        "--interval", type=_seconds, default=2.0, help="seconds between redraws (default 2)"
    )

    switches_ = command("switches", "the namespace's dead-man switches", switches)
    switches_.add_argument("--state", choices=SWITCH_STATES)
    switches_.add_argument("--scope-prefix", metavar="PREFIX")
    paged(switches_)

    deaths_ = command("deaths", "recent deaths of switches, newest first", deaths)
    deaths_.add_argument("--limit", type=int, help="page size, 1-50")
    paged(deaths_)

    sessions_ = command("sessions", "agents' sessions and their progress", sessions)
    sessions_.add_argument("--stale", action="store_true", help="only the stale ones")
    paged(sessions_)

    post_ = command("post", "post an instruction to an agent's session", post)
    post_.add_argument("session", metavar="SESSION")
    post_.add_argument("text", metavar="TEXT")

    requests_ = command("requests", "requests you asked or decide", requests)
    requests_.add_argument(
        "--state", choices=(*REQUEST_STATES, "all"), default="open", help="default open"
    )
    paged(requests_)

    approve_ = command("approve", "approve an approval request", approve)
    approve_.add_argument("id", metavar="ID")
    approve_.add_argument(
        "--yes", action="store_true", help="do not show the action and ask first (needed off a TTY)"
    )
    approve_.add_argument("--note", metavar="TEXT", help="an answer to go with the approval")
    deny_ = command("deny", "deny an approval request", deny)
    deny_.add_argument("id", metavar="ID")
    deny_.add_argument("--note", metavar="TEXT", help="an answer to go with the denial")
    answer_ = command("answer", "answer a question", answer)
    answer_.add_argument("id", metavar="ID")
    answer_.add_argument("text", metavar="TEXT", help="with choices, one of them exactly")

    ack_ = command("ack", "acknowledge an alert: its repeats stop, it does not escalate", ack)
    ack_.add_argument(
        "event",
        metavar="EVENT",
        help="the alert's id (evt_…, a webhook's webhook-id) or a repeat's",
    )

    send_ = command("send", "send a message to a principal or a conversation", send)
    send_.add_argument(
        "to", metavar="TO", help="a principal id (per_…, agt_…, svc_…) or a conversation id"
    )
    send_.add_argument("text", metavar="TEXT")

    profile = commands.add_parser("profile", help="the profiles the people's commands use")
    actions = profile.add_subparsers(dest="action", required=True)
    add = actions.add_parser(
        "add",
        help="add or replace a profile; the secret is read from stdin, or asked for unseen",
        description="Add or replace a profile. The secret is read from standard input, or "
        "asked for without echo on a terminal; never from the command line.",
    )
    add.add_argument("name", metavar="NAME")
    add.add_argument("--endpoint", required=True, help="REST base, or the MCP URL")
    add.set_defaults(run=_guarded(profile_add))
    listed = actions.add_parser("list", help="the profiles (never their secrets)")
    listed.add_argument("--json", action="store_true")
    listed.set_defaults(run=_guarded(profile_list))


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0.1 <= value <= 3600:
        raise argparse.ArgumentTypeError("seconds from 0.1 to 3600")
    return value


def _guarded(run: Callable[[argparse.Namespace], Exit]) -> Callable[[argparse.Namespace], int]:
    """``run`` with every failure printed on one line of stderr and turned into its exit code:
    never a traceback for a network error."""

    def guarded(args: argparse.Namespace) -> int:
        try:
            return int(run(args))
        except Failure as failure:
            from vigil.people.render import printable

            print(f"error: {printable(failure.message)}", file=sys.stderr)
            return int(failure.exit_code)
        except KeyboardInterrupt:
            return 130

    return guarded


def _calling(handler: Handler, local_state: LocalState) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> Exit:
        endpoint = profiles.resolve(args.profile, os.environ, local_state())
        return handler(args, RestClient(endpoint))

    return _guarded(run)


# -- output ---------------------------------------------------------------------------------
def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2))


def _show(renderable: RenderableType) -> None:
    from vigil.people.render import console

    console().print(renderable)


def _now() -> datetime:
    return datetime.now(UTC)


def _listing(
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


def _show_listing(
    args: argparse.Namespace,
    result: dict[str, Any],
    table: Callable[[list[dict[str, Any]], datetime], RenderableType],
    key: str,
) -> Exit:
    if args.json:
        _print_json(result)
        return Exit.OK
    from rich.console import Group
    from rich.text import Text

    parts: list[RenderableType] = [table(result[key], _now())]
    if result.get("next_cursor"):
        more = f"More: the same with --cursor {result['next_cursor']}, or --all for every page"
        parts.append(Text(more, style="dim"))
    _show(Group(*parts))
    return Exit.OK


def _without_none(**arguments: Any) -> dict[str, Any]:
    return {name: value for name, value in arguments.items() if value is not None}


def _idempotency_key() -> str:
    """A fresh key for this invocation: the client's own retries reuse it, so a retry never
    does the work twice."""
    return f"cli-{uuid.uuid4().hex}"


# -- watching -------------------------------------------------------------------------------
def _items(pages: Iterable[dict[str, Any]], key: str) -> tuple[list[dict[str, Any]], bool]:
    """Every item of ``pages``, and whether the last page read had more after it."""
    items: list[dict[str, Any]] = []
    more = False
    for page in pages:
        items += page[key]
        more = page.get("next_cursor") is not None
    return items, more


def overview(client: RestClient, me: str) -> Overview:
    from vigil.people.render import Overview

    switches, truncated = _items(
        client.pages("list_switches", {}, max_pages=STATUS_PAGES), "switches"
    )
    stale, _ = _items(
        client.pages("list_sessions", {"stale_only": True}, max_pages=STATUS_PAGES), "sessions"
    )
    open_requests, _ = _items(
        client.pages("request_status", {"state": "open"}, max_pages=STATUS_PAGES), "requests"
    )
    waiting = [r for r in open_requests if me in r["audience"]]
    return Overview(switches, stale, waiting, truncated, _pauses(client))


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
    return f"Vigil at {client.endpoint.base} as {principal['name']} ({principal['id']}), {clock}"


def status(args: argparse.Namespace, client: RestClient) -> Exit:
    from vigil.people.render import status_screen

    principal = _whoami(client)
    found = overview(client, principal["id"])
    if args.json:
        _print_json(found.as_json())
    else:
        _show(status_screen(found, _now(), _heading(client, principal)))
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
                last = overview(client, principal["id"])
            except Failure as failure:
                if not _transient(failure):
                    raise
                problem = failure.message
            if args.json:
                if last is not None and problem is None:
                    print(json.dumps(last.as_json()), flush=True)
                else:
                    print(f"error: {_plain(str(problem))}", file=sys.stderr, flush=True)
            else:
                shown = last if last is not None else _empty_overview()
                screen = status_screen(shown, _now(), _heading(client, principal), problem)
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

    query = _without_none(state=args.state, scope_prefix=args.scope_prefix)
    result = _listing(client, args, "list_switches", "switches", query)
    pauses = [] if args.json else _pauses(client)
    return _show_listing(
        args, result, lambda found, now: switches_table(found, now, pauses), "switches"
    )


def deaths(args: argparse.Namespace, client: RestClient) -> Exit:
    from vigil.people.render import deaths_table

    result = _listing(client, args, "list_deaths", "deaths", _without_none(limit=args.limit))
    return _show_listing(args, result, deaths_table, "deaths")


def sessions(args: argparse.Namespace, client: RestClient) -> Exit:
    from vigil.people.render import sessions_table

    query = {"stale_only": True} if args.stale else {}
    result = _listing(client, args, "list_sessions", "sessions", query)
    return _show_listing(args, result, sessions_table, "sessions")


def requests(args: argparse.Namespace, client: RestClient) -> Exit:
    from vigil.people.render import requests_table

    query = {} if args.state == "all" else {"state": args.state}
    result = _listing(client, args, "request_status", "requests", query)
    return _show_listing(args, result, requests_table, "requests")


# -- acting ---------------------------------------------------------------------------------
def post(args: argparse.Namespace, client: RestClient) -> Exit:
    posted = client.call(
        "post_instruction",
        {"session_id": args.session, "body": args.text, "idempotency_key": _idempotency_key()},
    )
    if args.json:
        _print_json(posted)
    else:
        print(
            f"Posted {posted['id']} to session {_plain(posted['session_id'])}: "
            f"{posted['state']} until one of its beats hands it out."
        )
    return Exit.OK


def _plain(text: str) -> str:
    from vigil.people.render import printable

    return printable(text)


def send(args: argparse.Namespace, client: RestClient) -> Exit:
    from vigil.kit.principals import kind_of

    arguments: dict[str, Any] = {"body": args.text, "idempotency_key": _idempotency_key()}
    if args.to.startswith("cnv_"):
        arguments["conversation_id"] = args.to
    else:
        try:
            kind = kind_of(args.to)
        except ValueError:
            raise Failure(
                Exit.USAGE, "TO is a principal id (per_…, agt_…, svc_…) or a conversation id"
            ) from None
        # One direct conversation per pair, as a person writing to an agent expects.
        arguments |= {"target": {"kind": kind, "id": args.to}, "reuse_direct": True}
    sent = client.call("send", arguments)
    if args.json:
        _print_json(sent)
    else:
        (message,) = sent["messages"]
        print(f"Sent {message['id']} in conversation {sent['conversation_id']}.")
    return Exit.OK


def approve(args: argparse.Namespace, client: RestClient) -> Exit:
    if not args.yes and not sys.stdin.isatty():
        raise Failure(
            Exit.USAGE,
            "approve shows the action and asks first, which needs a terminal: pass --yes to "
            "approve without asking",
        )
    request = client.call("get_request", {"id": args.id})
    if not args.yes and request["state"] == "open" and request["kind"] == "approval":
        from vigil.people.render import request_text

        print(request_text(request, _now()), file=sys.stderr)
        sys.stderr.write("\nApprove? [y/N] ")
        sys.stderr.flush()
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            print("Not approved: nothing was sent.", file=sys.stderr)
            return Exit.REFUSED
    return _reply(args, client, request, "approved", args.note)


def deny(args: argparse.Namespace, client: RestClient) -> Exit:
    request = client.call("get_request", {"id": args.id})
    return _reply(args, client, request, "denied", args.note)


def answer(args: argparse.Namespace, client: RestClient) -> Exit:
    request = client.call("get_request", {"id": args.id})
    return _reply(args, client, request, "answered", args.text)


def ack(args: argparse.Namespace, client: RestClient) -> Exit:
    acked = client.call("acknowledge_alert", {"event_id": args.event})
    if args.json:
        _print_json(acked)
    else:
        print(f"{acked['event_id']} acknowledged by {acked['acknowledged_by']}.")
    return Exit.OK


def _reply(
    args: argparse.Namespace,
    client: RestClient,
    request: dict[str, Any],
    outcome: str,
    answer: str | None,
) -> Exit:
    """``reply`` at the version just read: a change in between is a version_conflict, never
    a decision on something not seen."""
    arguments = _without_none(
        id=request["id"], version=request["version"], outcome=outcome, answer=answer
    )
    try:
        replied = client.call("reply", arguments)
    except Refused as refused:
        if refused.code == "invalid_argument" and request["choices"]:
            offered = ", ".join(json.dumps(choice) for choice in request["choices"])
            refused.message += f" (the choices: {offered})"
        raise
    if args.json:
        _print_json(replied)
    else:
        print(f"{replied['id']} {replied['state']}.")
    return Exit.OK


# -- profiles -------------------------------------------------------------------------------
def _read_secret() -> str:
    typed = getpass.getpass("secret: ") if sys.stdin.isatty() else sys.stdin.readline()
    secret = typed.strip()
    if not secret or any(char.isspace() or not char.isprintable() for char in secret):
        raise Failure(Exit.USAGE, "no secret read: give it on standard input, one line")
    return secret


def profile_add(args: argparse.Namespace) -> Exit:
    profiles.check_new_profile(args.name, args.endpoint)
    secret = _read_secret()
    path = profiles.config_path(os.environ)
    profiles.save_profile(path, args.name, args.endpoint, secret)
    print(f"Saved profile {args.name} ({rest_base(args.endpoint)}) in {path}.")
    return Exit.OK


def profile_list(args: argparse.Namespace) -> Exit:
    found = profiles.load_profiles(profiles.config_path(os.environ))
    listed = [{"name": name, "endpoint": found[name].base} for name in sorted(found)]
    if args.json:
        _print_json({"profiles": listed})
        return Exit.OK
    from vigil.people.render import profiles_table

    _show(profiles_table(listed))
    return Exit.OK
