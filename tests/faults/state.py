"""What was stored, reduced to what must come out the same after a fault and its retries, and
the invariants that must hold whatever happened.

Reduction: DynamoDB attributes become plain values and JSON documents are parsed; timestamps,
tokens, receipt handles, SQS message ids, secret hashes, fingerprints, sealed handovers, what a
channel keeps sealed and its signing secrets are masked (they differ between two runs of the
same thing), and so are presigned forms' policies and signatures; principal ids and other
generated ids become the names the scenario gave them, and the envelope ids of a message's
recipients the message and recipient they are derived from; queue names become the mailbox
they serve; a queue's messages become the set of distinct bodies (SQS delivers at least once, so
a second copy of one message is allowed: what is handed out is checked by draining, not by
counting copies). Every recipient of every stored message must have received its envelope
exactly once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tests.faults.world import ID, NAMESPACE, PREFIX, TIMER_QUEUE, Snapshot, World
from vigil.conversations.records import Message
from vigil.conversations.service import envelope_of
from vigil.kit.principals import kind_of
from vigil.mailboxes.records import queue_name
from vigil.requests.records import Request
from vigil.requests.service import response_envelope_id
from vigil.switches.records import Death

VOLATILE = frozenset(
    {
        "ttl",
        "deadline",
        "token",
        "secret",
        "secret_hash",
        "receipt_handle",
        "message_id",
        "fingerprint",
        "handover",
        # Sealed with a random salt and nonce, and a signing secret is random: two runs differ.
        "sealed",
        "sealed_target",
        "signing_secret",
        "lateness_seconds",
        "held_until",
        # A presigned form's policy and signature carry its expiry and key: two runs differ.
        "policy",
        "signature",
    }
)
_VOLATILE_SUFFIXES = ("_at", "_until", "_due")
_ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}")
# An audit event's sort key begins with its time in epoch milliseconds.
_TIME_POSITION = re.compile(r"^\d{15}#")
_JSON_ATTRIBUTES = frozenset({"doc", "result"})
_SCHEDULE_DUE = re.compile(r"-\d+$")
_SCHEDULE_DIGEST = re.compile(r"-[0-9a-f]{32}-")
_ENVELOPE = re.compile(r"\benv_[a-z2-7]{26}\b")


def plain(attribute: dict[str, Any]) -> Any:
    ((kind, value),) = attribute.items()
    if kind == "N":
        number = float(value)
        return int(number) if number.is_integer() else number
    if kind == "L":
        return [plain(v) for v in value]
    if kind == "M":
        return {k: plain(v) for k, v in value.items()}
    if kind == "NULL":
        return None
    return value


def item_view(item: dict[str, Any]) -> dict[str, Any]:
    view = {}
    for name, attribute in item.items():
        value = plain(attribute)
        view[name] = json.loads(value) if name in _JSON_ATTRIBUTES else value
    return view


@dataclass(frozen=True)
class Masker:
    labels: dict[str, str]
    tolerate: frozenset[str] = frozenset()
    aliases: dict[str, str] = field(default_factory=dict)  # whole strings: queue names
    envelopes: dict[str, str] = field(default_factory=dict)  # envelope ids named by what they carry

    def volatile(self, key: str) -> bool:
        return key in VOLATILE or key in self.tolerate or key.endswith(_VOLATILE_SUFFIXES)

    def __call__(self, value: Any) -> Any:
        if isinstance(value, dict):
            # Keys may be ids too (a notification's deliveries by channel), and a map's
            # entries may hold documents of their own.
            return {
                self(k): "<volatile>" if self.volatile(k) else self(_document(k, v))
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, str):
            value = self.aliases.get(value, value)
            if _ISO_TIME.match(value):
                return "<time>"
            value = _TIME_POSITION.sub("<time>#", value)
            value = _ENVELOPE.sub(lambda m: self.envelopes.get(m.group(), m.group()), value)
            return ID.sub(lambda m: self.labels.get(m.group(), "?id"), value)
        return value


def _document(name: str, value: Any) -> Any:
    return json.loads(value) if name in _JSON_ATTRIBUTES and isinstance(value, str) else value


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class State:
    items: tuple[str, ...]
    queues: tuple[tuple[str, tuple[str, ...]], ...]
    schedules: tuple[str, ...]


def queue_labels(world: World, items: Iterable[dict[str, Any]]) -> dict[str, str]:
    addresses = {world.address(label) for label, kind in world.kinds.items() if kind == "agent"}
    addresses |= {
        view["sk"].removeprefix("MAILBOX#")
        for view in items
        if str(view.get("sk", "")).startswith("MAILBOX#")
    }
    labels = {TIMER_QUEUE: "timers"}
    for address in addresses:
        name = queue_name(PREFIX, NAMESPACE, address)
        labels[name] = f"mailbox {address}"
        labels[name + "-dlq"] = f"mailbox {address} (dead letters)"
    return labels


def _body(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def message_envelopes(views: Iterable[dict[str, Any]]) -> dict[str, str]:
    """The envelope each stored message owes each of its recipients, by id, named by the
    message and the recipient: their ids are derived from random message ids, so two runs of a
    scenario give them different ids for the same thing."""
    found = {}
    for view in views:
        if str(view.get("sk", "")).startswith("MSG#"):
            message = Message.model_validate({**view["doc"], "delivered": view["delivered"]})
            for recipient in message.recipients:
                envelope = envelope_of(message, recipient)
                found[envelope.id] = f"<envelope of {message.id} for {recipient}>"
        elif view.get("sk") == "REQ":
            # A final request owes its requester, if an agent, one response envelope.
            request = Request.model_validate(
                {**view["doc"], "version": view["version"], "state": view["state"]}
            )
            if request.response is not None and kind_of(request.requester) == "agent":
                found[response_envelope_id(request)] = f"<response of {request.id}>"
    return found


_QUOTA_SHARD = re.compile(r"^(NS#[^#]+)#QUOTAS#\d+$")


def _quota_shards_summed(views: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The views with a namespace's quota shards as one item of their sums: a decrease goes to
    the shard its key hashes to, and the key may be a generated id (a request's), so two runs
    spread the same decreases differently; what they must agree on is the sums."""
    kept, sums = [], {}
    for view in views:
        found = _QUOTA_SHARD.match(str(view.get("pk", "")))
        if found is None:
            kept.append(view)
            continue
        summed = sums.setdefault(found[1], {"pk": f"{found[1]}#QUOTAS#<shards>", "sk": "QUOTAS"})
        for name, value in view.items():
            if name not in ("pk", "sk"):
                summed[name] = summed.get(name, 0) + value
    return kept + [
        {k: v for k, v in s.items() if v != 0 or k in ("pk", "sk")} for s in sums.values()
    ]


