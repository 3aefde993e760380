"""The dead-man switch: ``heartbeat``, the expiry path its alarms drive, and ``resume_packet``.

The steady-state beat is one conditional write and touches no alarm. Arming a new generation
sets its alarm first and writes the switch second, so a crash leaves at worst a stray alarm
(which finds nothing to do), never an armed switch without one. When an alarm finds that beats
moved the deadline, it arms the next alarm for the new deadline: one alarm per window, not one
per beat. The expiry is one conditional change (armed at generation g with a deadline at or
before now → fired) that also creates the death record; only the caller that wins it has a
death to run, and each action is recorded as done as it completes, so a repeated or late alarm
finishes what is missing and repeats nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from vigil.clock import Clock, iso, to_ms
from vigil.domain.leases import Lease
from vigil.domain.progress import ProgressReport
from vigil.domain.switches import (
    MAX_WINDOW_SECONDS,
    MIN_WINDOW_SECONDS,
    Action,
    Death,
    HeldLease,
    Switch,
    ordered,
)
from vigil.errors import ErrorCode, VigilError, conflict, forbidden, not_found
from vigil.observability import get_logger, log_event
from vigil.store import ConditionFailed, Store
from vigil.timers import Alarms, Timer
from vigil.tools.common import Context, Output, Scope, StrictInput

log = get_logger("vigil.switches")

TIMER_KIND = "switch"
_ATTEMPTS = 5
# How many beats of a generation armed after a death repeat that death in their result.
REPEAT_DEATH_BEATS = 3

AddressField = Annotated[
    str,
    Field(
        max_length=100,
        pattern=r"^agent:agt_[a-z2-7]{16}(/[a-z0-9][a-z0-9_-]{0,31})?$",
        description="A registered mailbox address: agent:<id> or agent:<id>/<box>.",
    ),
]


def _default_actions() -> list[Action]:
    return ["mark_failed"]


# -- inputs and outputs -------------------------------------------------------------------
class HeartbeatInput(StrictInput):
    scope: Scope
    expect_within_seconds: int = Field(
        ge=MIN_WINDOW_SECONDS,
        le=MAX_WINDOW_SECONDS,
        description="Beat again within this many seconds (2 to 2,592,000) or the switch fires.",
    )
    on_expiry: list[Action] = Field(
        default_factory=_default_actions,
        max_length=3,
        description=(
            "What happens if the next beat is late, run once and always in the order "
            "release_leases, mark_failed, queue_alert. release_leases reaches only leases taken "
            "with this scope, and reports the holder's other leases as its blind spot."
        ),
    )
    notify_address: AddressField | None = Field(
        default=None, description="Required with queue_alert: the mailbox that gets the alert."
    )
    agent_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description="A label for the beating instance, carried in the alert (e.g. worker-3).",
    )
    disarm: bool = Field(default=False, description="Stop the switch instead of beating it.")
    agent_key: str | None = Field(
        default=None,
        max_length=200,
        description="Your secret, only if your MCP host cannot send an Authorization header.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> HeartbeatInput:
        if len(set(self.on_expiry)) != len(self.on_expiry):
            raise ValueError("on_expiry lists an action twice")
        if "queue_alert" in self.on_expiry and self.notify_address is None:
            raise ValueError("queue_alert needs a notify_address")
        if self.notify_address is not None and "queue_alert" not in self.on_expiry:
            raise ValueError("notify_address is used only with queue_alert")
        return self


class ResumePacketInput(StrictInput):
    scope: Scope
    agent_key: str | None = Field(default=None, max_length=200, description="As for heartbeat.")


class DeathView(Output):
    generation: int
    holder: str
    agent_id: str | None
    deadline: datetime
    fired_at: datetime
    lateness_seconds: float
    actions: list[Action]
    completed: list[Action]
    marked_failed: bool
    released: list[HeldLease] | None = Field(
        description="Leases released by release_leases; null if that action was not chosen."
    )
    blind_spot: dict[str, Any] | None = Field(
        description="What release_leases could not reach: the holder's leases without a scope."
    )
    alert_envelope_id: str | None

    @classmethod
    def of(cls, death: Death) -> DeathView:
        release = death.done.get("release_leases")
        alert = death.done.get("queue_alert")
        return cls(
            generation=death.generation,
            holder=death.holder,
            agent_id=death.agent_id,
            deadline=death.deadline,
            fired_at=death.fired_at,
            lateness_seconds=death.lateness_seconds,
            actions=death.actions,
            completed=[a for a in death.actions if a in death.done],
            marked_failed="mark_failed" in death.done,
            released=[HeldLease(**h) for h in release["released"]] if release else None,
            blind_spot=release["blind_spot"] if release else None,
            alert_envelope_id=alert.get("envelope_id") if alert else None,
        )


State = Literal["armed", "disarmed", "failed", "expired"]


def _state(switch: Switch, death: Death | None) -> State:
    if switch.state != "fired":
        return switch.state
    return "failed" if death is not None and "mark_failed" in death.actions else "expired"


class HeartbeatResult(Output):
    scope: str
    state: State
    generation: int
    deadline: datetime | None = Field(description="When the switch fires unless beaten again.")
    expect_within_seconds: int
    on_expiry: list[Action]
    notify_address: str | None
    agent_id: str | None
    beats: int
    death: DeathView | None = Field(
        description=(
            "Set when this switch had fired before this call: the facts of that death. A beat "
            "after a death arms a new generation, whose first three beats repeat the death in "
            "case an answer was lost; it stays on record in resume_packet."
        )
    )


class LeaseSummary(Output):
    resource: str
    holder: str
    holder_label: str | None
    generation: int
    expires_at: datetime


class ProgressSummary(Output):
    progress: dict[str, Any] = Field(description="As reported: the reporter's data.")
    reported_by: str = Field(description="Principal id whose credential made the report.")
    reported_at: datetime

    @classmethod
    def of(cls, report: ProgressReport) -> ProgressSummary:
        return cls(
            progress=report.progress,
            reported_by=report.reported_by,
            reported_at=report.reported_at,
        )


class ResumePacket(Output):
    scope: str
    state: State
    generation: int
    holder: str
    agent_id: str | None
    armed_at: datetime
    last_beat_at: datetime
    deadline: datetime | None
    expect_within_seconds: int
    on_expiry: list[Action]
    notify_address: str | None
    death: DeathView | None = Field(description="The most recent observed death of this scope.")
    held_leases: list[LeaseSummary] = Field(description="Leases of this scope held right now.")
    last_progress: ProgressSummary | None = Field(
        description=(
            "The latest progress reported for this scope; failing that, the latest report of "
            "the switch's holder; null if there is neither."
        )
    )


# -- the liveness machinery, shared by the tool and the alarm function --------------------
@dataclass
class Liveness:
    store: Store
    clock: Clock
    alarms: Alarms
    queues: Any  # vigil.ports.mailboxes.MailboxQueues; only queue_alert uses it

    def expire(self, switch: Switch, now: datetime) -> Death | None:
        """Fires ``switch`` if it is still armed at its generation and overdue, then runs the
        death's actions. Returns the death (ours or one that another caller recorded), or None
        if a beat or a disarm won."""
        plan: list[HeldLease] = []
        if "release_leases" in switch.on_expiry:
            plan = [
                HeldLease(resource=lease.resource, generation=lease.generation)
                for lease in self.store.scope_leases(switch.namespace, switch.scope)
                if lease.holder == switch.holder and lease.state == "held"
            ]
        death = Death(
            namespace=switch.namespace,
            scope=switch.scope,
            generation=switch.generation,
            holder=switch.holder,
            agent_id=switch.agent_id,
            deadline=switch.deadline,
            fired_at=to_ms(now),
            actions=ordered(switch.on_expiry),
            notify_address=switch.notify_address,
            to_release=plan,
            done={},
            version=1,
        )
        try:
            self.store.fire_switch(switch, death, now)
        except ConditionFailed:
            existing = self.store.get_death(switch.namespace, switch.scope, switch.generation)
            if existing is None:
                return None
            death = existing
        else:
            log_event(
                log,
                "switch fired",
                namespace=switch.namespace,
                scope=switch.scope,
                generation=switch.generation,
                lateness_seconds=death.lateness_seconds,
            )
        return self.finish(death)

    def finish(self, death: Death) -> Death:
        """Runs whatever actions of ``death`` are not recorded as done, in order."""
        for _ in range(_ATTEMPTS * len(death.actions) + 1):
            pending = death.pending()
            if not pending:
                return death
            action = pending[0]
            outcome = self._run(action, death)
            try:
                death = self.store.record_action(death, action, outcome)
            except ConditionFailed:
                fresh = self.store.get_death(death.namespace, death.scope, death.generation)
                assert fresh is not None
                death = fresh
        return death

    def _run(self, action: Action, death: Death) -> dict[str, Any]:
        if action == "release_leases":
            return self._release(death)
        if action == "mark_failed":
            return {"failed_at": iso(death.fired_at)}
        return self._alert(death)

    def _release(self, death: Death) -> dict[str, Any]:
        from vigil.tools.leases import release

        released, skipped = [], []
        for held in death.to_release:
            try:
                release(
                    self.store,
                    self.clock,
                    death.namespace,
                    held.resource,
                    held.generation,
                    death.holder,
                    released_by=f"expiry:{death.scope}",
                )
                released.append(held.model_dump())
            except VigilError as error:
                if error.code is not ErrorCode.STALE_GENERATION:
                    raise
                skipped.append(held.model_dump())  # it lapsed and was granted to someone else
        unscoped = self.store.unscoped_leases_held_by(death.namespace, death.holder)
        return {
            "released": released,
            "already_regranted": skipped,
            "blind_spot": {
                "unscoped_leases_held": unscoped,
                "explanation": (
                    "release_leases reaches only leases taken with this scope; the holder's "
                    "leases without a scope are counted here and left alone"
                ),
            },
        }

    def _alert(self, death: Death) -> dict[str, Any]:
        from vigil.domain.mailboxes import Envelope
        from vigil.tools.mailboxes import deliver

        assert death.notify_address is not None
        release = death.done.get("release_leases")
        identity = f"{death.namespace}/{death.scope}/{death.generation}"
        envelope = Envelope(
            # Derived from the death, so a resend after a crash is the same envelope, which the
            # mailbox hands out once.
            id="env_" + hashlib.sha256(identity.encode()).hexdigest()[:32],
            namespace=death.namespace,
            address=death.notify_address,
            sender="vigil",
            kind="alert",
            payload={
                "event": "switch_fired",
                "scope": death.scope,
                "generation": death.generation,
                "agent_id": death.agent_id,
                "holder": death.holder,
                "deadline": iso(death.deadline),
                "fired_at": iso(death.fired_at),
                "lateness_seconds": death.lateness_seconds,
                "released": release["released"] if release else None,
                "blind_spot": release["blind_spot"] if release else None,
            },
            sent_at=death.fired_at,
        )
        try:
            deliver(
                self.store, self.queues, self.clock, death.namespace, death.notify_address, envelope
            )
        except VigilError as error:
            if error.code is not ErrorCode.NOT_FOUND:
                raise
            return {"undeliverable": "the notify address is no longer registered"}
        return {"envelope_id": envelope.id, "address": death.notify_address}

    def on_timer(self, timer: Timer) -> None:
        """The alarm function's handler for switch timers."""
        now = self.clock.now()
        switch = self.store.get_switch(timer.namespace, timer.key)
        if switch is not None and switch.generation == timer.generation and switch.state == "armed":
            if switch.deadline <= now:
                self.expire(switch, now)
            elif switch.alarm_due == timer.due_at:
                # Beats moved the deadline: arm the next alarm, then record it. Arming first
                # means a crash leaves a duplicate alarm at worst, never none.
                self.alarms.arm(timer.model_copy(update={"due_at": switch.deadline}), now)
                moved = switch.model_copy(update={"alarm_due": switch.deadline})
                self.store.move_alarm(moved, previous_due=timer.due_at)
            return
        death = self.store.get_death(timer.namespace, timer.key, timer.generation)
        if death is not None and death.pending():
            self.finish(death)


