"""Valid calls of every tool of the catalog: what to arrange first, who calls, with what.

Keyed by tool name. A tool with no entry here gets one scenario whose arguments are built
from its published input schema (``example``), called by a worker if workers may call it:
that covers a new tool at once, and its clean run says whether a hand-written scenario is
needed (a business error there fails tests/faults with a message pointing here).

``prepare`` arranges the world and returns the arguments. It takes fresh names from the world
(``world.unique``), so it can run many times in one world (scripts/bench.py does) and gives
the same names in two fresh worlds (the fault tests compare a clean run with a faulted one).
Durations are long (hours) so that a retry that waits out an idempotency lock still finds
the lease or the switch it is about.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from tests.faults.world import BUCKET, NAMESPACE, World
from vigil import catalog
from vigil.alarms.timers import Timer
from vigil.clock import iso
from vigil.errors import ErrorCode, VigilError
from vigil.kit.events import event_id as make_event_id
from vigil.kit.idempotency import LOCK_SECONDS
from vigil.kit.tooling import Tool
from vigil.kit.uow import UnitOfWork
from vigil.notifications.outbox import Outbox
from vigil.notifications.records import MAX_ATTEMPTS, ChannelDelivery, DeliveryFailure, Notification
from vigil.requests.service import TIMER_KIND as REQUEST_TIMER
from vigil.requests.service import Requests
from vigil.switches.timers import timer_for

Prepare = Callable[[World], dict[str, Any]]
Run = Callable[[World, "Scenario", dict[str, Any]], dict[str, Any]]
Settle = Callable[[World, dict[str, Any], dict[str, Any]], None]

ALL_ACTIONS = ["release_leases", "mark_failed", "queue_alert"]
HOUR = 3600


def call_tool(world: World, scenario: Scenario, arguments: dict[str, Any]) -> dict[str, Any]:
    return world.call(scenario.tool, scenario.caller, **arguments)


def nothing_to_settle(world: World, arguments: dict[str, Any], result: dict[str, Any]) -> None:
    return None


@dataclass(frozen=True)
class Scenario:
    tool: str
    variant: str
    caller: str
    prepare: Prepare
    # Fields a plain retry may legitimately change, for tools without an idempotency key.
    tolerate: frozenset[str] = frozenset()
    # False where the answer after a lost one is rightly different (a second receive finds
    # the deliveries of the first still leased); what converges is then checked by the drain.
    compare_result: bool = True
    # After the call, whatever the caller does with the answer it saw.
    settle: Settle = nothing_to_settle
    run: Run = call_tool
    # Tool calls must fail with a typed, retryable error; the alarm function just fails.
    typed_errors: bool = True
    generic: bool = False
    # A tool without a retry key that audits each attempt before it acts (test_channel): a
    # retry after a lost answer rightly records one more event like the first.
    audits_each_attempt: bool = False

    @property
    def name(self) -> str:
        return f"{self.tool}: {self.variant}"

    @property
    def keyed(self) -> bool:
        return self.tool in catalog.DECLARED_IN and catalog.tool(self.tool).takes_idempotency_key


def key_field(tool: Tool) -> str:
    """The argument that carries the retry key: tools from some seeds spell it otherwise."""
    return str(getattr(tool.input_model, "idempotency_field", "idempotency_key"))


def keyed(world: World, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    if catalog.tool(tool).takes_idempotency_key:
        arguments[key_field(catalog.tool(tool))] = world.unique("key")
    return arguments


# -- identity -------------------------------------------------------------------------------
def _register(world: World) -> dict[str, Any]:
    return keyed(world, "register", {"kind": "agent", "name": world.unique("agent")})


def _rotate(world: World) -> dict[str, Any]:
    target = world.unique("rotating")
    world.register(target)
    return keyed(world, "rotate_secret", {"principal_id": world.ids[target], "version": 1})


def _rotate_own(world: World) -> dict[str, Any]:
    # A retry after a lost answer is made with the old secret, which opens only its replay.
    version = world.call("whoami", "worker")["principal"]["version"]
    return keyed(world, "rotate_secret", {"version": version})


def _rotating_own(world: World, scenario: Scenario, arguments: dict[str, Any]) -> dict[str, Any]:
    result = call_tool(world, scenario, arguments)
    world.secrets[scenario.caller] = result["secret"]
    return result


def _revoke(world: World) -> dict[str, Any]:
    target = world.unique("revoking")
    world.register(target)
    return keyed(world, "revoke_principal", {"principal_id": world.ids[target], "version": 1})


def _list_directory(world: World) -> dict[str, Any]:
    return {"kind": "agent", "search": "w"}


# -- leases ---------------------------------------------------------------------------------
def _acquire(world: World) -> dict[str, Any]:
    return keyed(
        world,
        "acquire_lease",
        {
            "resource": world.unique("repo"),
            "scope": world.unique("job"),
            "ttl_seconds": HOUR,
            "agent_id": "worker-1",
        },
    )


def _held(world: World) -> tuple[str, str]:
    resource, scope = world.unique("repo"), world.unique("job")
    world.call("acquire_lease", "worker", resource=resource, scope=scope, ttl_seconds=HOUR)
    return resource, scope


def _rescope(world: World) -> dict[str, Any]:
    resource, _ = _held(world)
    return keyed(
        world,
        "acquire_lease",
        {"resource": resource, "scope": world.unique("job"), "ttl_seconds": HOUR},
    )


def _renew(world: World) -> dict[str, Any]:
    resource, _ = _held(world)
    return keyed(
        world, "renew_lease", {"resource": resource, "generation": 1, "ttl_seconds": 2 * HOUR}
    )


def _release(world: World) -> dict[str, Any]:
    resource, _ = _held(world)
    return keyed(world, "release_lease", {"resource": resource, "generation": 1})


# -- mailboxes ------------------------------------------------------------------------------
def _create_mailbox(world: World) -> dict[str, Any]:
    # A fresh owner each time: an agent may have only 20 named boxes (bench repeats this).
    owner = world.unique("boxer")
    world.register(owner)
    return keyed(world, "create_mailbox", {"box": "jobs", "agent_id": world.ids[owner]})


# -- attachments ----------------------------------------------------------------------------
def _stage(world: World) -> dict[str, Any]:
    staged = {"base64": "aGVsbG8sIHdvcmxk", "file_name": "notes.txt", "media_type": "text/plain"}
    return keyed(world, "stage_attachment", staged)


def _begin_upload(world: World) -> dict[str, Any]:
    upload = {"file_name": "big.bin", "media_type": "application/octet-stream"}
    return keyed(world, "begin_attachment_upload", upload)


def _finish_upload(world: World) -> dict[str, Any]:
    begun = world.call("begin_attachment_upload", "worker", **_begin_upload(world))
    world.learn(begun)
    # What the presigned form's POST does: the bytes at the form's key.
    key = begun["upload"]["fields"]["key"]
    world.s3.put_object(Bucket=BUCKET, Key=key, Body=b"\x00" * 70_000)
    return {"id": begun["attachment"]["id"]}


def _three_waiting(world: World) -> dict[str, Any]:
    for _ in range(3):
        world.send("worker")
    return {"max_messages": 10, "lease_seconds": 900}


def _acknowledge_seen(world: World, arguments: dict[str, Any], result: dict[str, Any]) -> None:
    world.acknowledge_all("worker", result["deliveries"])


def _one_received(world: World) -> dict[str, Any]:
    world.send("worker")
    (delivery,) = world.call("receive", "worker", lease_seconds=900)["deliveries"]
    return {"id": delivery["id"], "generation": delivery["generation"]}


def _record_acknowledged(world: World, arguments: dict[str, Any], result: dict[str, Any]) -> None:
    if result["received"]:
        world.acked.append(arguments["id"])


def _dead_letters(world: World) -> dict[str, Any]:
    return {}


# -- conversations --------------------------------------------------------------------------
def target(world: World, label: str) -> dict[str, str]:
    return {"kind": world.kinds[label], "id": world.ids[label]}


def _chat(world: World, agents: int) -> tuple[str, list[str]]:
    """A chat of the worker with ``agents`` fresh agents, its first message sent (their
    mailboxes exist from then on), and their labels; its ids are named for the comparison of
    runs."""
    members = [world.unique("member") for _ in range(agents)]
    for member in members:
        world.register(member)
    started = world.call(
        "start_chat", "worker", targets=[target(world, m) for m in members], body="kick-off"
    )
    world.learn(started)
    return str(started["conversation_id"]), members


def _send_new(world: World) -> dict[str, Any]:
    # The watcher's mailbox is used once before, as it is by anyone written to before.
    world.learn(world.call("send", "worker", target=target(world, "watcher"), body="warm-up"))
    return keyed(world, "send", {"target": target(world, "watcher"), "body": "the build is green"})


def _send_to(agents: int) -> Prepare:
    def prepare(world: World) -> dict[str, Any]:
        body = "deploy at noon 🚀 @first"  # @first begins at code point 17
        conversation, members = _chat(world, agents)
        mention = {"start": 17, "end": 23, "principal_id": world.ids[members[0]]}
        return keyed(
            world, "send", {"conversation_id": conversation, "body": body, "mentions": [mention]}
        )

    return prepare


def _staged(world: World) -> str:
    staged = world.call("stage_attachment", "worker", **_stage(world))
    world.learn(staged)
    return str(staged["id"])


def _send_with_file(world: World) -> dict[str, Any]:
    # A claim: the draft's bytes are copied in S3, then claimed with the message in DynamoDB.
    conversation, _ = _chat(world, 1)
    arguments = {"conversation_id": conversation, "body": "see the file"}
    return keyed(world, "send", {**arguments, "attachment_ids": [_staged(world)]})


def _upload(world: World) -> dict[str, Any]:
    conversation, _ = _chat(world, 1)
    file = {"base64": "aGVsbG8=", "file_name": "hello.txt", "media_type": "text/plain"}
    return keyed(world, "upload_attachment", {"conversation_id": conversation, **file})


def _with_a_file(world: World) -> tuple[str, str]:
    conversation, _ = _chat(world, 1)
    sent = world.call(
        "send", "worker", conversation_id=conversation, body="file", attachment_ids=[_staged(world)]
    )
    world.learn(sent)
    return conversation, str(sent["messages"][0]["attachment_ids"][0])


def _start_chat(world: World) -> dict[str, Any]:
    members = [world.unique("member") for _ in range(2)]
    for member in members:
        world.register(member)
    return keyed(
        world,
        "start_chat",
        {
            "targets": [target(world, m) for m in [*members, "operator"]],
            "body": "kick-off",
            "title": "release 42",
        },
    )


def _add_member(world: World) -> dict[str, Any]:
    conversation, _ = _chat(world, 1)
    newcomer = world.unique("newcomer")
    world.register(newcomer)
    return keyed(
        world,
        "change_chat_membership",
        {
            "conversation_id": conversation,
            "operation": "add",
            "members": [world.ids[newcomer]],
            "version": 1,
        },
    )


def _conversation(world: World) -> dict[str, Any]:
    conversation, _ = _chat(world, 2)
    world.call("send", "worker", conversation_id=conversation, body="second")
    return {"id": conversation}


# -- requests -------------------------------------------------------------------------------
DEPLOY = {"op": "deploy", "service": "checkout", "version": "1.2.3"}


def _ask_new(world: World) -> dict[str, Any]:
    # The watcher's mailbox is used once before, as it is by anyone written to before.
    world.learn(world.call("send", "worker", target=target(world, "watcher"), body="warm-up"))
    return keyed(world, "ask", {"target": target(world, "watcher"), "body": "which region?"})


def _ask_in_chat(world: World) -> dict[str, Any]:
    conversation, _ = _chat(world, 3)
    arguments = {"conversation_id": conversation, "body": "ship it?", "kind": "approval"}
    return keyed(world, "ask", {**arguments, "action": DEPLOY, "attachment_ids": [_staged(world)]})


def _asked(world: World, **extra: Any) -> dict[str, Any]:
    """An open request of the worker to the watcher, in a conversation they had already."""
    world.learn(world.call("send", "worker", target=target(world, "watcher"), body="warm-up"))
    asked = world.call("ask", "worker", target=target(world, "watcher"), body="may I?", **extra)
    world.learn(asked)
    return asked


def _reply(world: World) -> dict[str, Any]:
    asked = _asked(world, kind="approval", action=DEPLOY)
    return {"id": asked["id"], "version": 1, "outcome": "approved", "answer": "go"}


def _asked_of_operator(world: World) -> tuple[dict[str, Any], dict[str, Any]]:
    """An open approval by the worker to the operator, a person, and its action: a deploy of a
    ticket of its own, so that no standing approval granted before approves it; those are
    revoked first, so that however many runs grant one, the worker's stay under their limit."""
    for standing in world.call("list_standing_approvals", "operator", everyone=True)["standing"]:
        world.call("revoke_standing_approval", "operator", id=standing["id"])
    action = {**DEPLOY, "ticket": world.unique("ticket")}
    asked = world.call(
        "ask",
        "worker",
        target=target(world, "operator"),
        body="may I?",
        action=action,
        reuse_direct=True,
    )
    world.learn(asked)
    return asked, action