def canonical(snapshot: Snapshot, world: World, tolerate: frozenset[str]) -> State:
    views = _quota_shards_summed([item_view(item) for item in snapshot.items])
    names = queue_labels(world, views)
    mask = Masker(dict(world.labels), tolerate, names, message_envelopes(views))
    queues = {
        mask(names.get(name, name)): tuple(sorted({_dumps(mask(_body(b))) for b in bodies}))
        for name, bodies in snapshot.queues.items()
    }
    schedules = {_dumps(_schedule(schedule, mask)) for schedule in snapshot.schedules}
    return State(
        items=tuple(sorted(_dumps(mask(view)) for view in views)),
        queues=tuple(sorted(queues.items())),
        schedules=tuple(sorted(schedules)),
    )


def _schedule(schedule: dict[str, Any], mask: Masker) -> dict[str, Any]:
    """A schedule as two runs can compare it: its name is derived from its timer's key, which
    may be a generated id (a request's), so the digest in it is named by the masked key."""
    timer = mask(_body(schedule["input"]))
    name = _SCHEDULE_DUE.sub("-<due>", schedule["name"])
    name = _SCHEDULE_DIGEST.sub(f"-<digest of {timer.get('key')}>-", name)
    return {"name": name, "input": timer}


def differences(expected: State, found: State, counted: bool = True) -> list[str]:
    """What ``found`` holds that ``expected`` does not, and the reverse; the number of alike
    items too, unless not ``counted``."""
    problems = []
    for what, want, got in (
        ("item", expected.items, found.items),
        ("schedule", expected.schedules, found.schedules),
    ):
        problems += [f"missing {what}: {line}" for line in sorted(set(want) - set(got))]
        problems += [f"extra {what}: {line}" for line in sorted(set(got) - set(want))]
        if counted and len(want) != len(got) and set(want) == set(got):
            problems.append(f"{what}s: {len(got)} where a clean run stores {len(want)}")
    want_queues, got_queues = dict(expected.queues), dict(found.queues)
    for name in sorted(set(want_queues) | set(got_queues)):
        if name not in got_queues:
            problems.append(f"missing queue: {name}")
        elif name not in want_queues:
            problems.append(f"extra queue: {name}")
        elif want_queues[name] != got_queues[name]:
            missing = sorted(set(want_queues[name]) - set(got_queues[name]))
            extra = sorted(set(got_queues[name]) - set(want_queues[name]))
            problems.append(f"queue {name}: missing {missing}, extra {extra}")
    return problems


