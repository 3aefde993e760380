"""The dead-man switch's engine: beating, and the expiry its alarms drive.

The steady-state beat is one conditional write and touches no alarm. Arming a new generation
sets its alarm first and writes the switch second, so a crash leaves at worst a stray alarm
(which finds nothing to do), never an armed switch without one. When an alarm finds that beats
moved the deadline, it arms the next alarm for the new deadline: one alarm per window, not one
per beat. The expiry is one conditional change (armed at generation g with a deadline at or
before now → fired) that also creates the death record; only the caller that wins it has a
death to run, and its actions (vigil.switches.deaths) run in bounded steps, a bounded number
per run, the rest in the next alarm.

Only a switch past its deadline reads the namespace's pauses (vigil.switches.pauses): one
query, on the expiry path and a late beat's. Under a pause in force it is held (its alarm comes
back at the pause's end or its next hold check, and a late beat keeps it); once its pauses have
ended it gets its own window from their end, written as its deadline. A beat in time costs what
it did.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, NamedTuple, TypeVar

from vigil.alarms.timers import Alarms, Timer
from vigil.audit.records import AuditEvent
from vigil.clock import Clock, iso, to_ms
from vigil.errors import VigilError, forbidden, invalid, not_found
from vigil.identity.records import Caller
from vigil.kit.batch import offer, read_once, take
from vigil.kit.events import event_id
from vigil.kit.publish import Publish
from vigil.kit.retry import retry_on_conflict
from vigil.kit.uow import ConditionFailed, UnitOfWork, Write
from vigil.leases.records import Lease
from vigil.mailboxes.queues import MailboxQueues
from vigil.mailboxes.records import queue_name
from vigil.mailboxes.service import require_registered
from vigil.observability import get_logger, log_event, metrics
from vigil.progress.records import ProgressReport
from vigil.quotas.records import Quotas
from vigil.switches.deaths import DeathActions
from vigil.switches.records import (
    MAX_DEPENDENCY_DEPTH,
    Beat,
    Death,
    PublicState,
    ReleasedPage,
    Reprieve,
    Switch,
)
from vigil.switches.store import SwitchPorts
from vigil.switches.timers import TIMER_KIND, continuation, timer_for

log = get_logger("vigil.switches")

# How many beats of a generation armed after a death repeat that death in their result.
REPEAT_DEATH_BEATS = 3
# The steps of a death's actions (see DeathActions.finish) one run takes: a late beat takes a
# few, enough for a death with few leases, so that its answer can report the death done; an
# alarm takes more (50 batches: 2,000 leases, a few seconds on DynamoDB, far within the
# function's timeout). What is left goes on in the next alarm.
BEAT_STEPS = 4
ALARM_STEPS = 50
# The leases held now that one resume_packet lists.
HELD_PAGE = 50

S = TypeVar("S", bound=SwitchPorts)


def _dependency_refused(problem: str) -> VigilError:
    return invalid(
        "the arguments do not match the tool's input schema",
        problems=[{"field": "depends_on", "problem": problem}],
    )


class Resumption(NamedTuple):
    """What a successor needs to pick a scope up."""

    switch: Switch
    death: Death | None  # the scope's most recent death, of any generation
    released: ReleasedPage | None  # the page asked for of the leases that death released
    held_leases: list[Lease]  # a page of the scope's leases held now
    held_after: str | None  # where the next page of held leases starts, if there may be one
    last_progress: ProgressReport | None

    @property
    def state(self) -> PublicState:
        current = self.death
        if current is not None and current.generation != self.switch.generation:
            current = None
        return self.switch.public_state(current)


@dataclass(kw_only=True)
class SwitchEngine(Generic[S]):
    """The switches' engine, on ``store``: any store with the switches' ports, kept as the
    type it was given, so that the alarm function runs the other capabilities' timers on the
    very store its engine has."""

    store: S
    clock: Clock
    alarms: Alarms
    queues: MailboxQueues
    publish: Publish
    quotas: Quotas = field(default_factory=Quotas)

    @property
    def deaths(self) -> DeathActions:
        return DeathActions(
            store=self.store,
            clock=self.clock,
            alarms=self.alarms,
            queues=self.queues,
            publish=self.publish,
        )

    # -- beating ---------------------------------------------------------------------------
    def beat(
        self, caller: Caller, scope: str, beat: Beat, disarm: bool, *, uow: UnitOfWork
    ) -> tuple[Switch, Death | None]:
        """Beats (or disarms) ``caller``'s switch of ``scope``; returns the switch and the
        death to report with it, if any. What is not a beat's own conditional write (arming,
        disarming, a late beat's part of the death) commits in ``uow``."""
        namespace, me = caller.namespace, caller.principal_id
        if not disarm:
            beaten = self.store.beat_switch(namespace, scope, me, beat)
            if beaten is not None:
                return beaten, self.repeated_death(beaten)
        # A notify address named for an alert (or for actions the switch keeps) must be a
        # registered mailbox with room.
        alerting = beat.on_expiry is None or "queue_alert" in beat.on_expiry
        if beat.notify_address is not None and alerting:
            require_registered(self.store, namespace, beat.notify_address)
            if not disarm:
                self._require_room_for_alert(namespace, beat.notify_address)
        return retry_on_conflict(
            lambda: self._slow_beat(caller, scope, beat, disarm, uow), "the switch"
        )

    def _slow_beat(
        self, caller: Caller, scope: str, beat: Beat, disarm: bool, uow: UnitOfWork
    ) -> tuple[Switch, Death | None]:
        namespace, me = caller.namespace, caller.principal_id
        now = beat.at
        switch = self.store.get_switch(namespace, scope)
        death: Death | None = None
        if switch is not None and switch.overdue(now):
            # Late: the deadline passed before this beat. Unless a pause holds the switch (or
            # it is in its grace after one), the death is a fact; record it and run its
            # actions, exactly as the alarm would, before anything else.
            pauses = self.store.pauses(namespace)
            if switch.reprieve(pauses, now) is None:
                death = self.expire(switch, now, BEAT_STEPS, switch.missed(pauses), uow=uow)
                switch = self.store.get_switch(namespace, scope)
                assert switch is not None
        if (
            switch is not None
            and switch.state == "armed"
            and switch.holder != me
            and not (disarm and caller.is_operator)
        ):
            raise forbidden("this scope's switch is armed by another principal")
        if switch is not None and switch.state == "fired" and death is None:
            # Fired before this beat: help finish the death, a bounded step or few.
            death = self.store.get_death(namespace, scope, switch.generation)
            if death is not None and death.pending():
                death = self.deaths.finish(death, BEAT_STEPS, uow=uow)

        if disarm:
            if switch is None:
                raise not_found("switch")
            if switch.state == "armed":
                disarmed = switch.disarmed()
                audit = []
                if switch.holder != me:
                    # An operator stopping another's switch: an operator's power, audited.
                    event = AuditEvent.of(
                        namespace,
                        me,
                        "disarm",
                        "switch",
                        scope,
                        switch.version,
                        disarmed.version,
                        now,
                    )
                    audit.append(self.store.add_audit_event(event))
                if switch.depends_on is not None:
                    # Its work is done: no longer one of its host's dependants.
                    audit.append(self.store.remove_dependant(namespace, switch.depends_on, scope))
                self._save(uow, disarmed, switch.version, *audit, armed=-1)
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
            dependency = self._dependency(switch, updated)
            self._save(uow, updated, switch.version, *dependency, *self._ran_short(switch, beat))
            return updated, self.repeated_death(updated)

        armed = Switch.armed_after(switch, death, beat, namespace, scope, me)
        also = self._dependency(switch, armed)
        if switch is not None and switch.state == "fired" and death is not None:
            death, recovery = self._recovery(death, now, me)
            also += recovery
        self.alarms.arm(timer_for(armed, armed.deadline), now)
        self._save(uow, armed, switch.version if switch is not None else None, *also, armed=1)
        return armed, death

    def _dependency(self, before: Switch | None, after: Switch) -> list[Write]:
        """The writes of ``after``'s dependency, when it is not ``before``'s: the dependants'
        rows moved, and a check of each switch up the new chain, as read, so that a
        concurrent change of the chain fails this commit. A chain that comes back to
        ``after`` (a cycle) or goes more than MAX_DEPENDENCY_DEPTH switches up is refused."""
        # A disarmed switch's row was removed with the disarm.
        listed = before is not None and before.state != "disarmed"
        old = before.depends_on if listed and before is not None else None
        new = after.depends_on
        if old == new:
            return []
        namespace, scope = after.namespace, after.scope
        writes: list[Write] = []
        if old is not None:
            writes.append(self.store.remove_dependant(namespace, old, scope))
        if new is None:
            return writes
        chain = [scope]
        above: str | None = new
        while above is not None:
            if above in chain:
                path = " -> ".join([*chain, above])
                raise _dependency_refused(f"it would make a cycle: {path}")
            if len(chain) > MAX_DEPENDENCY_DEPTH:
                raise _dependency_refused(
                    f"a chain is at most {MAX_DEPENDENCY_DEPTH} switches above the one naming it"
                )
            found = self.store.get_switch(namespace, above)
            writes.append(self.store.depends_on_is(namespace, above, found))
            chain.append(above)
            above = found.depends_on if found is not None else None
        return [*writes, self.store.add_dependant(namespace, new, scope)]

    def _ran_short(self, switch: Switch, beat: Beat) -> list[Write]:
        """The switch.ran_short event of ``beat``, finishing ``switch``'s run before its
        floor, to commit with the beat; nothing for any other beat. Its id is the run's, so a
        retried commit tells it once."""
        if not beat.ran_short(switch):
            return []
        from vigil.switches.events import SwitchRanShort

        event = SwitchRanShort.of(switch, beat.at)
        log_event(
            log,
            "run ran short",
            namespace=switch.namespace,
            scope=switch.scope,
            run_seconds=event.run_seconds,
        )
        published = self.publish(
            "switch.ran_short", event, namespace=switch.namespace, occurred_at=beat.at
        )
        return list(published.writes)

    def _recovery(self, death: Death, now: datetime, by: str) -> tuple[Death, list[Write]]:
        """``death`` ended by ``by``'s beat at ``now``, and the writes that record it, to commit
        with the switch armed again. Its recovered step is done in that commit when nothing
        else of the death is left and it owes no mailbox an envelope; else the death's
        continuation alarm goes on with it, after the rest."""
        if death.recovered_at is not None:
            return death, []
        ended = death.recovery(to_ms(now), by)
        writes: list[Write] = []
        alerted = "envelope_id" in ended.done.get("queue_alert", {})
        if ended.pending() == ["recovered"] and not alerted:
            ended, writes = self.deaths.recovered(ended)
        else:
            # The rest, and a recovery envelope (sent to a mailbox, outside any commit, so never
            # before the commit that records the recovery), go on in the death's alarm: armed
            # first, as every alarm is; if this commit fails, it finds nothing to do.
            self.alarms.arm(continuation(ended, now), now)
        return ended, [*writes, self.store.save_death(ended, death.version)]

    def _save(
        self,
        uow: UnitOfWork,
        switch: Switch,
        expected_version: int | None,
        *also: Write,
        armed: int = 0,
    ) -> None:
        """Stores ``switch`` with ``also``, counting it in or out of the namespace's armed
        switches when ``armed`` says it was armed (1) or disarmed (-1); arming holds only
        within the quota."""
        writes = [self.store.save_switch(switch, expected_version), *also]
        limit = self.quotas.armed_switches
        if armed:
            writes.append(
                self.store.count(switch.namespace, "armed_switches", armed, limit, switch.scope)
            )
        try:
            uow.commit(*writes)
        except ConditionFailed:
            if armed > 0 and self.store.over_quota(switch.namespace, "armed_switches", limit):
                raise self.quotas.exceeded("armed_switches") from None
            raise

    def _require_room_for_alert(self, namespace: str, address: str) -> None:
        """limit_exceeded if the alert's mailbox already holds its quota of deliveries: a
        mailbox nobody drains stops taking new switches' alerts, not alerts already promised."""
        ref = self.queues.ensure(queue_name(self.queues.prefix, namespace, address))
        if self.queues.depth(ref) >= self.quotas.pending_deliveries:
            raise self.quotas.exceeded("pending_deliveries")

    def repeated_death(self, switch: Switch) -> Death | None:
        """The death this generation followed, on its first beats only: the answer that first
        reported it may have been lost. Later beats cost no read."""
        if switch.follows_death is None or switch.beats > REPEAT_DEATH_BEATS:
            return None
        return self.store.get_death(switch.namespace, switch.scope, switch.follows_death)

    def resume(
        self, namespace: str, scope: str, held_after: str | None, released_page: int
    ) -> Resumption:
        """The scope's state for a successor, with one page of the leases held now (those
        after ``held_after``) and page ``released_page`` of what its latest death released."""
        switch = self.store.get_switch(namespace, scope)
        if switch is None:
            raise not_found("scope")
        now = self.clock.now()
        death = self.store.latest_death(namespace, scope)
        released = None
        if death is not None and 1 <= released_page <= death.release.pages:
            released = self.store.get_released_page(
                namespace, scope, death.generation, released_page
            )
        held = self.store.scope_leases(namespace, scope, after=held_after, limit=HELD_PAGE)
        return Resumption(
            switch=switch,
            death=death,
            released=released,
            held_leases=[lease for lease in held if lease.live(now)],
            held_after=held[-1].resource if len(held) == HELD_PAGE else None,
            # The scope's latest report; failing that, the latest of the switch's holder.
            last_progress=self.store.scope_progress(namespace, scope)
            or self.store.latest_progress(namespace, switch.holder),
        )

    # -- the expiry ------------------------------------------------------------------------
    def expire(
        self,
        switch: Switch,
        now: datetime,
        steps: int,
        missed: datetime | None = None,
        *,
        uow: UnitOfWork,
    ) -> Death | None:
        """Fires ``switch`` if it is still armed at its generation and overdue, then runs up
        to ``steps`` steps of the death's actions. ``missed`` is the deadline the death
        records, when a grace after a pause moved it (the switch's own otherwise). Returns the
        death (ours or one that another caller recorded), or None if a beat or a disarm won."""
        death = switch.death(to_ms(now), missed)
        also: list[Write] = []
        if death.pending() == ["notify"] and death.depends_on is None:
            # Nothing to do but tell (no leases to release, no alert to queue, nothing it depends
            # on to ask): the event is written with the firing itself, one write where it would
            # be two.
            death, also = self.deaths.told(death)
        try:
            self.store.fire_switch(switch, death, now, *also)
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
            metrics.switch_fired(death.lateness_seconds)
        return self.deaths.finish(death, steps, uow=uow)

    # -- alarms ----------------------------------------------------------------------------
    def read_ahead(self, timers: list[Timer]) -> None:
        """Reads the switches of a batch's switch ``timers`` together, for each timer's first
        look (vigil.kit.batch): one request for the batch where each timer would make one."""
        keys = [(t.namespace, t.key) for t in timers if t.kind == TIMER_KIND]
        if not keys:
            return
        found = self.store.get_switches(keys)
        for key in keys:
            offer(("switch", *key), found.get(key))

    def on_timer(self, uow: UnitOfWork, timer: Timer) -> None:
        """The alarm function's handler for switch timers; the death's steps it runs commit in
        ``uow``, the timer's own.

        The switch may have been read ahead with the timer's batch (``read_ahead``), some
        moments before: a beat since then can only have moved its deadline later, and every
        change made here is conditional on what the switch is now. The one thing a stale view
        can do is try to fire a switch that a beat or a disarm saved: that firing fails its
        condition, and the timer is looked at again on a fresh read."""
        now = self.clock.now()
        ahead, switch = take(("switch", timer.namespace, timer.key))
        if not ahead:
            switch = self.store.get_switch(timer.namespace, timer.key)
        if switch is not None and switch.generation == timer.generation and switch.state == "armed":
            if switch.overdue(now):
                # Read once for a batch of timers (vigil.kit.batch), not once a fire.
                namespace = switch.namespace
                pauses = read_once(("pauses", namespace), lambda: self.store.pauses(namespace))
                reprieve = switch.reprieve(pauses, now)
                if reprieve is None:
                    died = self.expire(switch, now, ALARM_STEPS, switch.missed(pauses), uow=uow)
                    if died is None and ahead:
                        self.on_timer(uow, timer)  # saved since it was read: read it again
                elif switch.alarm_due == timer.due_at:
                    # The newest alarm keeps the hold going; an older one finds nothing to do.
                    self._hold(switch, reprieve, timer, now)
            elif switch.alarm_due == timer.due_at:
                # Beats moved the deadline: arm the next alarm, then record it. Arming first
                # means a crash leaves a duplicate alarm at worst, never none.
                self.alarms.arm(timer.model_copy(update={"due_at": switch.deadline}), now)
                moved = switch.alarm_moved(switch.deadline)
                if self.store.move_alarm(moved, previous_due=timer.due_at) and moved.settled(now):
                    self._settle(uow, moved.changed(), now)
            return
        death = self.store.get_death(timer.namespace, timer.key, timer.generation)
        if death is not None and death.pending():
            self.deaths.finish(death, ALARM_STEPS, uow=uow)

    def _settle(self, uow: UnitOfWork, switch: Switch, now: datetime) -> None:
        """``switch``, flapping, went a whole FLAP_WINDOW without dying: it is flapping no
        more, and whoever was told it flaps is told, in the same commit. A beat in between
        moves its version, and the next alarm settles it instead."""
        from vigil.switches.events import SwitchFlapping, SwitchSettled

        assert switch.flapping_since is not None
        since = switch.flapping_since
        published = self.publish(
            "switch.settled",
            SwitchSettled(
                scope=switch.scope,
                flapping_since=since,
                settled_at=to_ms(now),
                flapping_event_id=event_id(
                    switch.namespace, "switch.flapping", *SwitchFlapping.about(switch.scope, since)
                ),
            ),
            namespace=switch.namespace,
            occurred_at=to_ms(now),
        )
        settled = switch.changed(flapping_since=None)
        try:
            uow.commit(self.store.save_switch(settled, switch.version), *published.writes)
        except ConditionFailed:
            return
        log_event(log, "switch settled", namespace=switch.namespace, scope=switch.scope)

    def _hold(self, switch: Switch, reprieve: Reprieve, timer: Timer, now: datetime) -> None:
        """Keeps ``switch`` from firing: its alarm comes back at ``reprieve.until`` (armed
        first, then recorded, as every alarm move). Held by pauses, the switch keeps its missed
        deadline; in its grace after them, the grace's end becomes its deadline, so that a beat
        is in time until then and the switch fires then, whether the pauses are still kept or
        not."""
        self.alarms.arm(timer.model_copy(update={"due_at": reprieve.until}), now)
        if reprieve.held_by:
            self.store.move_alarm(switch.alarm_moved(reprieve.until), previous_due=timer.due_at)
            log_event(
                log,
                "switch held",
                namespace=switch.namespace,
                scope=switch.scope,
                generation=switch.generation,
                pauses=[pause.id for pause in reprieve.held_by],
                until=iso(reprieve.until),
            )
            return
        graced = switch.graced(reprieve.until)
        if self.store.grant_grace(graced, switch.deadline, previous_due=timer.due_at):
            log_event(
                log,
                "switch graced",
                namespace=switch.namespace,
                scope=switch.scope,
                generation=switch.generation,
                deadline=iso(graced.deadline),
            )