def liveness(ctx: Context) -> Liveness:
    assert ctx.alarms is not None, "the switch tools need alarms wired into the App"
    return Liveness(ctx.store, ctx.clock, ctx.alarms, ctx.queues)


# -- heartbeat ----------------------------------------------------------------------------
def heartbeat(ctx: Context, args: HeartbeatInput) -> HeartbeatResult:
    namespace, me = ctx.caller.namespace, ctx.caller.principal_id
    now = to_ms(ctx.clock.now())
    changes = {
        "deadline": now + timedelta(seconds=args.expect_within_seconds),
        "expect_within_seconds": args.expect_within_seconds,
        "on_expiry": ordered(args.on_expiry),
        "agent_id": args.agent_id,
        "last_beat_at": now,
    }
    if not args.disarm:
        beaten = ctx.store.beat_switch(namespace, args.scope, me, args.notify_address, changes, now)
        if beaten is not None:
            return _result(beaten, _repeated_death(ctx, beaten))
    if args.notify_address is not None:
        _check_address(ctx, args.notify_address)
    for _ in range(_ATTEMPTS):
        switch = ctx.store.get_switch(namespace, args.scope)
        try:
            return _slow_beat(ctx, args, switch, changes, now)
        except ConditionFailed:
            continue  # a concurrent beat, disarm or alarm changed the switch: decide again
    raise conflict("the switch is changing concurrently; retry")


