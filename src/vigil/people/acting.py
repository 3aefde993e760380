"""The people's commands that act: post an instruction, send a message, decide a request
(approve only after showing the exact action and asking, on a terminal) and acknowledge an
alert.

Only the standard library and the REST client at import: rich (in ``render``) is imported
when something is drawn.
"""

from __future__ import annotations

import argparse
import json
import sys
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
    request = client.call("get_request", {"id": args.id})
    edits = _edits(args.edit)
    if not edits:
        _not_voted(client, request)
    if not args.yes and request["state"] == "open" and request["kind"] == "approval":
        from vigil.kit.canonical import edits_in_words, shown_json
        from vigil.people.render import request_text

        print(request_text(request, output.now(), names=output.names(client)), file=sys.stderr)
        if edits:
            # What is approved is what is shown: the action with the edits made, in full.
            edited = {**(request["action"] or {}), **edits}
            print(
                f"\nYour edits: {edits_in_words(request['action'] or {}, edits)}\n"
                f"The action you approve, exactly:\n{shown_json(edited).text}",
                file=sys.stderr,
            )
        sys.stderr.write("\nApprove? [y/N] ")
        sys.stderr.flush()
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            print("Not approved: nothing was sent.", file=sys.stderr)
            return Exit.REFUSED
    return _reply(args, client, request, "approved", args.note, edits)


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
) -> Exit:
    """``reply`` at the version just read: a change in between is a version_conflict, never
    a decision on something not seen."""
    from vigil.requests.views import VERBS, tally

    arguments = output.without_none(
        id=request["id"], version=request["version"], outcome=outcome, answer=answer, edits=edits
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
    return Exit.OK


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
