"""The dead-man switch's engine: beating, the expiry its alarms drive, and the death's actions.

The steady-state beat is one conditional write and touches no alarm. Arming a new generation
sets its alarm first and writes the switch second, so a crash leaves at worst a stray alarm
(which finds nothing to do), never an armed switch without one. When an alarm finds that beats
moved the deadline, it arms the next alarm for the new deadline: one alarm per window, not one
per beat. The expiry is one conditional change (armed at generation g with a deadline at or
before now → fired) that also creates the death record; only the caller that wins it has a
death to run, and each action is recorded as done as it completes, so a repeated or late alarm
finishes what is missing and repeats nothing. The actions run in bounded steps (one batch of
leases released, or one other action, per transaction), a bounded number per run, so no run
outgrows a function's timeout and no item, transaction or alert outgrows its limit, however
many leases the holder had.

Operators pause the switches under a scope prefix. Only a switch past its deadline reads the
namespace's pauses (one query, on the expiry path and a late beat's): under a pause in force it
is held (its alarm comes back at the pause's end or its next hold check, and a late beat keeps
it); once its pauses have ended it gets its own window from their end, written as its deadline.
A beat in time costs what it did.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple, TypeVar

from pydantic import BaseModel

from vigil.alarms.timers import Alarms, Timer
from vigil.audit.records import AuditEvent
from vigil.clock import Clock, iso, to_ms
from vigil.errors import ErrorCode, VigilError, conflict, forbidden, invalid, not_found
from vigil.identity.records import Caller
from vigil.kit.paging import scan_page
from vigil.kit.retry import retry_on_conflict
from vigil.kit.uow import ConditionFailed, UnitOfWork, Write
from vigil.leases.records import Lease
from vigil.mailboxes.queues import MailboxQueues
from vigil.mailboxes.records import SYSTEM_SENDER, Envelope, envelope_id_for, queue_name
from vigil.mailboxes.service import deliver, require_registered
from vigil.observability import get_logger, log_event, metrics
from vigil.progress.records import ProgressReport
from vigil.quotas.records import Quotas
from vigil.store import Store
from vigil.switches.records import (
    MAX_PAUSE_SECONDS,
    MAX_PAUSES,
    RELEASE_BATCH,
    Beat,
    Death,
    HeldLease,
    Pause,
    PublicState,
    ReleasedPage,
    Reprieve,
    Step,
    Switch,
)

log = get_logger("vigil.switches")

R = TypeVar("R", bound=BaseModel)

TIMER_KIND = "switch"
# How many beats of a generation armed after a death repeat that death in their result.
REPEAT_DEATH_BEATS = 3
# The steps of a death's actions (see Liveness.finish) one run takes: a late beat takes a few,
# enough for a death with few leases, so that its answer can report the death done; an alarm
# takes more (50 batches: 2,000 leases, a few seconds on DynamoDB, far within the function's
# timeout). What is left goes on in the next alarm.
BEAT_STEPS = 4
ALARM_STEPS = 50
# The leases held now that one resume_packet lists.
HELD_PAGE = 50
# A page of list_switches and of list_deaths: one query of the namespace's index and one
# BatchGetItem of the records it names (at most 100 keys). A state filter examines at most
# SWITCHES_SCAN_BUDGET switches a call.
LIST_PAGE = 50
SWITCHES_SCAN_BUDGET = 500


def may_watch(caller: Caller) -> bool:
    """People and operators watch the namespace's switches and deaths; agents and services
    see only their own, through heartbeat and resume_packet."""
    return caller.kind == "person" or caller.is_operator


def switches_page(
    store: Store,
    caller: Caller,
    state: PublicState | None,
    prefix: str,
    after: str | None,
) -> tuple[list[Switch], str | None]:
    """A page of the caller's namespace's switches whose scope begins with ``prefix`` (and in
    ``state``, if given), in scope order, and the scope to continue after, or None at the end."""
    if not may_watch(caller):
        raise forbidden("only people and operators may list switches")
    return scan_page(
        lambda start, size: store.list_switches(caller.namespace, prefix, start, size),
        position=lambda switch: switch.scope,
        keep=lambda switch: state is None or switch.listed_state == state,
        after=after,
        size=LIST_PAGE,
        budget=SWITCHES_SCAN_BUDGET,
    )


def deaths_page(
    store: Store, caller: Caller, before: str | None, limit: int
) -> tuple[list[Death], str | None]:
    """Up to ``limit`` of the namespace's deaths, newest first, after the position ``before``;
    and the position to continue after, or None at the end."""
    if not may_watch(caller):
        raise forbidden("only people and operators may list deaths")
    found = store.recent_deaths(caller.namespace, before, limit + 1)
    page = found[:limit]
    return page, page[-1].position if len(found) > limit else None


# -- pauses -------------------------------------------------------------------------------
def pause(
    store: Store,
    uow: UnitOfWork,
    caller: Caller,
    scope_prefix: str,
    until: datetime | None,
    until_next_beat: bool,
    reason: str | None,
    now: datetime,
    present: Callable[[Pause], R],
) -> R:
    """A new pause of the switches under ``scope_prefix``, audited: an operator's power. A
    prefix has one pause at a time, so one still in force there is a conflict."""
    if not caller.is_operator:
        raise forbidden("only an operator may pause switches")
    if until is not None and not now < until <= now + timedelta(seconds=MAX_PAUSE_SECONDS):
        raise invalid(f"until must be after now and at most {MAX_PAUSE_SECONDS} s ahead")
    namespace = caller.namespace

    def attempt() -> R:
        pauses = store.pauses(namespace)
        previous = next((p for p in pauses if p.scope_prefix == scope_prefix), None)
        if previous is not None and previous.in_force(now):
            raise conflict(
                "this prefix is paused already; resume that pause first",
                pause_id=previous.id,
                current_version=previous.version,
            )
        if sum(p.in_force(now) for p in pauses) >= MAX_PAUSES:
            raise VigilError(
                ErrorCode.LIMIT_EXCEEDED,
                f"a namespace holds at most {MAX_PAUSES} pauses in force at once",
                limit=MAX_PAUSES,
            )
        begun = Pause.begun(
            previous,
            namespace,
            scope_prefix,
            caller.principal_id,
            now,
            until,
            until_next_beat,
            reason,
        )
        before = previous.version if previous is not None else None
        event = AuditEvent.of(
            namespace,
            caller.principal_id,
            "pause",
            "pause",
            scope_prefix,
            before,
            begun.version,
            now,
        )
        result = present(begun)
        uow.commit(store.save_pause(begun, before), store.add_audit_event(event), result=result)
        return result

    return retry_on_conflict(attempt, "the pauses")


def resume_pause(
    store: Store,
    uow: UnitOfWork,
    caller: Caller,
    pause_id: str | None,
    scope_prefix: str | None,
    version: int,
    now: datetime,
    present: Callable[[Pause], R],
) -> R:
    """Ends the pause named by its id or its prefix now, audited. A pause that has ended
    already (its until passed) is returned as it is, and nothing is written."""
    if not caller.is_operator:
        raise forbidden("only an operator may resume switches")
    namespace = caller.namespace

    def attempt() -> R:
        found = next(
            (
                p
                for p in store.pauses(namespace)
                if p.id == pause_id or (pause_id is None and p.scope_prefix == scope_prefix)
            ),
            None,
        )
        if found is None:
            raise not_found("pause")
        if found.version != version:
            raise conflict("stale version", current_version=found.version)
        if not found.in_force(now):
            result = present(found)
            uow.finish(result)
            return result
        resumed = found.resumed(caller.principal_id, now)
        event = AuditEvent.of(
            namespace,
            caller.principal_id,
            "resume",
            "pause",
            found.scope_prefix,
            found.version,
            resumed.version,
            now,
        )
        result = present(resumed)
        uow.commit(
            store.save_pause(resumed, found.version), store.add_audit_event(event), result=result
        )
        return result

    return retry_on_conflict(attempt, "the pause")


def pauses_page(
    store: Store, caller: Caller, after: str | None, now: datetime
) -> tuple[list[Pause], str | None]:
    """A page of the namespace's pauses in force, in prefix order, after the prefix
    ``after``; and the prefix to continue after, or None at the end."""
    if not may_watch(caller):
        raise forbidden("only people and operators may list pauses")
    found = [
        p
        for p in store.pauses(caller.namespace)
        if p.in_force(now) and (after is None or p.scope_prefix > after)
    ]
    page = found[:LIST_PAGE]
    return page, page[-1].scope_prefix if len(found) > LIST_PAGE else None


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
    quotas: Quotas = field(default_factory=Quotas)

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
        if beat.notify_address is not None and "queue_alert" in beat.on_expiry:
            require_registered(self.store, namespace, beat.notify_address)
            if not disarm:
                self._require_room_for_alert(namespace, beat.notify_address)
        return retry_on_conflict(lambda: self._slow_beat(caller, scope, beat, disarm), "the switch")

    def _slow_beat(
        self, caller: Caller, scope: str, beat: Beat, disarm: bool
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
                death = self.expire(switch, now, BEAT_STEPS, switch.missed(pauses))
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
                death = self.finish(death, BEAT_STEPS)

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
                self._save(disarmed, switch.version, *audit, armed=-1)
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
        self._save(armed, switch.version if switch is not None else None, armed=1)
        return armed, death

    def _save(
        self, switch: Switch, expected_version: int | None, *also: Write, armed: int = 0
    ) -> None:
        """Stores ``switch`` with ``also``, counting it in or out of the namespace's armed
        switches when ``armed`` says it was armed (1) or disarmed (-1); arming holds only
        within the quota."""
        writes = [self.store.save_switch(switch, expected_version), *also]
        limit = self.quotas.armed_switches
        if armed:
            writes.append(self.store.count(switch.namespace, "armed_switches", armed, limit))
        try:
            UnitOfWork(self.store).commit(*writes)
        except ConditionFailed:
            if armed > 0 and self.store.quota_usage(switch.namespace, "armed_switches") >= limit:
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
        self, switch: Switch, now: datetime, steps: int, missed: datetime | None = None
    ) -> Death | None:
        """Fires ``switch`` if it is still armed at its generation and overdue, then runs up
        to ``steps`` steps of the death's actions. ``missed`` is the deadline the death
        records, when a grace after a pause moved it (the switch's own otherwise). Returns the
        death (ours or one that another caller recorded), or None if a beat or a disarm won."""
        death = switch.death(to_ms(now), missed)
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
            metrics.switch_fired(death.lateness_seconds)
        return self.finish(death, steps)

    def finish(self, death: Death, steps: int) -> Death:
        """Runs up to ``steps`` steps of ``death``'s pending actions, in order, and returns the
        death as recorded. A step is one batch of release_leases, or one other action; a step
        lost to a concurrent run of the same death counts too, so every run is bounded. When
        actions remain, a timer is armed for now, and the alarm function goes on with them.

        Should this caller stop before that timer is armed, the death is still finished: an
        alarm's run is delivered again until it succeeds, and a beat's run leaves the switch
        fired (the new generation is written after), so the beat's retry, or the alarm of the
        deadline that this beat came after, runs it again."""
        for _ in range(steps):
            pending = death.pending()
            if not pending:
                return death
            try:
                death = self._step(pending[0], death)
            except ConditionFailed:
                fresh = self.store.get_death(death.namespace, death.scope, death.generation)
                assert fresh is not None
                death = fresh
        if death.pending():
            self.alarms.arm(self._continuation(death), self.clock.now())
        return death

    def _continuation(self, death: Death) -> Timer:
        return Timer(
            kind=TIMER_KIND,
            namespace=death.namespace,
            key=death.scope,
            generation=death.generation,
            due_at=self.clock.now(),
        )

    def _step(self, action: Step, death: Death) -> Death:
        """One step of ``action``, committed with the death's new version; ConditionFailed if
        the death or a lease changed since they were read."""
        if action == "release_leases":
            return self._release_batch(death)
        if action == "notify":
            return self._notify(death)
        if action == "mark_failed":
            return self._record(death, action, {"failed_at": iso(death.fired_at)})
        return self._record(death, action, self._alert(death))

    def _record(self, death: Death, action: Step, outcome: dict[str, Any], *also: Write) -> Death:
        recorded = death.recorded(action, outcome)
        UnitOfWork(self.store).commit(*also, self.store.save_death(recorded, death.version))
        return recorded

    def _notify(self, death: Death) -> Death:
        """The switch.fired event, with what the actions did, written with the step: the
        channels are told once, whichever run of the death gets here."""
        from vigil.notifications.events import make_event
        from vigil.notifications.outbox import Outbox
        from vigil.switches.events import SwitchFired

        event = make_event(
            "switch.fired",
            SwitchFired.of(death),
            namespace=death.namespace,
            occurred_at=death.fired_at,
            console_base=None,
        )
        writes = Outbox(self.store, self.clock, self.alarms).publish(event)
        return self._record(death, "notify", {"event_id": event.id}, *writes)

    def _release_batch(self, death: Death) -> Death:
        """Releases the next batch of the holder's leases of the scope, and records them as a
        page, all in one transaction with the death's progress: a lease is released exactly
        once, and a crash between batches loses nothing."""
        looked_at = self.store.scope_leases(
            death.namespace, death.scope, after=death.release.after, limit=RELEASE_BATCH
        )
        now = self.clock.now()
        ours = [lease for lease in looked_at if death.releases(lease)]
        writes = [
            self.store.save_lease(lease.released(f"expiry:{death.scope}", now), lease.version)
            for lease in ours
        ]
        batch = [HeldLease(resource=lease.resource, generation=lease.generation) for lease in ours]
        if batch:
            writes.append(self.store.add_released_page(death.page(batch)))
        after = looked_at[-1].resource if looked_at else death.release.after
        advanced = death.released_batch(batch, after)
        if len(looked_at) < RELEASE_BATCH:
            # The whole scope was walked: the action is done.
            advanced = advanced.recorded("release_leases", self._blind_spot(death))
        UnitOfWork(self.store).commit(*writes, self.store.save_death(advanced, death.version))
        return advanced

    def _blind_spot(self, death: Death) -> dict[str, Any]:
        unscoped = self.store.unscoped_leases_held_by(death.namespace, death.holder)
        return {
            "blind_spot": {
                "unscoped_leases_held": unscoped,
                "explanation": (
                    "release_leases reaches only leases taken with this scope; the holder's "
                    "leases without a scope are counted here and left alone"
                ),
            }
        }

    def _alert(self, death: Death) -> dict[str, Any]:
        assert death.notify_address is not None
        release_outcome = death.done.get("release_leases")
        released = death.release
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
                # Counts and the first few names keep the alert small whatever was held; the
                # whole list is in resume_packet, a page at a time.
                "released_count": released.released if release_outcome else None,
                "released_first": (
                    [held.model_dump() for held in released.first] if release_outcome else None
                ),
                "released_pages": released.pages if release_outcome else None,
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
                pauses = self.store.pauses(switch.namespace)
                reprieve = switch.reprieve(pauses, now)
                if reprieve is None:
                    self.expire(switch, now, ALARM_STEPS, switch.missed(pauses))
                elif switch.alarm_due == timer.due_at:
                    # The newest alarm keeps the hold going; an older one finds nothing to do.
                    self._hold(switch, reprieve, timer, now)
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
            self.finish(death, ALARM_STEPS)

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
