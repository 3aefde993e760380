"""Harness worlds: the in-memory ``World`` of tests/liveness_support.py with a cast of principals
in two namespaces, exact snapshots of everything it keeps, and the views of a snapshot that the
boundary checks compare."""

from __future__ import annotations

import copy
import json
import pickle
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from tests.harness.probe import Doors, Outcome, assert_published
from tests.liveness_support import World
from tests.support import TEST_KEYS
from vigil.clock import ManualClock
from vigil.identity.records import Namespace, Principal, hash_secret, issue_secret, parse_secret
from vigil.kit.principals import Kind, Role, new_principal_id
from vigil.mailboxes.records import parse_address, queue_name
from vigil.notifications.outbound import SendResult
from vigil.notifications.sending import Sender

_GONE = object()
HOME = "acme"  # the namespace of World's tenant
ABROAD = "globex"


@dataclass
class Actor:
    label: str
    namespace: str
    principal_id: str
    secret: str
    role: Role
    kind: Kind


class Cast:
    """Who calls: at home an operator (a person), a worker agent that makes things and a peer
    agent that must not reach them; abroad an operator and a worker agent. Plus credentials that
    must all fail the same way."""

    def __init__(self, world: World) -> None:
        tenant = world.tenant
        self.operator = Actor(
            "operator", HOME, tenant.operator.id, tenant.operator_secret, "operator", "person"
        )
        self._world = world
        self.worker = self._principal(HOME, "worker", "worker", "agent")
        self.peer = self._principal(HOME, "peer", "worker", "agent")
        revoked = self._principal(HOME, "revoked", "worker", "agent")
        self._update(revoked, status="revoked")
        rotated = self._principal(HOME, "rotated", "worker", "agent")
        self._update(rotated, secret_hash=hash_secret(issue_secret(HOME, rotated.principal_id)))
        world.store.commit(
            [world.store.add_namespace(Namespace(name=ABROAD, created_at=world.clock.now()))]
        )
        self.abroad_operator = self._principal(ABROAD, "abroad operator", "operator", "person")
        self.abroad_worker = self._principal(ABROAD, "abroad worker", "worker", "agent")
        operator = self.operator
        random_part = operator.secret.rsplit(".", 1)[1]
        self.bad_credentials: dict[str, str | None] = {
            "none": None,
            "empty": "",
            "not a secret": "hello",
            "only the prefix": "vgl.",
            "revoked": revoked.secret,
            "rotated away": rotated.secret,
            "forged random part": f"vgl.{HOME}.{operator.principal_id}.{'A' * 43}",
            "truncated": operator.secret[:-1],
            "extended": operator.secret + "A",
            "case changed": operator.secret[:-43] + random_part.swapcase(),
            "another namespace": f"vgl.{ABROAD}.{operator.principal_id}.{random_part}",
            "unknown namespace": f"vgl.nowhere.{operator.principal_id}.{random_part}",
            "unknown principal": f"vgl.{HOME}.per_{'a' * 16}.{random_part}",
            "huge": "vgl." + "A" * 100_000,
        }

    def _principal(self, namespace: str, name: str, role: Role, kind: Kind) -> Actor:
        principal_id = new_principal_id(kind)
        secret = issue_secret(namespace, principal_id)
        now = self._world.clock.now()
        self._world.store.commit(
            [
                self._world.store.add_principal(
                    Principal(
                        namespace=namespace,
                        id=principal_id,
                        kind=kind,
                        name=name,
                        role=role,
                        status="active",
                        secret_hash=hash_secret(secret),
                        created_at=now,
                        updated_at=now,
                        created_by=None,
                        version=1,
                    )
                )
            ]
        )
        return Actor(name, namespace, principal_id, secret, role, kind)

    def _update(self, actor: Actor, **changes: Any) -> None:
        store = self._world.store
        current = store.get_principal(actor.namespace, actor.principal_id)
        assert current is not None
        store.commit(
            [
                store.save_principal(
                    current.model_copy(update={**changes, "version": current.version + 1})
                )
            ]
        )

    @property
    def actors(self) -> list[Actor]:
        return [self.operator, self.worker, self.peer, self.abroad_operator, self.abroad_worker]

    def absorb(self, result: Any) -> None:
        absorb(self.actors, result)