STANDING = {"hours": 8, "uses": 5, "free": {"version": {"prefix": "1."}}}


def _reply_standing(world: World) -> dict[str, Any]:
    asked, _ = _asked_of_operator(world)
    return {"id": asked["id"], "version": 1, "outcome": "approved", "standing": STANDING}


def _granted(world: World) -> tuple[str, dict[str, Any]]:
    """A standing approval the operator granted for the worker's deploys of 1.x of one ticket,
    and the action it was granted on."""
    asked, action = _asked_of_operator(world)
    approved = world.call(
        "reply", "operator", id=asked["id"], version=1, outcome="approved", standing=STANDING
    )
    world.learn(approved)
    return str(approved["history"][-1]["standing"]), action


def _ask_standing(world: World) -> dict[str, Any]:
    _, action = _granted(world)
    arguments = {"target": target(world, "operator"), "reuse_direct": True, "body": "again?"}
    return keyed(world, "ask", {**arguments, "action": {**action, "version": "1.3"}})


def _claim(world: World) -> dict[str, Any]:
    asked, _ = _asked_of_operator(world)
    return {"id": asked["id"], "minutes": 15}


def _release_claim(world: World) -> dict[str, Any]:
    asked, _ = _asked_of_operator(world)
    world.call("claim_request", "operator", id=asked["id"])
    return {"id": asked["id"], "release": True}


