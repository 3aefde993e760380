"""The people's commands that act: post an instruction, send a message, decide a request
(approve only after showing the exact action and asking, on a terminal) and acknowledge an
alert.

Only the standard library and the REST client at import: rich (in ``render``) is imported
when something is drawn.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from vigil.people import output
from vigil.people.client import Exit, Failure, Refused, RestClient


def post(args: argparse.Namespace, client: RestClient) -> Exit:
    posted = client.call(
        "post_instruction",
        {
            "sessionId": args.session,
            "body": args.text,
            "idempotencyKey": output.idempotency_key(),
        },
    )
    if args.json:
        output.print_json(posted)
    else:
        print(
            f"Posted {posted['id']} to session {output.plain(posted['sessionId'])}: "
            f"{posted['state']} until one of its beats hands it out."
        )
    return Exit.OK


def send(args: argparse.Namespace, client: RestClient) -> Exit:
    from vigil.kit.principals import kind_of

    arguments: dict[str, Any] = {"body": args.text, "idempotency_key": output.idempotency_key()}
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
        output.print_json(sent)
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
    edits = _edits(args.edit)
    standing = _standing(args)
    request = client.call("get_request", {"id": args.id})
    if not edits:
        _not_voted(client, request)
    deciding = request["state"] == "open" and request["kind"] == "approval"
    if standing is not None and deciding:
        _check_standing(request, edits, standing)
    if not args.yes and deciding:
        from vigil.kit.canonical import edits_in_words, shown_json
        from vigil.people.render import request_text, standing_terms

        names = output.names(client)
        print(request_text(request, output.now(), names=names), file=sys.stderr)
        if edits:
            # What is approved is what is shown: the action with the edits made, in full.
            edited = {**(request["action"] or {}), **edits}
            print(
                f"\nYour edits: {edits_in_words(request['action'] or {}, edits)}\n"
                f"The action you approve, exactly:\n{shown_json(edited).text}",
                file=sys.stderr,
            )
        if standing is not None:
            # What it grants beyond this request, plainly, before anything is sent.
            terms = standing_terms(*_terms_of(request, standing), names=names)
            print(
                f"\nAnd allow the same {terms}.\nA later ask of that shape is approved at "
                "once, as by you, until it expires, is used up or revoked (vigil standing).",
                file=sys.stderr,
            )
        sys.stderr.write("\nApprove? [y/N] ")
        sys.stderr.flush()
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            print("Not approved: nothing was sent.", file=sys.stderr)
            return Exit.REFUSED
    return _reply(args, client, request, "approved", args.note, edits, standing)


def _standing(args: argparse.Namespace) -> dict[str, Any] | None:
    """``--standing-hours`` with ``--standing-uses``, ``--free`` and ``--any-asker`` as
    reply's standing; None without ``--standing-hours``, which the others need."""
    if args.standing_hours is None:
        if args.free or args.standing_uses is not None or args.any_asker:
            raise Failure(
                Exit.USAGE,
                "--free, --standing-uses and --any-asker go with --standing-hours H, "
                "how long the standing approval lasts",
            )
        return None
    free: dict[str, dict[str, Any]] = {}
    for option in args.free:
        member, sep, text = option.partition("=")
        if not sep or not member or not text:
            raise Failure(
                Exit.USAGE, f"--free takes MEMBER=BOUND, e.g. amount=0..1000; not {option!r}"
            )
        if member in free:
            raise Failure(Exit.USAGE, f"--free names {member!r} twice")
        free[member] = _bound(member, text)
    return output.without_none(
        hours=args.standing_hours,
        uses=args.standing_uses,
        free=free or None,
        any_asker=True if args.any_asker else None,
    )