def absorb(actors: list[Actor], result: Any) -> None:
    """A result that issues a new secret to one of ``actors`` (a rotation) replaces theirs."""
    for text in strings_in(result):
        parsed = parse_secret(text)
        for actor in actors:
            if parsed == (actor.namespace, actor.principal_id):
                actor.secret = text


def strings_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings_in(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings_in(v)]
    return []


def _refused(url: str, body: bytes, headers: Any, **options: Any) -> SendResult:
    return SendResult("rejected", 400, "HTTP 400: refused by the harness's receivers")


class HarnessWorld:
    def __init__(self, clock: ManualClock | None = None) -> None:
        self.clock = clock or ManualClock()
        self.world = World(self.clock)
        # As on the local runtime, a channel's URL may be http://; and every receiver refuses
        # what it is sent, so each channel's failure log has something to list and replay.
        self.world.use_sender(
            Sender(keys=TEST_KEYS, clock=self.clock, allow_private=True, post=_refused)
        )
        self.store = self.world.store
        self.doors = Doors(self.world.app)
        self.cast = Cast(self.world)

    def call(self, door: str, tool: str, arguments: Any, caller: Actor | str | None) -> Outcome:
        bearer = caller.secret if isinstance(caller, Actor) else caller
        outcome = self.doors.call(door, tool, arguments, bearer)
        if outcome.ok:
            assert outcome.result is not None
            assert_published(tool, outcome.result)
            self.cast.absorb(outcome.result)
        return outcome

    def advance_past_alarms(self, longest: float = 600) -> None:
        """Moves time past every armed alarm (at most ``longest`` seconds) and lets them run."""
        due = [timer.due_at for timer in self.world.alarms.armed]
        if due:
            seconds = (max(due) - self.clock.now()).total_seconds() + 1
            self.world.advance(min(max(seconds, 0), longest))

    def align_clock(self, other: HarnessWorld) -> None:
        self.clock.advance((other.clock.now() - self.clock.now()) / timedelta(seconds=1))

    def snapshot(self) -> dict[str, Any]:
        """Deep copies of every dict the store keeps, the armed alarms and the queues."""
        state = {
            f"store.{name}": copy.deepcopy(value)
            for name, value in vars(self.store).items()
            if isinstance(value, dict)
        }
        state["alarms.armed"] = copy.deepcopy(self.world.alarms.armed)
        state["queues"] = copy.deepcopy(self.world.queues.queues)
        return state

    def restore(self, state: dict[str, Any]) -> None:
        """Puts back a snapshot: every dict of the store, the armed alarms and the queues."""
        for part, value in state.items():
            if part.startswith("store."):
                setattr(self.store, part.removeprefix("store."), copy.deepcopy(value))
        self.world.alarms.armed = copy.deepcopy(state["alarms.armed"])
        self.world.queues.queues = copy.deepcopy(state["queues"])

    def fingerprint(self) -> bytes:
        """A cheap stand-in for a snapshot: equal fingerprints mean equal states."""
        parts = [v for v in vars(self.store).values() if isinstance(v, dict)]
        return pickle.dumps([parts, self.world.alarms.armed, self.world.queues.queues])

    def partition(self, state: dict[str, Any], namespace: str) -> dict[str, Any]:
        """The part of a snapshot that belongs to ``namespace``."""
        addresses = {
            f"agent:{p.id}"
            for p in state.get("store.principals", {}).values()
            if p.namespace == namespace and p.kind == "agent"
        } | {
            m.address for m in state.get("store.mailboxes", {}).values() if m.namespace == namespace
        }
        prefix = self.world.queues.prefix
        queues = {queue_name(prefix, namespace, address) for address in addresses}
        return {
            "store": {
                part: {k: v for k, v in records.items() if _namespace_of(k, v) == namespace}
                for part, records in state.items()
                if part.startswith("store.")
            },
            "alarms": [t for t in state["alarms.armed"] if t.namespace == namespace],
            "queues": {name: q for name, q in state["queues"].items() if name in queues},
        }