def _route(world: World) -> dict[str, Any]:
    rules = [{"op": "deploy", "to": [world.ids["operator"]], "least_recent": True}]
    version = world.call("routing_rules", "operator")["version"]
    return {"rules": rules, "version": version}


def _routed_ask(world: World) -> dict[str, Any]:
    version = world.call("routing_rules", "operator")["version"]
    rules = [{"op": "deploy", "to": [world.ids["operator"]], "least_recent": True}]
    world.call("routing_rules", "operator", rules=rules, version=version)
    action = {**DEPLOY, "ticket": world.unique("ticket")}
    arguments = {"target": target(world, "operator"), "reuse_direct": True, "action": action}
    return keyed(world, "ask", {**arguments, "body": "routed?"})


def _revoke_standing(world: World) -> dict[str, Any]:
    return {"id": _granted(world)[0]}


def _set_blocking(world: World) -> dict[str, Any]:
    return {"id": _asked(world)["id"], "blocking": True}


def _replace(world: World) -> dict[str, Any]:
    asked = _asked(world, kind="approval", action=DEPLOY, blocking=True)
    return keyed(world, "replace_request", {"id": asked["id"], "version": 1, "body": "v2"})


def _withdraw(world: World) -> dict[str, Any]:
    return {"id": _asked(world, kind="approval", action=DEPLOY, blocking=True)["id"]}