def _bound(member: str, text: str) -> dict[str, Any]:
    """``--free MEMBER=BOUND``'s bound: ``MIN..MAX`` (numbers, either side left out),
    ``TEXT*`` (text starting with TEXT) or ``A,B,C`` (one of these values, each JSON, or
    else text); refused, naming the option, if the service would not take it."""
    from pydantic import ValidationError

    from vigil.requests.standing_input import BoundInput

    given = f"--free {member}={text}"
    bound: dict[str, Any]
    if text.endswith("*") and "," not in text:
        bound = {"prefix": text[:-1]}
        if not bound["prefix"]:
            raise Failure(Exit.USAGE, f"{given}: a prefix is the text before the *, e.g. /tmp/*")
    elif ".." in text and "," not in text:
        low, _, high = text.partition("..")
        bound = output.without_none(min=_number(low), max=_number(high))
        if not bound or any(side.strip() and _number(side) is None for side in (low, high)):
            raise Failure(
                Exit.USAGE,
                f"{given}: a range is MIN..MAX, numbers, either left out (0..1000, ..500, 10..)",
            )
    else:
        values = [_value(item.strip()) for item in text.split(",")]
        if any(value == "" for value in values):
            raise Failure(Exit.USAGE, f"{given}: a list of values has an empty one")
        if any(isinstance(value, dict | list) for value in values):
            raise Failure(Exit.USAGE, f"{given}: each value is text, a number, true, false or null")
        bound = {"one_of": values}
    try:
        BoundInput(**bound)
    except ValidationError as refused:
        problem = refused.errors()[0]["msg"].removeprefix("Value error, ")
        raise Failure(Exit.USAGE, f"{given}: {problem}") from None
    return bound


def _number(text: str) -> float | None:
    """A finite number written as JSON writes one, else None."""
    value = _value(text.strip()) if text.strip() else None
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return value
    return None


def _value(text: str) -> Any:
    """A value as ``--edit`` reads one: JSON, or else text."""
    from vigil.errors import VigilError
    from vigil.kit.http import json_body

    try:
        return json_body(text.encode())
    except VigilError:
        return text


def _terms_of(
    request: dict[str, Any], standing: dict[str, Any]
) -> tuple[float, int | None, str | None, dict[str, dict[str, Any]]]:
    asker = None if standing.get("any_asker") else request["requester"]
    return (
        standing["hours"],
        standing.get("uses"),
        asker,
        dict(sorted(standing.get("free", {}).items())),
    )


def _check_standing(
    request: dict[str, Any], edits: dict[str, Any] | None, standing: dict[str, Any]
) -> None:
    """Refuses, before anything is shown or sent, a standing approval the service would refuse
    with this approval: free members the approved action lacks, or whose approved value is
    outside its bound."""
    from vigil.errors import VigilError
    from vigil.requests.standing import Bound, StandingApproval, StandingTerms

    if request["action"] is None:
        raise Failure(
            Exit.USAGE,
            f"{request['id']} binds no action: a standing approval stands for an action",
        )
    free = {name: Bound(**bound) for name, bound in standing.get("free", {}).items()}
    terms = StandingTerms(hours=standing["hours"], uses=standing.get("uses"), free=free)
    try:
        StandingApproval.granted(
            "",
            request["id"],
            request["requester"],
            "",
            {**request["action"], **(edits or {})},
            terms,
            output.now(),
        )
    except VigilError as refused:
        raise Failure(Exit.USAGE, f"standing approval: {refused.message}") from None


def _edits(given: list[str]) -> dict[str, Any] | None:
    """``--edit MEMBER=JSON`` options as reply's edits: each value JSON (read as the API
    reads it), or else text; refused if the action's bounds refuse it."""
    from vigil.errors import VigilError
    from vigil.kit.http import json_body
    from vigil.requests.records import ACTION_BOUNDS

    edits: dict[str, Any] = {}
    for option in given:
        member, sep, text = option.partition("=")
        if not sep or not member:
            raise Failure(Exit.USAGE, f"--edit takes MEMBER=JSON, e.g. amount=300; not {option!r}")
        try:
            edits[member] = json_body(text.encode())
        except VigilError:
            edits[member] = text
    problem = ACTION_BOUNDS.shape_problem(edits)
    if problem is not None:
        raise Failure(Exit.USAGE, f"--edit: {problem}")
    return edits or None


def deny(args: argparse.Namespace, client: RestClient) -> Exit:
    request = client.call("get_request", {"id": args.id})
    _not_voted(client, request)
    return _reply(args, client, request, "denied", args.note)


def answer(args: argparse.Namespace, client: RestClient) -> Exit:
    request = client.call("get_request", {"id": args.id})
    return _reply(args, client, request, "answered", args.text)


def ack(args: argparse.Namespace, client: RestClient) -> Exit:
    acked = client.call("acknowledge_alert", {"event_id": args.event})
    if args.json:
        output.print_json(acked)
    else:
        from vigil.people.render import known_as

        by = known_as(acked["acknowledged_by"], output.names(client))
        print(f"{acked['event_id']} acknowledged by {by}.")
    return Exit.OK


