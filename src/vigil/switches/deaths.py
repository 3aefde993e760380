"""A dead switch's actions, run in bounded steps.

Each action is recorded as done as it completes, so a repeated or late run of the same death
finishes what is missing and repeats nothing. A step is one batch of leases released, or one
other action, committed in one transaction with the death's new version; a run takes a bounded
number of steps, so no run outgrows a function's timeout and no item, transaction or alert
outgrows its limit, however many leases the holder had.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from vigil.alarms.timers import Alarms
from vigil.clock import Clock, iso
from vigil.errors import ErrorCode, VigilError
from vigil.kit.batch import read_once
from vigil.kit.events import event_id
from vigil.kit.publish import Publish
from vigil.kit.uow import ConditionFailed, UnitOfWork, Write
from vigil.mailboxes.queues import MailboxQueues
from vigil.mailboxes.records import SYSTEM_SENDER, Envelope, envelope_id_for
from vigil.mailboxes.service import Tell, deliver
from vigil.switches.records import (
    FLAP_DEATHS,
    FLAP_WINDOW,
    MAX_DEPENDENCY_DEPTH,
    MAX_DEPENDENCY_HOLD,
    NAMED_DEPENDANTS,
    RELEASE_BATCH,
    Death,
    HeldLease,
    Step,
    Switch,
)
from vigil.switches.store import SwitchPorts
from vigil.switches.timers import continuation


@dataclass(kw_only=True)
class DeathActions:
    """Runs a death's pending actions; each step commits in the unit of work it is given."""

    store: SwitchPorts
    clock: Clock
    alarms: Alarms
    queues: MailboxQueues
    publish: Publish

    def finish(self, death: Death, steps: int, *, uow: UnitOfWork) -> Death:
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
                death = self._step(pending[0], death, uow)
            except Held as held:
                # Told once what it depends on is judged: the alarm comes back then.
                self.alarms.arm(continuation(death, held.until), self.clock.now())
                return death
            except ConditionFailed:
                fresh = self.store.get_death(death.namespace, death.scope, death.generation)
                assert fresh is not None
                death = fresh
        if death.pending():
            now = self.clock.now()
            self.alarms.arm(continuation(death, now), now)
        return death

    def _step(self, action: Step, death: Death, uow: UnitOfWork) -> Death:
        """One step of ``action``, committed with the death's new version; ConditionFailed if
        the death or a lease changed since they were read."""
        if action == "release_leases":
            return self._release_batch(death, uow)
        if action == "notify":
            return self._notify(death, uow)
        if action == "recovered":
            recovered, writes = self.recovered(death)
            uow.commit(*writes, self.store.save_death(recovered, death.version))
            return recovered
        if action == "mark_failed":
            # Done in the firing's write (Switch.death); a death stored before that runs it here.
            return self._record(uow, death, action, {"failed_at": iso(death.fired_at)})
        return self._record(uow, death, action, self._alert(death))

    def _record(
        self, uow: UnitOfWork, death: Death, action: Step, outcome: dict[str, Any], *also: Write
    ) -> Death:
        recorded = death.recorded(action, outcome)
        uow.commit(*also, self.store.save_death(recorded, death.version))
        return recorded

    def _notify(self, death: Death, uow: UnitOfWork) -> Death:
        """The switch.fired event, with what the actions did, written with the step: the
        channels are told once, whichever run of the death gets here."""
        told, writes = self.told(death)
        uow.commit(*writes, self.store.save_death(told, death.version))
        return told

    def told(self, death: Death) -> tuple[Death, list[Write]]:
        """``death`` with its notify step recorded, and the writes of its switch.fired event
        (with what the actions did), to commit with it."""
        # Loaded by the first death, not with the alarm function: most of its timers find
        # nothing to tell.
        from vigil.switches.events import SwitchFired, SwitchFlapping

        # Asked first: waiting for what it depends on (Held) must leave nothing published.
        folded = self._folded_into(death) if death.depends_on is not None else None
        settled: list[Write] = []
        if death.flapping == "ended":
            # Its flapping ended unsaid (no alarm came in the hour without a death): said now,
            # before this death's news, which is told as any death's is.
            settled = self._settled(death)
        if folded is not None:
            # What it depends on is dead: told in that one's alert, not apart (nor as a flap).
            outcome = {"folded_into": {"scope": folded.scope, "generation": folded.generation}}
            quiet = "ended" if death.flapping == "ended" else None
            return death.recorded("notify", outcome).model_copy(update={"flapping": quiet}), settled
        if death.flapping == "ongoing":
            # Its switch flaps: told once, when it began; this death is recorded, not told.
            return death.recorded("notify", {"quiet": "flapping"}), []
        if death.flapping == "began":
            window = int(FLAP_WINDOW.total_seconds())
            published = self.publish(
                "switch.flapping",
                SwitchFlapping.of(death, FLAP_DEATHS, window),
                namespace=death.namespace,
                occurred_at=death.fired_at,
            )
        else:
            dependants = self.store.dependants(death.namespace, death.scope, NAMED_DEPENDANTS)
            published = self.publish(
                "switch.fired",
                SwitchFired.of(death, *dependants),
                namespace=death.namespace,
                occurred_at=death.fired_at,
            )
        notified = death.recorded("notify", {"event_id": published.event_id})
        return notified, [*settled, *published.writes]

    def _settled(self, death: Death) -> list[Write]:
        from vigil.switches.events import SwitchFlapping, SwitchSettled

        assert death.flapping_since is not None
        since = death.flapping_since
        flapping_id = event_id(
            death.namespace, "switch.flapping", *SwitchFlapping.about(death.scope, since)
        )
        data = SwitchSettled(
            scope=death.scope,
            flapping_since=since,
            settled_at=death.fired_at,
            flapping_event_id=flapping_id,
        )
        return self.publish(
            "switch.settled", data, namespace=death.namespace, occurred_at=death.fired_at
        ).writes

    def _folded_into(self, death: Death) -> Switch | None:
        """The switch whose alert ``death`` is told in: the highest of the switches it
        depends on (up the chain) that is dead. None: it is told apart. Held until one of them
        is judged when one, not beaten since this death, has its deadline near (within
        MAX_DEPENDENCY_HOLD of the death): a host and its jobs stop together, and the jobs'
        deadlines may come first."""
        namespace, now = death.namespace, self.clock.now()
        dead: Switch | None = None
        wait_until: datetime | None = None
        above = death.depends_on
        # A chain is checked MAX_DEPENDENCY_DEPTH up as it is named; one made longer from its
        # middle (a parent given to a switch that has dependants) is walked up to twice that.
        for _ in range(2 * MAX_DEPENDENCY_DEPTH):
            if above is None:
                break
            # Read once for a batch of timers (vigil.kit.batch): a burst of a host's jobs
            # reads the host once a batch.
            read = functools.partial(self.store.get_switch, namespace, above)
            found = read_once(("depended on", namespace, above), read)
            if found is None:
                break
            if found.state == "fired":
                # Only a death that came after this switch's last beat explains this one: a
                # host that died long before its job last beat is not why the job died.
                if death.last_beat_at is None or found.deadline >= death.last_beat_at:
                    dead = found
            elif (
                found.state == "armed"
                and found.last_beat_at <= death.fired_at
                and found.deadline <= death.fired_at + MAX_DEPENDENCY_HOLD
                and found.deadline + JUDGED_WITHIN > now
            ):
                # Not judged yet, and due soon: wait for it. One overdue by more than its alarm
                # takes (held by a pause, say) is not waited for again.
                until = found.deadline + JUDGED_WITHIN
                wait_until = until if wait_until is None else min(wait_until, until)
            above = found.depends_on
        if dead is None and wait_until is not None:
            raise Held(wait_until)
        return dead

    def recovered(self, death: Death) -> tuple[Death, list[Write]]:
        """``death``, whose switch was beaten again, with its recovered step recorded, and the
        writes of its switch.recovered event, to commit with it. The event goes wherever the
        switch.fired went (its channels, and the feed of the agent alerted); an alert queued to
        a mailbox is followed there by a recovery envelope, sent first (its id is derived from
        the death, so a run again sends nothing new)."""
        from vigil.switches.events import SwitchRecovered

        outcome: dict[str, Any] = {}
        at = death.recovered_at or death.fired_at
        if "envelope_id" in death.done.get("queue_alert", {}):
            outcome["envelope"] = self._deliver(death, _recovery_payload(death), "recovered", at)
        writes: list[Write] = []
        told = death.done.get("notify", {})
        if ("event_id" in told or "folded_into" in told) and death.flapping in (None, "ended"):
            # (A flapping switch's recoveries are not told: that it settles is. A dependant's
            # are, though its death was told in another's alert.)
            fired_id = told.get("event_id") or event_id(
                death.namespace, "switch.fired", death.scope, str(death.generation)
            )
            folded = told.get("folded_into")
            told_in = (
                event_id(
                    death.namespace, "switch.fired", folded["scope"], str(folded["generation"])
                )
                if folded
                else None
            )
            published = self.publish(
                "switch.recovered",
                SwitchRecovered.of(death, fired_id, told_in),
                namespace=death.namespace,
                occurred_at=at,
            )
            outcome["event_id"] = published.event_id
            writes = published.writes
        return death.recorded("recovered", outcome), writes

    def _release_batch(self, death: Death, uow: UnitOfWork) -> Death:
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
        uow.commit(*writes, self.store.save_death(advanced, death.version))
        return advanced

    def _blind_spot(self, death: Death) -> dict[str, Any]:
        # One count for a batch of timers (vigil.kit.batch): a burst of one holder's deaths
        # reads its holder index once a batch. It is what the holder had when looked at.
        namespace, holder = death.namespace, death.holder
        unscoped = read_once(
            ("unscoped leases", namespace, holder),
            lambda: self.store.unscoped_leases_held_by(namespace, holder),
        )
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
        release_outcome = death.done.get("release_leases")
        released = death.release
        payload = {
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
        }
        return self._deliver(death, payload, "", death.fired_at)

    def _deliver(
        self, death: Death, payload: dict[str, Any], what: str, sent_at: datetime
    ) -> dict[str, Any]:
        """Delivers an alert envelope of ``death`` (``what`` tells it from the death's other
        envelopes) to its notify address, and says what came of it."""
        assert death.notify_address is not None
        about = f"{death.namespace}/{death.scope}/{death.generation}"
        envelope = Envelope(
            # Derived from the death, so a resend after a crash is the same envelope, which the
            # mailbox hands out once.
            id=envelope_id_for(f"{about}/{what}" if what else about),
            namespace=death.namespace,
            address=death.notify_address,
            sender=SYSTEM_SENDER,
            kind="alert",
            payload=payload,
            sent_at=sent_at,
        )
        try:
            deliver(
                self.store,
                self.queues,
                self.clock,
                death.namespace,
                death.notify_address,
                envelope,
                Tell(self.store, self.publish, self.clock),
            )
        except VigilError as error:
            if error.code is not ErrorCode.NOT_FOUND:
                raise
            return {"undeliverable": "the notify address is no longer registered"}
        return {"envelope_id": envelope.id, "address": death.notify_address}


class Held(Exception):
    """A death's notify step waits until ``until`` for what it depends on to be judged."""

    def __init__(self, until: datetime) -> None:
        super().__init__(until)
        self.until = until


# A switch is judged (fired, or beaten again) this long after its deadline at most: its alarm
# comes within the lateness goal (2 s at p99).
JUDGED_WITHIN = timedelta(seconds=5)


def _recovery_payload(death: Death) -> dict[str, Any]:
    """What a recovery envelope says: the death it ends, and the downtime."""
    assert death.recovered_at is not None
    return {
        "event": "switch_recovered",
        "scope": death.scope,
        "generation": death.generation,
        "agent_id": death.agent_id,
        "deadline": iso(death.deadline),
        "fired_at": iso(death.fired_at),
        "recovered_at": iso(death.recovered_at),
        "downtime_seconds": death.downtime_seconds,
        "recovered_by": death.recovered_by,
    }