def _approved(world: World) -> str:
    asked = _asked(world, kind="approval", action=DEPLOY)
    world.call("reply", "watcher", id=asked["id"], version=1, outcome="approved")
    return str(asked["id"])


def _redeem(world: World) -> dict[str, Any]:
    return {"id": _approved(world), "action": DEPLOY}


def _report(world: World) -> dict[str, Any]:
    intent = world.call("redeem_approval", "worker", id=_approved(world), action=DEPLOY)
    world.learn(intent)
    return {"id": intent["id"], "state": "succeeded", "result": {"build": 7}}


def _overdue_request(world: World) -> dict[str, Any]:
    asked = _asked(world, blocking=True, expires_in_seconds=60)
    world.clock.advance(60)
    timer = Timer(kind=REQUEST_TIMER, namespace="acme", key=asked["id"], due_at=world.clock.now())
    return {"timer": timer.model_dump(mode="json")}


def deliver_request_timer(
    world: World, scenario: Scenario, arguments: dict[str, Any]
) -> dict[str, Any]:
    requests = Requests(
        world.store,
        queues=world.queues,
        clock=world.clock,
        alarms=world.alarms,
        publish=Outbox(world.store, world.clock, world.alarms),
        audit=world.store,
    )
    requests.on_timer(UnitOfWork(world.store), Timer.model_validate(arguments["timer"]))
    return {}


# -- switches -------------------------------------------------------------------------------
def _beat(world: World, scope: str, window: int = 300, **extra: Any) -> dict[str, Any]:
    return {
        "scope": scope,
        "expect_within_seconds": window,
        "on_expiry": ALL_ACTIONS,
        "notify_address": world.address("watcher"),
        "agent_id": "worker-1",
        **extra,
    }


def _arm(world: World) -> dict[str, Any]:
    return _beat(world, world.unique("job"))


def _arm_long(world: World) -> dict[str, Any]:
    return {"scope": world.unique("job"), "expect_within_seconds": 86_400}


def _armed(world: World) -> dict[str, Any]:
    arguments = _beat(world, world.unique("job"))
    world.call("heartbeat", "worker", **arguments)
    return arguments


def _steady(world: World) -> dict[str, Any]:
    arguments = _armed(world)
    world.clock.advance(60)
    return arguments


def _late(world: World) -> dict[str, Any]:
    scope = world.unique("job")
    world.call(
        "acquire_lease", "worker", resource=world.unique("repo"), scope=scope, ttl_seconds=HOUR
    )
    world.call("acquire_lease", "worker", resource=world.unique("unscoped"), ttl_seconds=HOUR)
    arguments = _beat(world, scope)
    world.call("heartbeat", "worker", **arguments)
    world.clock.advance(301)
    return arguments


def _depending(world: World) -> dict[str, Any]:
    """A job's beat that names, for the first time, the host it runs on, itself on a rack:
    the chain is checked and the host's dependants row written."""
    rack, host = world.unique("rack"), world.unique("host")
    world.call("heartbeat", "worker", **_beat(world, rack))
    world.call("heartbeat", "worker", **_beat(world, host, depends_on=rack))
    return {**_armed(world), "depends_on": host}


def _late_dependant(world: World) -> dict[str, Any]:
    """A job's late beat, its host dead too: the job's death waits for the host to be judged,
    or is folded into its alert."""
    host = world.unique("host")
    world.call("heartbeat", "worker", **_beat(world, host))
    arguments = _beat(world, world.unique("job"), depends_on=host)
    world.call("heartbeat", "worker", **arguments)
    world.clock.advance(301)
    return arguments


def _short_run(world: World) -> dict[str, Any]:
    """A run's finish before the floor its start set, on a calendar: told as switch.ran_short
    with the beat that arms the next slot."""
    scope = world.unique("backup")
    start = {"scope": scope, "expect_within_seconds": HOUR, "phase": "start"}
    world.call("heartbeat", "worker", **start, min_run_seconds=600)
    world.clock.advance(30)
    return {
        "scope": scope,
        "expect_within_seconds": 900,
        "phase": "finish",
        "schedule": "0 2 * * 1-5",
        "time_zone": "Europe/Berlin",
    }


def _disarm(world: World) -> dict[str, Any]:
    arguments = _armed(world)
    return {"scope": arguments["scope"], "expect_within_seconds": 300, "disarm": True}


def _resume(world: World) -> dict[str, Any]:
    return {"scope": _armed(world)["scope"]}


def _one_armed(world: World) -> dict[str, Any]:
    _armed(world)
    return {}


def _one_died(world: World) -> dict[str, Any]:
    """A switch whose late beat ran its expiry, so its death is recorded."""
    arguments = _armed(world)
    world.clock.advance(301)
    world.call("heartbeat", "worker", **arguments)
    return {}


def _in(world: World, seconds: int) -> str:
    return iso(world.clock.now() + timedelta(seconds=seconds))


def _pause(world: World) -> dict[str, Any]:
    arguments = {"scope_prefix": _armed(world)["scope"], "until": _in(world, 2 * HOUR)}
    return keyed(world, "pause_switches", {**arguments, "reason": "upgrade"})