def _not_voted(client: RestClient, request: dict[str, Any]) -> None:
    """Refuses a second vote on an open request, saying how the votes stand: the service
    answers a vote cast again with the request unchanged, as it answers a retry."""
    from vigil.requests.views import VERBS, tally, vote_of

    votes = [c for c in request["history"] if c["kind"] == "voted"]
    if request["state"] != "open" or not votes:
        return
    earlier = vote_of({"history": votes}, client.call("whoami")["principal"]["id"])
    if earlier is not None:
        raise Failure(
            Exit.REFUSED,
            f"you voted {VERBS[earlier['outcome']]} on {request['id']} already: "
            f"{tally(request)} so far, and a vote is not changed",
        )


def _reply(
    args: argparse.Namespace,
    client: RestClient,
    request: dict[str, Any],
    outcome: str,
    answer: str | None,
    edits: dict[str, Any] | None = None,
    standing: dict[str, Any] | None = None,
) -> Exit:
    """``reply`` at the version just read: a change in between is a version_conflict, never
    a decision on something not seen."""
    from vigil.requests.views import VERBS, tally

    arguments = output.without_none(
        id=request["id"],
        version=request["version"],
        outcome=outcome,
        answer=answer,
        edits=edits,
        standing=standing,
    )
    try:
        replied = client.call("reply", arguments)
    except Refused as refused:
        if refused.code == "invalid_argument" and request["choices"]:
            offered = ", ".join(json.dumps(choice) for choice in request["choices"])
            refused.message += f" (the choices: {offered})"
        raise
    if args.json:
        output.print_json(replied)
    elif replied["state"] == "open" and outcome in VERBS:
        # A vote that left it open: how far the votes have come.
        counted = {**request, "history": replied["history"]}
        print(f"{replied['id']} open: you voted {VERBS[outcome]}; {tally(counted)}.")
    else:
        print(f"{replied['id']} {replied['state']}.")
    if standing is not None and not args.json:
        _granted(client, replied, standing)
    return Exit.OK


def _granted(client: RestClient, replied: dict[str, Any], standing: dict[str, Any]) -> None:
    """The standing approval the approval granted: its id, to revoke it, and its terms."""
    from vigil.people.render import standing_terms

    granted = next(
        (
            change["standing"]
            for change in reversed(replied["history"])
            if change.get("standing") and change.get("via") != "standing"
        ),
        None,
    )
    if granted is None:
        return
    terms = standing_terms(*_terms_of(replied, standing), names=output.names(client))
    print(
        f"Standing approval {granted}: the same approved {terms}. "
        f"To end it: vigil standing revoke {granted}"
    )


def revoke_standing(args: argparse.Namespace, client: RestClient) -> Exit:
    revoked = client.call("revoke_standing_approval", {"id": args.id})
    if args.json:
        output.print_json(revoked)
    else:
        print(f"{revoked['id']} {revoked['state']}: it approves no ask from now on.")
    return Exit.OK


def claim(args: argparse.Namespace, client: RestClient) -> Exit:
    """Takes an open request in hand for ``--minutes``: the others see it is yours, and it
    leaves their waiting list. Refused, naming its holder, if someone else has it."""
    try:
        claimed = client.call("claim_request", {"id": args.id, "minutes": args.minutes})
    except Refused as refused:
        holder = refused.details.get("claimed_by")
        if refused.code != "version_conflict" or not isinstance(holder, str):
            raise
        from vigil.people.render import clock_time, known_as

        until = refused.details.get("until")
        said = f" until {clock_time(until, output.now())}" if isinstance(until, str) else ""
        refused.message = (
            f"{refused.code}: {args.id} is in the hands of {known_as(holder, output.names(client))}"
            f"{said}: your claim was not made (a claim never stops a decision: you may still "
            "decide it)"
        )
        raise
    if args.json:
        output.print_json(claimed)
        return Exit.OK
    from vigil.people.render import clock_time, relative

    held = claimed["claim"]
    if held is None:  # it closed meanwhile
        print(f"{claimed['id']} is no longer open: no one has it in hand.")
        return Exit.OK
    now = output.now()
    print(
        f"{claimed['id']} is in your hands until {clock_time(held['until'], now)} "
        f"({relative(held['until'], now)}): vigil release {claimed['id']} puts it back."
    )
    return Exit.OK


