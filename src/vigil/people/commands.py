"""The people's ``vigil`` commands, wired into the ``vigil`` parser by ``add_commands`` (the
commands themselves are in ``reading`` and ``acting``), and the profiles they use.

This module loads only the standard library and the REST client: ``vigil local``, ``vigil
mcp`` and the rest build the same parser, and rich (in ``render``) is imported by a command
only when it runs.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vigil.people import output, profiles
from vigil.people.acting import (
    ack,
    add,
    answer,
    approve,
    claim,
    deny,
    post,
    release,
    revoke_standing,
    send,
    set_routing,
)
from vigil.people.client import Exit, Failure, RestClient, rest_base
from vigil.people.reading import (
    audit,
    deaths,
    requests,
    routing,
    sessions,
    standing,
    status,
    switches,
    watch,
)

LocalState = Callable[[Path | None], Mapping[str, str]]
Handler = Callable[[argparse.Namespace, RestClient], Exit]

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
    "withdrawn",
)
TARGET_KINDS = (
    "principal",
    "switch",
    "mailbox",
    "channel",
    "pause",
    "request",
    "account",
    "queue",
    "grant",
    "standing",
    "routing",
)
# Copies of a standing approval's limits (vigil/requests/standing.py), checked as they are.
STANDING_MAX_HOURS = 30 * 24
STANDING_MAX_USES = 1000
# Copies of a claim's length by default and at most (claim_request's), checked as they are.
CLAIM_MINUTES = 30
CLAIM_MAX_MINUTES = 24 * 60

EPILOG = """\
The people's commands (status, watch, switches, deaths, sessions, post, requests, approve,
deny, answer, ack, send, standing, claim, release, routing, audit, add) call Vigil's REST
mirror. Where, and with which
secret: --profile NAME (see `vigil profile add`); else VIGIL_ENDPOINT with VIGIL_SECRET, where
VIGIL_ENDPOINT is the REST base (http://127.0.0.1:8080) or, as `vigil mcp` takes it, the MCP
URL ending in /mcp; else the local runtime's .vigil/local.json in this directory (--state-dir
DIR for a runtime started with vigil local --state-dir DIR).

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
    common = _common(None)

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

    add_ = command(
        "add", "add a person, agent or service and print its secret, once (operators)", add
    )
    add_.add_argument("kind", choices=("agent", "person", "service"))
    add_.add_argument("name", metavar="NAME", help="its display name")
    add_.add_argument(
        "--operator", action="store_true", help="an operator: may add others and steer work"
    )
    add_.add_argument("--quiet", action="store_true", help="print only the secret, for scripts")

    audit_ = command("audit", "the audit trail, newest first (operators)", audit)
    audit_.add_argument("--actor", metavar="ID", help="only the changes this principal made")
    audit_.add_argument("--kind", choices=TARGET_KINDS, help="only changes to this kind of thing")
    audit_.add_argument("--target", metavar="TARGET", help="only changes to this id or scope")
    paged(audit_)

    post_ = command("post", "post an instruction to an agent's session", post)
    post_.add_argument("session", metavar="SESSION")
    post_.add_argument("text", metavar="TEXT")

    requests_ = command("requests", "requests you asked or decide", requests)
    requests_.add_argument(
        "--state", choices=(*REQUEST_STATES, "all"), default="open", help="default open"
    )
    requests_.add_argument(
        "--everyone", action="store_true", help="every request of the namespace, not only yours"
    )
    requests_.add_argument(
        "--waiting", action="store_true", help="only those waiting for your decision or vote"
    )
    paged(requests_)

    approve_ = command("approve", "approve an approval request", approve)
    approve_.add_argument("id", metavar="ID")
    approve_.add_argument(
        "--yes", action="store_true", help="do not show the action and ask first (needed off a TTY)"
    )
    approve_.add_argument("--note", metavar="TEXT", help="an answer to go with the approval")
    approve_.add_argument(
        "--edit",
        metavar="MEMBER=JSON",
        action="append",
        default=[],
        help="approve with this member of the action changed (one the asker made editable); "
        "a value that is not JSON is taken as text",
    )
    approve_.add_argument(
        "--standing-hours",
        type=_hours,
        metavar="H",
        help="also grant a standing approval for H hours (up to 720): a later ask of the same "
        "action by this agent is approved at once, as by you",
    )
    approve_.add_argument(
        "--standing-uses",
        type=_uses,
        metavar="N",
        help="with --standing-hours: at most N approvals (1-1000); default: until it expires",
    )
    approve_.add_argument(
        "--free",
        metavar="MEMBER=BOUND",
        action="append",
        default=[],
        help="with --standing-hours: this member of the action may differ, within BOUND: "
        "MIN..MAX, numbers, either left out (amount=0..1000, amount=..500); A,B,C, one of "
        "these values, each JSON or else text (env=staging,dev); TEXT*, text starting with "
        "TEXT (path=/tmp/*). The other members must be as approved",
    )
    approve_.add_argument(
        "--any-asker",
        action="store_true",
        help="with --standing-hours: any agent of the namespace may ask, not only this one",
    )
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

    standing_ = command(
        "standing",
        "your live standing approvals (vigil approve --standing-hours); "
        "vigil standing revoke ID ends one",
        standing,
    )
    standing_.add_argument(
        "--everyone", action="store_true", help="operators: everyone's, not only yours"
    )
    paged(standing_)
    standing_.usage = "vigil standing [options] | vigil standing revoke ID [options]"
    standing_actions = standing_.add_subparsers(dest="standing_action", metavar="ACTION")
    revoked = "revoke a standing approval you granted (operators: any): no ask uses it again"
    # The common options may come before revoke too: those after it replace them, if given.
    revoke_ = standing_actions.add_parser(
        "revoke", help=revoked, description=revoked, parents=[_common(argparse.SUPPRESS)]
    )
    revoke_.add_argument("id", metavar="ID", help="its id, sta_…, as vigil standing lists it")
    revoke_.set_defaults(run=_calling(revoke_standing, local_state))

    claim_ = command(
        "claim",
        "take an open request you decide in hand for a while: the others see it is yours, and "
        "it leaves their waiting list (it never stops their decision)",
        claim,
    )
    claim_.add_argument("id", metavar="REQUEST", help="its id, req_…, as vigil requests lists it")
    claim_.add_argument(
        "--minutes",
        type=_minutes,
        default=CLAIM_MINUTES,
        metavar="N",
        help=f"for N minutes (1-{CLAIM_MAX_MINUTES}, default {CLAIM_MINUTES})",
    )
    release_ = command("release", "put back a request you claimed", release)
    release_.add_argument("id", metavar="REQUEST")

    routing_ = command(
        "routing",
        "the routing rules that assign new requests to people, in words (operators); "
        "vigil routing set FILE replaces them",
        routing,
    )
    routing_.usage = "vigil routing [options] | vigil routing set FILE [options]"
    routing_actions = routing_.add_subparsers(dest="routing_action", metavar="ACTION")
    replaced = (
        "replace the routing rules with FILE's JSON list of rules ([] for none; - for standard "
        'input), e.g. [{"kind": "approval", "op": "pay", "to": ["per_…"], "least_recent": '
        'false, "minutes": 60}]; each may name asker (an agent\'s id), kind, op and minutes'
    )
    set_ = routing_actions.add_parser(
        "set", help=replaced, description=replaced, parents=[_common(argparse.SUPPRESS)]
    )
    set_.add_argument("file", metavar="FILE", help="a JSON file of rules, or - for stdin")
    set_.add_argument(
        "--version",
        type=int,
        help="the rules' version the file was written against (vigil routing shows it): "
        "a change made since is refused instead of replaced",
    )
    set_.set_defaults(run=_calling(set_routing, local_state))

    profile = commands.add_parser("profile", help="the profiles the people's commands use")
    actions = profile.add_subparsers(dest="action", required=True)
    added = actions.add_parser(
        "add",
        help="add or replace a profile; the secret is read from stdin, or asked for unseen",
        description="Add or replace a profile. The secret is read from standard input, or "
        "asked for without echo on a terminal; never from the command line.",
    )
    added.add_argument("name", metavar="NAME")
    added.add_argument("--endpoint", required=True, help="REST base, or the MCP URL")
    added.set_defaults(run=_guarded(profile_add))
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