def _slow_beat(
    ctx: Context,
    args: HeartbeatInput,
    switch: Switch | None,
    changes: dict[str, Any],
    now: datetime,
) -> HeartbeatResult:
    machinery = liveness(ctx)
    me = ctx.caller.principal_id
    death: Death | None = None
    if switch is not None and switch.state == "armed":
        if switch.deadline <= now:
            # Late: the deadline passed before this beat. The death is a fact; record it and
            # run its actions, exactly as the alarm would, before anything else.
            death = machinery.expire(switch, now)
            switch = ctx.store.get_switch(switch.namespace, switch.scope)
            assert switch is not None
        elif switch.holder != me and not (args.disarm and ctx.caller.is_operator):
            raise forbidden("this scope's switch is armed by another principal")
    if switch is not None and switch.state == "fired":
        death = death or ctx.store.get_death(switch.namespace, switch.scope, switch.generation)
        if death is not None and death.pending():
            death = machinery.finish(death)

    if args.disarm:
        if switch is None:
            raise not_found("switch")
        if switch.state == "armed":
            disarmed = switch.model_copy(
                update={"state": "disarmed", "version": switch.version + 1}
            )
            ctx.store.put_switch(disarmed, expected_version=switch.version)
            switch = disarmed
        return _result(switch, death)

    deadline: datetime = changes["deadline"]
    if switch is not None and switch.state == "armed":
        # Armed by the caller and in time, but the fast path refused: the notify address
        # changed, or the window shrank so that the armed alarm would come after the new
        # deadline. Then an earlier alarm is armed first; the later one finds itself stale.
        alarm_due = switch.alarm_due
        if alarm_due > deadline:
            machinery.alarms.arm(
                _timer(switch.namespace, switch.scope, switch.generation, deadline), now
            )
            alarm_due = deadline
        updated = switch.model_copy(
            update={
                **changes,
                "notify_address": args.notify_address,
                "alarm_due": alarm_due,
                "beats": switch.beats + 1,
                "version": switch.version + 1,
            }
        )
        ctx.store.put_switch(updated, expected_version=switch.version)
        return _result(updated, _repeated_death(ctx, updated))

    generation = switch.generation + 1 if switch is not None else 1
    machinery.alarms.arm(_timer(ctx.caller.namespace, args.scope, generation, deadline), now)
    armed = Switch(
        namespace=ctx.caller.namespace,
        scope=args.scope,
        holder=me,
        agent_id=args.agent_id,
        state="armed",
        generation=generation,
        deadline=deadline,
        expect_within_seconds=args.expect_within_seconds,
        on_expiry=ordered(args.on_expiry),
        notify_address=args.notify_address,
        armed_at=now,
        last_beat_at=now,
        beats=1,
        alarm_due=deadline,
        version=(switch.version + 1) if switch is not None else 1,
        follows_death=death.generation if death is not None else None,
    )
    ctx.store.put_switch(armed, expected_version=switch.version if switch is not None else None)
    return _result(armed, death)