def release(args: argparse.Namespace, client: RestClient) -> Exit:
    """Puts a request you hold back: anyone of its deciders may claim it again. Releasing one
    you do not hold changes nothing, and says who holds it, if anyone."""
    released = client.call("claim_request", {"id": args.id, "release": True})
    if args.json:
        output.print_json(released)
        return Exit.OK
    held = released["claim"]
    if held is None:
        print(f"{released['id']} released: no one has it in hand.")
        return Exit.OK
    from vigil.people.render import clock_time, known_as

    by = known_as(held["by"], output.names(client))
    print(
        f"{released['id']} is in the hands of {by} until {clock_time(held['until'], output.now())},"
        " not yours: nothing changed."
    )
    return Exit.OK


def set_routing(args: argparse.Namespace, client: RestClient) -> Exit:
    """Replaces the namespace's routing rules with FILE's JSON list (``-``: standard input),
    at ``--version`` (the version ``vigil routing`` showed when the file was written), so a
    change made since is a version_conflict; without it, at the version read just before,
    replacing whatever rules are current."""
    rules = _rules_file(args.file)
    version = args.version
    if version is None:
        version = client.call("routing_rules", {})["version"]
    try:
        replaced = client.call("routing_rules", {"rules": rules, "version": version})
    except Refused as refused:
        # Which rule's member is wrong, and how: what the operator fixes in the file.
        problems = refused.details.get("problems") or []
        said = "; ".join(f"{p.get('field')}: {p.get('problem')}" for p in problems)
        if said:
            refused.message += f" ({said})"
        raise
    if args.json:
        output.print_json(replaced)
        return Exit.OK
    from vigil.people.render import routing_text

    print(routing_text(replaced, output.names(client)))
    return Exit.OK


def _rules_file(name: str) -> list[Any]:
    """FILE's routing rules: a JSON list, read as the API reads JSON; a usage error that names
    the file and where it is wrong, otherwise."""
    from vigil.errors import VigilError
    from vigil.kit.http import json_body

    where = "standard input" if name == "-" else name
    try:
        text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as unread:
        raise Failure(
            Exit.USAGE, f"{where}: cannot be read ({unread.__class__.__name__})"
        ) from None
    try:
        rules = json_body(text.encode())
    except VigilError:
        try:
            json.loads(text)
        except json.JSONDecodeError as found:
            raise Failure(
                Exit.USAGE,
                f"{where}: not JSON (line {found.lineno}, column {found.colno}: {found.msg}); "
                "nothing was changed",
            ) from None
        raise Failure(
            Exit.USAGE,
            f"{where}: not JSON as the API reads it (a member named twice, or a number no "
            "double holds exactly); nothing was changed",
        ) from None
    if not isinstance(rules, list):
        raise Failure(
            Exit.USAGE, f"{where}: the rules are a JSON list, [] for none; nothing was changed"
        )
    return rules


def add(args: argparse.Namespace, client: RestClient) -> Exit:
    """Registers a person, agent or service (an operator's power); prints its secret this
    once, and for an agent what to paste to connect it."""
    from vigil.kit.snippets import claude_code_command, mcp_config

    arguments = {
        "kind": args.kind,
        "name": args.name,
        "role": "operator" if args.operator else "worker",
        "idempotency_key": output.idempotency_key(),
    }
    issued = client.call("register", arguments)
    if args.json:
        output.print_json(issued)
        return Exit.OK
    if args.quiet:
        print(issued["secret"])  # for a script: AGENT=$(vigil add agent NAME --quiet)
        return Exit.OK
    principal, secret = issued["principal"], issued["secret"]
    print(
        f"Added {principal['kind']} {output.plain(principal['name'])} ({principal['id']}), "
        f"{principal['role']}."
    )
    print(f"Its secret, shown this once (Vigil keeps only its hash):\n\n  {secret}\n")
    mcp_url = f"{client.endpoint.base}/mcp"
    if principal["kind"] == "agent":
        print("Connect the agent: in its MCP host's configuration (Claude Desktop, Cursor;")
        print("VS Code's servers take the same entry):\n")
        print(mcp_config(mcp_url, secret))
        print("\nor with Claude Code:\n")
        print(f"  {claude_code_command(mcp_url, secret)}\n")
        print(f"Its mailbox address is agent:{principal['id']}.")
    elif principal["kind"] == "person":
        print(f"They sign in to {client.endpoint.base}/console with it, or use it with")
        print(f"`vigil profile add NAME --endpoint {client.endpoint.base}`.")
    return Exit.OK