def _paused(world: World, **more: Any) -> dict[str, Any]:
    prefix = world.unique("job")
    return world.call("pause_switches", "operator", scope_prefix=prefix, **more)


def _resume_pause(world: World) -> dict[str, Any]:
    made = _paused(world, until=_in(world, 2 * HOUR))
    return keyed(world, "resume_switches", {"id": made["id"], "version": made["version"]})


def _pauses(world: World) -> dict[str, Any]:
    _paused(world, until_next_beat=True)
    return {}


# -- sessions and runs ---------------------------------------------------------------------
def _first_beat(world: World) -> dict[str, Any]:
    return keyed(world, "session_heartbeat", {"sessionId": world.unique("session")})


def _beat_on(world: World, arguments: dict[str, Any], result: dict[str, Any]) -> None:
    """The agent beats on: a watch its first beat could not arm is armed by this one."""
    world.clock.advance(30)
    world.call(
        "session_heartbeat",
        "worker",
        sessionId=arguments["sessionId"],
        idempotencyKey=world.unique("key"),
    )


def _live_session(world: World) -> str:
    session = world.unique("session")
    world.call("session_heartbeat", "worker", sessionId=session, idempotencyKey=world.unique("key"))
    return session


def _session(world: World) -> dict[str, Any]:
    session = _live_session(world)
    return keyed(world, "post_instruction", {"sessionId": session, "body": "stop after step 3"})


def _ended(world: World) -> dict[str, Any]:
    session = _live_session(world)
    return keyed(world, "end_session", {"sessionId": session, "outcome": "completed"})


def _instructed(world: World) -> dict[str, Any]:
    session = _live_session(world)
    world.call("post_instruction", "operator", sessionId=session, body="stop after step 3")
    return {"sessionId": session}


def _run_id(world: World) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, world.unique("run")))


def _started(world: World, lease: int = 300) -> str:
    run_id = _run_id(world)
    world.call("start_run", "worker", run_id=run_id, lease_duration_seconds=lease)
    return run_id


def _sessions(world: World) -> dict[str, Any]:
    _live_session(world)
    return {}


def _start(world: World) -> dict[str, Any]:
    return keyed(world, "start_run", {"run_id": _run_id(world), "lease_duration_seconds": 300})


def _lapsed(world: World) -> dict[str, Any]:
    run_id = _started(world, lease=5)
    world.clock.advance(6)
    return keyed(world, "claim_run", {"run_id": run_id, "lease_duration_seconds": 300})


def _running(world: World) -> dict[str, Any]:
    return {"run_id": _started(world), "lease_duration_seconds": 300}


def _finish(world: World) -> dict[str, Any]:
    return keyed(
        world,
        "finish_run",
        {"run_id": _started(world), "generation": 1, "outcome": "succeeded", "result": {"n": 1}},
    )


# -- the alarm function (not a tool: the same harness drives it) ---------------------------
def _overdue_timer(world: World) -> dict[str, Any]:
    return _timer_of(world, _late(world)["scope"])


def _beaten_timer(world: World) -> dict[str, Any]:
    arguments = _armed(world)
    armed = _timer_of(world, arguments["scope"])  # the alarm armed before the beat moved it
    world.clock.advance(200)
    world.call("heartbeat", "worker", **arguments)
    world.clock.advance(101)
    return armed


def _timer_of(world: World, scope: str) -> dict[str, Any]:
    switch = world.store.get_switch("acme", scope)
    assert switch is not None
    return {"timer": timer_for(switch, switch.alarm_due).model_dump(mode="json")}


def _held_timer(world: World) -> dict[str, Any]:
    scope = _late(world)["scope"]
    world.call("pause_switches", "operator", scope_prefix=scope, until=_in(world, HOUR))
    return _timer_of(world, scope)


def _graced_timer(world: World) -> dict[str, Any]:
    scope = _armed(world)["scope"]
    world.call("pause_switches", "operator", scope_prefix=scope, until=_in(world, 310))
    world.clock.advance(311)
    return _timer_of(world, scope)


def deliver_timer(world: World, scenario: Scenario, arguments: dict[str, Any]) -> dict[str, Any]:
    world.switch_engine.on_timer(UnitOfWork(world.store), Timer.model_validate(arguments["timer"]))
    return {}


A_RETRIED_BEAT = frozenset({"beats", "version"})


def _batch_of(prepare: Prepare) -> Prepare:
    """Two beats, each as ``prepare`` arranges one, in one heartbeat_batch."""
    return lambda world: {"beats": [prepare(world), prepare(world)]}


def _batched(world: World, scenario: Scenario, arguments: dict[str, Any]) -> dict[str, Any]:
    """A batch as its caller sees it: a beat answered with a retryable error is sent again
    (here, the whole batch: each beat is safe to repeat)."""
    result = call_tool(world, scenario, arguments)
    for outcome in result["results"]:
        error = outcome["error"]
        if error is not None and error["retryable"]:
            raise VigilError(ErrorCode(error["code"]), error["message"])
    return result


# -- channels -------------------------------------------------------------------------------
def _new_channel(world: World, kind: str = "webhook") -> dict[str, Any]:
    url = {
        "webhook": "https://receiver.example.com/vigil",
        "slack": "https://hooks.slack.com/services/T0001/B0001/token",
    }[kind]
    rules = [{"events": ["switch.fired", "request.opened"], "scope_prefix": "job-"}]
    return keyed(
        world,
        "create_channel",
        {"name": world.unique("channel"), "kind": kind, "url": url, "rules": rules},
    )