def _common(default: Any) -> argparse.ArgumentParser:
    """The options every people's command takes, each defaulting to its own default, or to
    ``default`` where one is given (SUPPRESS: an option not given sets nothing)."""
    own = {} if default is None else {"default": default}
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--profile",
        metavar="NAME",
        help="the profile to use (see vigil --help for the default)",
        **own,
    )
    common.add_argument(
        "--json", action="store_true", help="print the tools' results as JSON", **own
    )
    common.add_argument(
        "--state-dir",
        type=Path,
        metavar="DIR",
        help="the local runtime's state directory, as `vigil local --state-dir` was given it "
        "(default: .vigil here)",
        **own,
    )
    return common


def _hours(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value <= STANDING_MAX_HOURS:
        raise argparse.ArgumentTypeError(f"hours, more than 0 and at most {STANDING_MAX_HOURS}")
    return value


def _uses(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= STANDING_MAX_USES:
        raise argparse.ArgumentTypeError(f"a whole number from 1 to {STANDING_MAX_USES}")
    return value


def _minutes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= CLAIM_MAX_MINUTES:
        raise argparse.ArgumentTypeError(f"a whole number from 1 to {CLAIM_MAX_MINUTES}")
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
        endpoint = profiles.resolve(args.profile, os.environ, local_state(args.state_dir))
        return handler(args, RestClient(endpoint))

    return _guarded(run)


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
        output.print_json({"profiles": listed})
        return Exit.OK
    from vigil.people.render import profiles_table

    output.show(profiles_table(listed))
    return Exit.OK
