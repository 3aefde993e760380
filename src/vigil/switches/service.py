"""The dead-man switch's engine: beating, the expiry its alarms drive, and the death's actions.

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

from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from vigil.alarms.timers import Alarms, Timer
from vigil.clock import Clock, iso, to_ms
from vigil.errors import ErrorCode, VigilError, forbidden, not_found
from vigil.identity.records import Caller
from vigil.kit.retry import retry_on_conflict
from vigil.kit.uow import ConditionFailed, UnitOfWork
from vigil.leases.records import Lease
from vigil.leases.service import release
from vigil.mailboxes.queues import MailboxQueues
from vigil.mailboxes.records import SYSTEM_SENDER, Envelope, envelope_id_for
from vigil.mailboxes.service import deliver, require_registered
from vigil.observability import get_logger, log_event
from vigil.progress.records import ProgressReport
from vigil.store import Store
from vigil.switches.records import Action, Beat, Death, HeldLease, PublicState, Switch

log = get_logger("vigil.switches")

TIMER_KIND = "switch"
# How many beats of a generation armed after a death repeat that death in their result.
REPEAT_DEATH_BEATS = 3
# Each action of a death may lose a race to a concurrent run of the same death this often.
_RECORD_ATTEMPTS = 5


class Resumption(NamedTuple):
    """What a successor needs to pick a scope up."""

    switch: Switch
    death: Death | None  # the scope's most recent death, of any generation
    held_leases: list[Lease]  # the scope's leases held now
    last_progress: ProgressReport | None

    @property
    def state(self) -> PublicState:
        current = self.death
        if current is not None and current.generation != self.switch.generation:
            current = None
        return self.switch.public_state(current)


def timer_for(switch: Switch, due_at: datetime) -> Timer:
    return Timer(
        kind=TIMER_KIND,
        namespace=switch.namespace,
        key=switch.scope,
        generation=switch.generation,
        due_at=due_at,
    )


@dataclass
class Liveness:
    store: Store
    clock: Clock
    alarms: Alarms
    queues: MailboxQueues

    # -- beating ---------------------------------------------------------------------------
    def beat(
        self, caller: Caller, scope: str, beat: Beat, disarm: bool
    ) -> tuple[Switch, Death | None]:
        """Beats (or disarms) ``caller``'s switch of ``scope``; returns the switch and the
        death to report with it, if any."""
        namespace, me = caller.namespace, caller.principal_id
        if not disarm:
            beaten = self.store.beat_switch(namespace, scope, me, beat)
            if beaten is not None:
                return beaten, self.repeated_death(beaten)
        if beat.notify_address is not None:
            require_registered(self.store, namespace, beat.notify_address)
        return retry_on_conflict(lambda: self._slow_beat(caller, scope, beat, disarm), "the switch")

    def _slow_beat(
        self, caller: Caller, scope: str, beat: Beat, disarm: bool
    ) -> tuple[Switch, Death | None]:
        namespace, me = caller.namespace, caller.principal_id
        now = beat.at
        switch = self.store.get_switch(namespace, scope)
        death: Death | None = None
        if switch is not None and switch.state == "armed":
            if switch.overdue(now):
                # Late: the deadline passed before this beat. The death is a fact; record it
                # and run its actions, exactly as the alarm would, before anything else.
                death = self.expire(switch, now)
                switch = self.store.get_switch(namespace, scope)
                assert switch is not None
            elif switch.holder != me and not (disarm and caller.is_operator):
                raise forbidden("this scope's switch is armed by another principal")
        if switch is not None and switch.state == "fired":
            death = death or self.store.get_death(namespace, scope, switch.generation)
            if death is not None and death.pending():
                death = self.finish(death)

        if disarm:
            if switch is None:
                raise not_found("switch")
            if switch.state == "armed":
                disarmed = switch.disarmed()
                self._save(disarmed, switch.version)
                switch = disarmed
            return switch, death

        if switch is not None and switch.state == "armed":
            # Armed by the caller and in time, but the fast path refused: the notify address
            # changed, or the window shrank so that the armed alarm would come after the new
            # deadline. Then an earlier alarm is armed first; the later one finds itself stale.
            alarm_due = switch.alarm_due
            if alarm_due > beat.deadline:
                self.alarms.arm(timer_for(switch, beat.deadline), now)
                alarm_due = beat.deadline
            updated = switch.beaten(beat, alarm_due)
            self._save(updated, switch.version)
            return updated, self.repeated_death(updated)

        armed = Switch.armed_after(switch, death, beat, namespace, scope, me)
        self.alarms.arm(timer_for(armed, armed.deadline), now)
        self._save(armed, switch.version if switch is not None else None)
        return armed, death

    def _save(self, switch: Switch, expected_version: int | None) -> None:
        UnitOfWork(self.store).commit(self.store.save_switch(switch, expected_version))

    def repeated_death(self, switch: Switch) -> Death | None:
        """The death this generation followed, on its first beats only: the answer that first
        reported it may have been lost. Later beats cost no read."""
        if switch.follows_death is None or switch.beats > REPEAT_DEATH_BEATS:
            return None
        return self.store.get_death(switch.namespace, switch.scope, switch.follows_death)

    def resume(self, namespace: str, scope: str) -> Resumption:
        switch = self.store.get_switch(namespace, scope)
        if switch is None:
            raise not_found("scope")
        now = self.clock.now()
        return Resumption(
            switch=switch,
            death=self.store.latest_death(namespace, scope),
            held_leases=[
                lease for lease in self.store.scope_leases(namespace, scope) if lease.live(now)
            ],
            # The scope's latest report; failing that, the latest of the switch's holder.
            last_progress=self.store.scope_progress(namespace, scope)
            or self.store.latest_progress(namespace, switch.holder),
        )

    # -- the expiry ------------------------------------------------------------------------
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
        death = switch.death(plan, to_ms(now))
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
        for _ in range(_RECORD_ATTEMPTS * len(death.actions) + 1):
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
        released, skipped = [], []
        for held in death.to_release:
            try:
                release(
                    self.store,
                    UnitOfWork(self.store),
                    death.namespace,
                    held.resource,
                    held.generation,
                    death.holder,
                    released_by=f"expiry:{death.scope}",
                    now=self.clock.now(),
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
        assert death.notify_address is not None
        release_outcome = death.done.get("release_leases")
        envelope = Envelope(
            # Derived from the death, so a resend after a crash is the same envelope, which the
            # mailbox hands out once.
            id=envelope_id_for(f"{death.namespace}/{death.scope}/{death.generation}"),
            namespace=death.namespace,
            address=death.notify_address,
            sender=SYSTEM_SENDER,
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
                "released": release_outcome["released"] if release_outcome else None,
                "blind_spot": release_outcome["blind_spot"] if release_outcome else None,
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

    # -- alarms ----------------------------------------------------------------------------
    def on_timer(self, timer: Timer) -> None:
        """The alarm function's handler for switch timers."""
        now = self.clock.now()
        switch = self.store.get_switch(timer.namespace, timer.key)
        if switch is not None and switch.generation == timer.generation and switch.state == "armed":
            if switch.overdue(now):
                self.expire(switch, now)
            elif switch.alarm_due == timer.due_at:
                # Beats moved the deadline: arm the next alarm, then record it. Arming first
                # means a crash leaves a duplicate alarm at worst, never none.
                self.alarms.arm(timer.model_copy(update={"due_at": switch.deadline}), now)
                self.store.move_alarm(
                    switch.alarm_moved(switch.deadline), previous_due=timer.due_at
                )
            return
        death = self.store.get_death(timer.namespace, timer.key, timer.generation)
        if death is not None and death.pending():
            self.finish(death)