def _channel(world: World) -> str:
    created = world.call("create_channel", "operator", **_new_channel(world))
    world.learn(created)
    return str(created["channel"]["id"])


def _rotate_channel(world: World) -> dict[str, Any]:
    return keyed(world, "rotate_channel_secret", {"id": _channel(world), "version": 1})


def _disable_channel(world: World) -> dict[str, Any]:
    arguments = {"id": _channel(world), "version": 1, "state": "disabled"}
    return keyed(world, "set_channel_state", arguments)


def _delete_channel(world: World) -> dict[str, Any]:
    return keyed(world, "delete_channel", {"id": _channel(world), "version": 1})


def _alert(world: World) -> dict[str, Any]:
    """An alert written to a channel, as a switch's death writes one."""
    channel_id = _channel(world)
    now = world.clock.now()
    event_id = make_event_id(NAMESPACE, "switch.fired", world.unique("alert"))
    notification = Notification(
        namespace=NAMESPACE,
        event_id=event_id,
        event_type="switch.fired",
        event={"id": event_id},
        deliveries={channel_id: ChannelDelivery(channel_id=channel_id, next_at=now)},
        created_at=now,
    )
    world.store.commit([world.store.add_notification(notification)])
    return {"event_id": event_id}


def _failed_delivery(world: World) -> dict[str, Any]:
    """A channel with a delivery that gave up, as the notify function leaves one."""
    channel_id = _channel(world)
    now = world.clock.now()
    event_id = make_event_id(NAMESPACE, "switch.fired", world.unique("failed"))
    failed = ChannelDelivery(
        channel_id=channel_id, state="failed", attempt=MAX_ATTEMPTS, next_at=now, finished_at=now
    )
    notification = Notification(
        namespace=NAMESPACE,
        event_id=event_id,
        event_type="switch.fired",
        event={"id": event_id},
        deliveries={channel_id: failed},
        created_at=now,
    )
    failure = DeliveryFailure(
        namespace=NAMESPACE,
        channel_id=channel_id,
        event_id=event_id,
        event_type="switch.fired",
        failed_at=now,
        attempts=MAX_ATTEMPTS,
        status=500,
        reason="HTTP 500",
    )
    world.store.commit(
        [world.store.add_notification(notification), world.store.add_failure(failure)]
    )
    return keyed(world, "replay_delivery", {"channel_id": channel_id, "event_id": event_id})


A_LOST_HAND_OUT = frozenset({"generation", "version"})
A_RENEWAL_RETRIED = frozenset({"version"})