# -- invariants ---------------------------------------------------------------------------------
def invariants(snapshot: Snapshot, world: World) -> list[str]:
    """Domain rules that hold after any fault, once retries and the drain are done."""
    views = {(v["pk"], v["sk"]): v for v in (item_view(i) for i in snapshot.items)}
    problems: list[str] = []
    problems += _leases(views)
    problems += _switches(views, snapshot)
    problems += _records(views, snapshot, world)
    problems += _envelopes(views, snapshot, world)
    mask = Masker(dict(world.labels), envelopes=message_envelopes(views.values()))
    return [mask(p) for p in problems]


def _leases(views: dict[tuple[str, str], dict[str, Any]]) -> list[str]:
    problems = []
    lease_pk = f"NS#{NAMESPACE}#LEASE#"
    scope_pk = f"NS#{NAMESPACE}#SCOPE#"
    for (pk, sk), view in views.items():
        if pk.startswith(lease_pk) and sk == "LEASE":
            name = "LEASE#" + pk.removeprefix(lease_pk)
            doc = view["doc"]
            held = doc["state"] == "held"
            by_holder = held and doc["scope"] is None
            if by_holder != ("gsi1pk" in view):
                problems.append(f"lease {name}: state {doc['state']} but holder index {by_holder=}")
            indexed = doc["scope"] if held else None
            if view.get("scope") != indexed:
                problems.append(f"lease {name}: scope attribute {view.get('scope')!r}, {indexed=}")
            if indexed is not None:
                copy = views.get((scope_pk + indexed, name))
                if copy is None:
                    problems.append(f"lease {name}: held in scope {indexed} without its scope copy")
                elif copy["doc"] != doc:
                    problems.append(f"lease {name}: scope copy differs from the lease")
        elif pk == f"NS#{NAMESPACE}" and sk.startswith("LEASE#"):
            problems.append(f"lease {sk} in the namespace's partition, not its own")
        elif pk.startswith(scope_pk) and sk.startswith("LEASE#"):
            scope = pk.removeprefix(scope_pk)
            lease = views.get((lease_pk + sk.removeprefix("LEASE#"), "LEASE"))
            if lease is None or lease["doc"]["state"] != "held" or lease["doc"]["scope"] != scope:
                problems.append(f"scope copy {scope}/{sk} without a lease held in that scope")
    return problems