def _namespace_of(key: Any, value: Any) -> str | None:
    found = getattr(value, "namespace", None)
    if isinstance(found, str):
        return found
    if isinstance(key, tuple) and key and isinstance(key[0], str):
        return key[0]
    return key if isinstance(key, str) else None


class Unchanged:
    """Watches a world that a run of calls must leave exactly as it was: each call is checked
    by fingerprint, and by the full snapshot whenever the fingerprint moved."""

    def __init__(self, world: HarnessWorld) -> None:
        self.world = world
        self.before = world.snapshot()
        self._fingerprint = world.fingerprint()

    def moved(self) -> list[str]:
        """What changed since the start, or nothing."""
        if self.world.fingerprint() == self._fingerprint:
            return []
        now = self.world.snapshot()
        if now == self.before:
            self._fingerprint = self.world.fingerprint()
            return []
        return changes(self.before, now)


def changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What differs between two snapshots, named part and key, for assertion messages."""
    found: list[str] = []
    for part in sorted(set(before) | set(after)):
        old, new = before.get(part), after.get(part)
        if old == new:
            continue
        if isinstance(old, dict) and isinstance(new, dict):
            keys = {k for k in set(old) | set(new) if old.get(k, _GONE) != new.get(k, _GONE)}
            found += [f"{part}[{k!r}]" for k in sorted(keys, key=repr)]
        else:
            found.append(part)
    return found


def owner_of(record: Any) -> str | None:
    """The principal a record is private to: a principal itself, or whoever its ``owner`` or
    ``principal_id`` names. Leases, switches and runs name a ``holder`` instead: they belong to
    the namespace and are fenced by a generation, so a peer may take one that has lapsed."""
    if isinstance(record, Principal):
        return record.id
    for field in ("owner", "principal_id"):
        value = getattr(record, field, None)
        if isinstance(value, str):
            return value
    return None


def private_changes(before: dict[str, Any], after: dict[str, Any], actor: Actor) -> list[str]:
    """Records private to someone other than ``actor`` that changed, and envelopes waiting in
    someone else's mailbox that were taken or touched."""
    found: list[str] = []
    for part in before:
        if not part.startswith("store."):
            continue
        old, new = before[part], after.get(part, {})
        for key in set(old) | set(new):
            if old.get(key, _GONE) == new.get(key, _GONE):
                continue
            owner = owner_of(old.get(key)) or owner_of(new.get(key))
            if owner is not None and owner != actor.principal_id:
                found.append(f"{part}[{key!r}] of {owner}")
    for name, queue in before["queues"].items():
        kept = after["queues"].get(name)
        for message in queue.messages:
            recipient = parse_address(json.loads(message.body).get("address", ""))
            owner = recipient[0] if recipient else None
            untouched = kept is not None and message in kept.messages
            if not untouched and owner != actor.principal_id:
                found.append(f"queue {name}: message {message.message_id} of {owner}")
    return found


# Identifiers a server issues: principal ids, envelope ids and the like, and UUIDs.
ISSUED = re.compile(
    r"\b[a-z]{3}_[A-Za-z0-9_]{8,}\b|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
)
# Secrets a server issues: principals' (vgl.…) and webhook signing secrets (whsec_…).
_SECRETS = r"vgl\.[A-Za-z0-9._-]+|whsec_[A-Za-z0-9+/]+=*"
_IDENTIFIERS = re.compile(_SECRETS + "|" + ISSUED.pattern)


def normalized(value: Any) -> Any:
    """``value`` with what is random per world made equal: generated ids and secrets become
    ``<id>``, cursors (which may encode them) ``<cursor>``, and lists are sorted, since ids
    order them. Two worlds that did the same things then compare equal."""
    if isinstance(value, str):
        return _IDENTIFIERS.sub("<id>", value)
    if isinstance(value, dict):
        return {
            k: "<cursor>" if "cursor" in k.lower() and isinstance(v, str) else normalized(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return sorted((normalized(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    return value


def seen(outcome: Outcome) -> Any:
    """What a caller learns from an outcome, normalized."""
    if outcome.rpc_error is not None:
        return {"rpc_error": outcome.rpc_error}
    return normalized(outcome.result if outcome.ok else {"error": outcome.error})