SCENARIOS: dict[str, list[Scenario]] = {
    "register": [Scenario("register", "an agent", "operator", _register)],
    "rotate_secret": [
        Scenario("rotate_secret", "by an operator", "operator", _rotate),
        Scenario("rotate_secret", "one's own", "worker", _rotate_own, run=_rotating_own),
    ],
    "revoke_principal": [Scenario("revoke_principal", "an agent", "operator", _revoke)],
    "whoami": [Scenario("whoami", "", "worker", lambda world: {})],
    "list_agents": [Scenario("list_agents", "", "worker", lambda world: {})],
    "list_directory": [Scenario("list_directory", "search", "worker", _list_directory)],
    "acquire_lease": [
        Scenario("acquire_lease", "new, with a scope", "worker", _acquire),
        Scenario("acquire_lease", "held, moved to another scope", "worker", _rescope),
    ],
    "renew_lease": [Scenario("renew_lease", "scoped", "worker", _renew)],
    "release_lease": [Scenario("release_lease", "scoped", "worker", _release)],
    "create_mailbox": [
        Scenario("create_mailbox", "named box, by an operator", "operator", _create_mailbox)
    ],
    "stage_attachment": [Scenario("stage_attachment", "a small file", "worker", _stage)],
    "begin_attachment_upload": [
        Scenario("begin_attachment_upload", "a large file", "worker", _begin_upload)
    ],
    "finish_attachment_upload": [
        Scenario("finish_attachment_upload", "70,000 bytes posted", "worker", _finish_upload)
    ],
    "inbox_poll": [
        Scenario(
            "inbox_poll",
            "three waiting",
            "worker",
            _three_waiting,
            tolerate=A_LOST_HAND_OUT,
            compare_result=False,
            settle=_acknowledge_seen,
        )
    ],
    "receive": [
        Scenario(
            "receive",
            "three waiting",
            "worker",
            _three_waiting,
            tolerate=A_LOST_HAND_OUT,
            compare_result=False,
            settle=_acknowledge_seen,
        )
    ],
    "acknowledge": [
        Scenario(
            "acknowledge",
            "current generation",
            "worker",
            _one_received,
            settle=_record_acknowledged,
        )
    ],
    "list_dead_letters": [Scenario("list_dead_letters", "empty", "worker", _dead_letters)],
    "start_chat": [Scenario("start_chat", "two agents and a person", "worker", _start_chat)],
    "send": [
        Scenario("send", "to an agent, a new direct conversation", "worker", _send_new),
        Scenario("send", "into a chat with 1 agent recipient", "worker", _send_to(1)),
        Scenario("send", "into a chat with 10 agent recipients", "worker", _send_to(10)),
        Scenario("send", "into a chat, claiming a staged file", "worker", _send_with_file),
    ],
    "upload_attachment": [
        Scenario("upload_attachment", "a small file into a chat", "worker", _upload)
    ],
    "list_attachments": [
        Scenario(
            "list_attachments",
            "a chat with one file",
            "worker",
            lambda world: {"conversation_id": _with_a_file(world)[0]},
        )
    ],
    "download_attachment": [
        Scenario(
            "download_attachment",
            "a file of a message",
            "worker",
            lambda world: {"id": _with_a_file(world)[1]},
        )
    ],
    "get_conversation": [
        Scenario("get_conversation", "a chat of three, two messages", "worker", _conversation)
    ],
    "change_chat_membership": [
        Scenario("change_chat_membership", "add an agent", "worker", _add_member)
    ],
    "ask": [
        Scenario("ask", "a question to an agent, a new direct conversation", "worker", _ask_new),
        Scenario("ask", "an approval into a chat of 3 agents, with a file", "worker", _ask_in_chat),
        Scenario("ask", "an approval a standing approval approves", "worker", _ask_standing),
        Scenario("ask", "an approval a routing rule assigns", "worker", _routed_ask),
    ],
    "reply": [
        Scenario("reply", "approve an approval", "watcher", _reply),
        Scenario("reply", "approve, granting a standing approval", "operator", _reply_standing),
    ],
    "claim_request": [
        Scenario("claim_request", "an open approval", "operator", _claim),
        Scenario("claim_request", "release one held", "operator", _release_claim),
    ],
    "routing_rules": [Scenario("routing_rules", "one rule, least recent", "operator", _route)],
    "revoke_standing_approval": [
        Scenario("revoke_standing_approval", "one granted", "operator", _revoke_standing)
    ],
    "list_standing_approvals": [
        Scenario("list_standing_approvals", "one granted", "operator", lambda w: _granted(w) and {})
    ],
    "request_status": [
        Scenario("request_status", "one open", "watcher", lambda w: _asked(w) and {})
    ],
    "get_request": [Scenario("get_request", "open", "watcher", lambda w: {"id": _asked(w)["id"]})],
    "set_blocking": [
        Scenario("set_blocking", "on a request to one agent", "worker", _set_blocking)
    ],
    "replace_request": [Scenario("replace_request", "a blocking approval", "worker", _replace)],
    "withdraw_request": [Scenario("withdraw_request", "a blocking approval", "worker", _withdraw)],
    "redeem_approval": [Scenario("redeem_approval", "approved", "worker", _redeem)],
    "report_execution": [Scenario("report_execution", "succeeded", "worker", _report)],
    "heartbeat": [
        Scenario("heartbeat", "first beat, timer queue", "worker", _arm, A_RETRIED_BEAT),
        Scenario("heartbeat", "first beat, Scheduler", "worker", _arm_long, A_RETRIED_BEAT),
        Scenario("heartbeat", "steady beat", "worker", _steady, A_RETRIED_BEAT),
        Scenario("heartbeat", "late beat runs the expiry", "worker", _late, A_RETRIED_BEAT),
        Scenario("heartbeat", "names the host it depends on", "worker", _depending, A_RETRIED_BEAT),
        Scenario(
            "heartbeat", "late beat of a dead host's job", "worker", _late_dependant, A_RETRIED_BEAT
        ),
        Scenario("heartbeat", "run finished too soon", "worker", _short_run, A_RETRIED_BEAT),
        Scenario("heartbeat", "disarm", "worker", _disarm, A_RETRIED_BEAT),
    ],
    "heartbeat_batch": [
        Scenario(
            "heartbeat_batch", variant, "worker", _batch_of(prepare), A_RETRIED_BEAT, run=_batched
        )
        for variant, prepare in (
            ("first beats, timer queue", _arm),
            ("first beats, Scheduler", _arm_long),
            ("steady beats", _steady),
            ("late beats run the expiries", _late),
            ("disarms", _disarm),
        )
    ],
    "resume_packet": [Scenario("resume_packet", "armed", "worker", _resume)],
    "list_switches": [Scenario("list_switches", "one armed", "operator", _one_armed)],
    "list_deaths": [Scenario("list_deaths", "one recorded", "operator", _one_died)],
    "pause_switches": [
        Scenario("pause_switches", "a scope's switch, until a time", "operator", _pause)
    ],
    "resume_switches": [Scenario("resume_switches", "by id", "operator", _resume_pause)],
    "list_pauses": [Scenario("list_pauses", "one in force", "operator", _pauses)],
    "post_instruction": [Scenario("post_instruction", "to a live session", "operator", _session)],
    "end_session": [Scenario("end_session", "a live session", "worker", _ended)],
    "start_run": [Scenario("start_run", "named run", "worker", _start)],
    "claim_run": [Scenario("claim_run", "lapsed, by another worker", "watcher", _lapsed)],
    "create_run_heartbeat": [
        Scenario("create_run_heartbeat", "held", "worker", _running, A_RENEWAL_RETRIED)
    ],
    "finish_run": [Scenario("finish_run", "held", "worker", _finish)],
    "list_instructions": [Scenario("list_instructions", "one posted", "operator", _instructed)],
    "list_sessions": [Scenario("list_sessions", "one live", "operator", _sessions)],
    "get_run": [
        Scenario("get_run", "running", "worker", lambda world: {"run_id": _started(world)})
    ],
    "create_channel": [
        Scenario("create_channel", "a webhook", "operator", _new_channel),
        Scenario(
            "create_channel",
            "a Slack webhook",
            "operator",
            lambda world: _new_channel(world, "slack"),
        ),
    ],
    "list_channels": [
        Scenario("list_channels", "one webhook", "operator", lambda w: _channel(w) and {})
    ],
    "rotate_channel_secret": [
        Scenario("rotate_channel_secret", "a webhook's", "operator", _rotate_channel)
    ],
    "set_channel_state": [
        Scenario("set_channel_state", "disable a webhook", "operator", _disable_channel)
    ],
    "delete_channel": [Scenario("delete_channel", "a webhook", "operator", _delete_channel)],
    "test_channel": [
        Scenario(
            "test_channel",
            "a webhook",
            "operator",
            lambda w: {"id": _channel(w)},
            audits_each_attempt=True,
        )
    ],
    "session_heartbeat": [
        Scenario("session_heartbeat", "a new session", "worker", _first_beat, settle=_beat_on)
    ],
    "acknowledge_alert": [Scenario("acknowledge_alert", "a switch's alert", "operator", _alert)],
    "list_delivery_failures": [
        Scenario(
            "list_delivery_failures", "none yet", "operator", lambda w: {"channel_id": _channel(w)}
        )
    ],
    "replay_delivery": [
        Scenario("replay_delivery", "a failed webhook delivery", "operator", _failed_delivery)
    ],
}