def _timer(namespace: str, scope: str, generation: int, due_at: datetime) -> Timer:
    return Timer(
        kind=TIMER_KIND, namespace=namespace, key=scope, generation=generation, due_at=due_at
    )


def _check_address(ctx: Context, address: str) -> None:
    from vigil.tools.mailboxes import require_registered

    require_registered(ctx.store, ctx.caller.namespace, address)


def _repeated_death(ctx: Context, switch: Switch) -> Death | None:
    """The death this generation followed, on its first beats only: the answer that first
    reported it may have been lost. Later beats cost no read."""
    if switch.follows_death is None or switch.beats > REPEAT_DEATH_BEATS:
        return None
    return ctx.store.get_death(switch.namespace, switch.scope, switch.follows_death)


def _result(switch: Switch, death: Death | None) -> HeartbeatResult:
    return HeartbeatResult(
        scope=switch.scope,
        state=_state(switch, death),
        generation=switch.generation,
        deadline=switch.deadline if switch.state == "armed" else None,
        expect_within_seconds=switch.expect_within_seconds,
        on_expiry=switch.on_expiry,
        notify_address=switch.notify_address,
        agent_id=switch.agent_id,
        beats=switch.beats,
        death=DeathView.of(death) if death is not None else None,
    )


# -- resume_packet ------------------------------------------------------------------------
def resume_packet(ctx: Context, args: ResumePacketInput) -> ResumePacket:
    namespace = ctx.caller.namespace
    switch = ctx.store.get_switch(namespace, args.scope)
    if switch is None:
        raise not_found("scope")
    death = ctx.store.latest_death(namespace, args.scope)
    current_death = death if death is not None and death.generation == switch.generation else None
    now = ctx.clock.now()
    leases: list[Lease] = [
        lease for lease in ctx.store.scope_leases(namespace, args.scope) if lease.live(now)
    ]
    progress = ctx.store.scope_progress(namespace, args.scope) or ctx.store.latest_progress(
        namespace, switch.holder
    )
    return ResumePacket(
        scope=switch.scope,
        state=_state(switch, current_death),
        generation=switch.generation,
        holder=switch.holder,
        agent_id=switch.agent_id,
        armed_at=switch.armed_at,
        last_beat_at=switch.last_beat_at,
        deadline=switch.deadline if switch.state == "armed" else None,
        expect_within_seconds=switch.expect_within_seconds,
        on_expiry=switch.on_expiry,
        notify_address=switch.notify_address,
        death=DeathView.of(death) if death is not None else None,
        held_leases=[
            LeaseSummary(
                resource=lease.resource,
                holder=lease.holder,
                holder_label=lease.holder_label,
                generation=lease.generation,
                expires_at=lease.expires_at,
            )
            for lease in leases
        ],
        last_progress=ProgressSummary.of(progress) if progress is not None else None,
    )