def timers(snapshot: Snapshot) -> list[dict[str, Any]]:
    """Every alarm armed: timer-queue messages and schedule inputs."""
    bodies = [_body(b) for b in snapshot.queues.get(TIMER_QUEUE, [])]
    bodies += [_body(s["input"]) for s in snapshot.schedules]
    return [b for b in bodies if isinstance(b, dict)]


def _epoch_ms(text: str) -> int:
    from datetime import datetime

    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def _switches(views: dict[tuple[str, str], dict[str, Any]], snapshot: Snapshot) -> list[str]:
    problems = []
    armed = {
        (t["namespace"], t["key"], t["generation"], _epoch_ms(t["due_at"]))
        for t in timers(snapshot)
        if t.get("kind") == "switch"
    }
    for (pk, sk), view in views.items():
        if sk == "SWITCH":
            scope, generation = view["scope"], view["generation"]
            if view["state"] == "armed":
                wanted = (view["namespace"], scope, generation, view["alarm_due"])
                if wanted not in armed:
                    problems.append(
                        f"switch {scope} armed at generation {generation} without its alarm"
                    )
            if view["state"] == "fired" and (pk, f"DEATH#{generation:012d}") not in views:
                problems.append(f"switch {scope} fired at generation {generation} without a death")
        elif sk.startswith("DEATH#"):
            death = Death.model_validate(view["doc"])
            # Steps may wait (a dependant's death, for what it depends on to be judged), but
            # never without the alarm that goes on with them.
            driven = any(
                key[:3] == (death.namespace, death.scope, death.generation) for key in armed
            )
            if death.pending() and not driven:
                problems.append(f"death of {death.scope}/{death.generation} left {death.pending()}")
    return problems


def _records(
    views: dict[tuple[str, str], dict[str, Any]], snapshot: Snapshot, world: World
) -> list[str]:
    problems = []
    for (pk, sk), view in views.items():
        if pk.startswith("IDEM#") and view["status"] != "completed":
            problems.append(f"idempotency claim {sk} left {view['status']}")
        if sk.startswith("MAILBOX#"):
            name = queue_name(PREFIX, NAMESPACE, sk.removeprefix("MAILBOX#"))
            if name not in snapshot.queues or name + "-dlq" not in snapshot.queues:
                problems.append(f"mailbox {sk} registered without its queue")
        if sk.startswith("DELIVERY#"):
            envelope = sk.removeprefix("DELIVERY#")
            if view["state"] != "acknowledged":
                problems.append(f"delivery {envelope} still {view['state']} after the drain")
            if (pk, f"USAGE#{envelope}") not in views:
                problems.append(f"delivery {envelope} without its usage record")
        if sk.startswith("USAGE#") and (pk, "DELIVERY#" + sk.removeprefix("USAGE#")) not in views:
            problems.append(f"usage {sk} without a delivery")
    for name, bodies in snapshot.queues.items():
        if name.startswith(PREFIX) and bodies:
            problems.append(f"{len(bodies)} message(s) left in {name} after the drain")
    return problems


def _envelopes(
    views: dict[tuple[str, str], dict[str, Any]], snapshot: Snapshot, world: World
) -> list[str]:
    alerts = set()
    for (_, sk), view in views.items():
        if sk.startswith("DEATH#"):
            done = view["doc"]["done"]
            alert = done.get("queue_alert") or {}
            # And the recovery envelope that follows the alert once the switch beats again.
            recovery = (done.get("recovered") or {}).get("envelope") or {}
            alerts |= {e["envelope_id"] for e in (alert, recovery) if "envelope_id" in e}
    expected = set(world.sent) | alerts | set(message_envelopes(views.values()))
    acked = set(world.acked)
    problems = [f"envelope {e} acknowledged more than once" for e in world.twice_acknowledged()]
    problems += [f"envelope {e} lost: never received" for e in sorted(expected - acked)]
    problems += [f"envelope {e} received but never sent" for e in sorted(acked - expected)]
    return problems