ALARM_SCENARIOS = [
    Scenario(
        "alarm",
        "a blocking request expires",
        "operator",
        _overdue_request,
        run=deliver_request_timer,
        typed_errors=False,
        compare_result=False,
    ),
    Scenario(
        "alarm",
        "expiry with all three actions",
        "operator",
        _overdue_timer,
        run=deliver_timer,
        typed_errors=False,
        compare_result=False,
    ),
    Scenario(
        "alarm",
        "deadline moved by beats (re-arms)",
        "operator",
        _beaten_timer,
        run=deliver_timer,
        typed_errors=False,
        compare_result=False,
    ),
    Scenario(
        "alarm",
        "past its deadline, held by a pause",
        "operator",
        _held_timer,
        run=deliver_timer,
        typed_errors=False,
        compare_result=False,
    ),
    Scenario(
        "alarm",
        "past its deadline after a pause, its grace",
        "operator",
        _graced_timer,
        run=deliver_timer,
        typed_errors=False,
        compare_result=False,
    ),
]


def scenarios_for(tool: Tool) -> list[Scenario]:
    known = SCENARIOS.get(tool.name)
    if known:
        return known
    caller = "worker" if tool.admits("agent", "worker") else "operator"
    return [
        Scenario(
            tool.name,
            "arguments from its input schema",
            caller,
            lambda world: keyed(world, tool.name, example(tool.input_schema(), hints(world))),
            generic=True,
        )
    ]


def every_scenario(mutating_only: bool = False) -> list[Scenario]:
    return [
        scenario
        for tool in catalog.tools()
        if not (mutating_only and tool.read_only)
        for scenario in scenarios_for(tool)
    ]


# -- arguments from a JSON schema -------------------------------------------------------------
def hints(world: World) -> list[str]:
    """Strings worth trying first against a pattern: real ids and addresses of this world."""
    return [
        world.ids["worker"],
        world.address("worker"),
        world.address("watcher"),
        world.unique("thing"),
        "a",
        f"lock-{LOCK_SECONDS}",
    ]


def example(schema: dict[str, Any], candidates: list[str]) -> Any:
    """A small deterministic instance of ``schema``: required properties only, the first
    candidate string that fits a pattern and its bounds, defaults and minimums for numbers."""
    definitions = schema.get("$defs", {})

    def build(node: dict[str, Any]) -> Any:
        if "$ref" in node:
            return build(definitions[node["$ref"].rsplit("/", 1)[-1]])
        if "const" in node:
            return node["const"]
        if "enum" in node:
            return node["enum"][0]
        for union in ("anyOf", "oneOf"):
            if union in node:
                options = [o for o in node[union] if o.get("type") != "null"]
                return build(options[0])
        if "allOf" in node:
            return build(node["allOf"][0])
        kind = node.get("type")
        if kind == "object":
            properties = node.get("properties", {})
            return {name: build(properties[name]) for name in node.get("required", [])}
        if kind == "array":
            return [build(node.get("items", {})) for _ in range(node.get("minItems", 0))]
        if kind in ("integer", "number"):
            if "default" in node:
                return node["default"]
            low = node.get("minimum", node.get("exclusiveMinimum", 0) + 1)
            return max(low, 1) if "maximum" not in node else min(max(low, 1), node["maximum"])
        if kind == "boolean":
            return False
        if kind == "string":
            return _string(node, candidates)
        return None

    return build(schema)


def _string(node: dict[str, Any], candidates: list[str]) -> str:
    low, high = node.get("minLength", 1), node.get("maxLength", 200)
    pattern = node.get("pattern")
    for candidate in [*candidates, "x" * low]:
        if not low <= len(candidate) <= high:
            continue
        if pattern is None or re.search(pattern, candidate):
            return candidate
    return "x" * max(low, 1)
