"""Random histories of one dead-man switch, checked against a model of its deaths.

A state machine drives one scope held by one agent: beats with random windows (always with
all three expiry actions and the supervisor's mailbox), disarms, the clock moving with no
alarm delivered, every due alarm delivered once, an alarm delivered again (a duplicate or a
late one), and a crash injected into the next alarm delivery after a chosen step of the
expiry path. A crashed delivery goes back on the alarm queue, as SQS would redeliver it after
its visibility timeout. The agent takes one scoped lease whenever it (re)arms the switch.

The model knows only the beats' times and windows: a generation dies iff the clock reaches its
deadline before its next beat or disarm (``deadline <= now`` fires; a beat is in time only while
``deadline > now``). Whatever the deliveries, duplicates and crashes, the recorded deaths are
the model's; each death, once finished, has run its three actions once and in order; its
scoped lease was released exactly once; and the supervisor is handed exactly one alert per
death. The teardown runs time far ahead and delivers every alarm, crashed ones again, until
none is left, and checks all of it on the final state.

A failure prints the steps as a program and a ``@reproduce_failure`` blob that replays it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from tests.liveness_support import World
from vigil.alarms.timers import Timer
from vigil.clock import ManualClock, parse_iso, to_ms
from vigil.kit.memory import MemoryWrite
from vigil.leases.records import Lease
from vigil.mailboxes.memory import MemoryMailboxQueues
from vigil.mailboxes.queues import QueueRef
from vigil.stores.memory import MemoryStore
from vigil.switches.engine import REPEAT_DEATH_BEATS
from vigil.switches.records import ACTION_ORDER, Action, Death, Switch

SCOPE = "job-1"
RESOURCE = "repo:main"
NAMESPACE = "acme"
ALL_ACTIONS: list[Action] = ["release_leases", "mark_failed", "queue_alert"]

# Where a crash may be injected into an alarm delivery: just after the named step took effect.
CRASH_POINTS = (
    "fire_switch",  # the switch is fired and its death recorded; no action has run
    "release",  # the lease is released; the action is not recorded yet
    "send",  # the alert is in the queue; the action is not recorded yet
    "record:release_leases",
    "record:queue_alert",
)


class Crash(Exception):
    """The alarm function died here (a timeout, a lost connection)."""


class Faults:
    """One pending crash, shared by the store and the queues. It strikes only while an alarm
    is being delivered, so the tools the agent and the supervisor call never crash."""

    def __init__(self) -> None:
        self.pending: str | None = None
        self.delivering = False
        self.struck: list[str] = []

    def after(self, point: str) -> None:
        if self.delivering and self.pending == point:
            self.pending = None
            self.struck.append(point)
            raise Crash(point)


class FaultyStore(MemoryStore):
    """The in-memory store, crashing after the chosen step, and counting lease releases."""

    def __init__(self, faults: Faults) -> None:
        super().__init__()
        self.faults = faults
        self.releases: Counter[tuple[str, int]] = Counter()  # (resource, generation) -> count
        self.released_by: dict[tuple[str, int], str | None] = {}

    def fire_switch(self, switch: Switch, death: Death, now: datetime, *also: Any) -> None:
        super().fire_switch(switch, death, now, *also)
        self.faults.after("fire_switch")

    def save_lease(
        self, lease: Lease, expected_version: int | None, scope_limit: int | None = None
    ) -> MemoryWrite:
        write = super().save_lease(lease, expected_version, scope_limit)
        return _Tagged(**vars(write), lease=lease)

    def save_death(self, death: Death, expected_version: int) -> MemoryWrite:
        write = super().save_death(death, expected_version)
        before = self.deaths[(death.namespace, death.scope, death.generation)]
        return _Tagged(**vars(write), recorded=[a for a in death.done if a not in before.done])

    def commit(self, writes: Any, completion: Any = None) -> None:
        super().commit(writes, completion)
        # A transaction is atomic: a crash comes after all of it.
        tagged = [write for write in writes if isinstance(write, _Tagged)]
        for write in tagged:
            lease = write.lease
            if lease is not None and lease.state == "released":  # every such write releases
                key = (lease.resource, lease.generation)
                self.releases[key] += 1
                self.released_by[key] = lease.released_by
        if any(write.lease is not None and write.lease.state == "released" for write in tagged):
            self.faults.after("release")
        for write in tagged:
            for action in write.recorded:
                self.faults.after(f"record:{action}")


@dataclass(frozen=True)
class _Tagged(MemoryWrite):
    """A write that says what it changes, so the crash can come after its commit."""

    lease: Lease | None = None
    recorded: list[Action] = field(default_factory=list)


class FaultyQueues(MemoryMailboxQueues):
    def __init__(self, clock: ManualClock, faults: Faults) -> None:
        super().__init__(clock)
        self.faults = faults

    def send(self, ref: QueueRef, body: str) -> str:
        message_id = super().send(ref, body)
        self.faults.after("send")
        return message_id


class SwitchMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.faults = Faults()
        self.clock = ManualClock()
        self.store = FaultyStore(self.faults)
        self.world = World(self.clock, store=self.store)
        # Both paths that can queue an alert (a late beat, an alarm) use the faulty queues.
        queues = FaultyQueues(self.clock, self.faults)
        self.world.queues = queues
        self.world.app.queues = queues
        self.world.switch_engine.queues = queues
        self.agent, self.agent_secret = self.world.tenant.register(name="worker")
        self.supervisor, self.supervisor_secret = self.world.tenant.register(name="supervisor")
        self.notify = f"agent:{self.supervisor}"

        # The model: the switch as the beats and disarms alone define it.
        self.generation = 0
        self.state: str | None = None  # None (never armed), armed, disarmed or fired
        self.deadline: datetime | None = None
        self.beats = 0  # beats of the current generation
        self.follows: int | None = None  # the generation whose death the current one followed
        self.deaths: list[int] = []  # the generations that died, in order
        self.death_deadline: dict[int, datetime] = {}  # the deadline each of them missed
        self.lease_of: dict[int, int] = {}  # switch generation -> generation of its lease
        self.alerts: dict[str, int] = {}  # envelope id handed out -> the generation it reports
        self.recoveries: dict[str, int] = {}  # the same, of the envelopes telling a death ended

    # -- helpers ---------------------------------------------------------------------------
    def now(self) -> datetime:
        return self.clock.now()

    def overdue(self) -> bool:
        """The current generation has missed its deadline: it is dead, recorded or not yet."""
        return self.state == "armed" and self.deadline is not None and self.deadline <= self.now()

    def recorded(self) -> list[int]:
        return sorted(
            g for (ns, scope, g) in self.store.deaths if (ns, scope) == (NAMESPACE, SCOPE)
        )

    def heartbeat(self, window: int, disarm: bool = False) -> dict[str, Any]:
        arguments: dict[str, Any] = {"scope": SCOPE, "expect_within_seconds": window}
        if disarm:
            arguments["disarm"] = True
        else:
            arguments.update(on_expiry=ALL_ACTIONS, notify_address=self.notify, agent_id="w-3")
        return self.world.call("heartbeat", self.agent_secret, **arguments)

    def deliver(self, timer: Timer) -> None:
        """One delivery to the alarm function; a crashed one goes back on the queue."""
        self.faults.delivering = True
        try:
            self.world.deliver(timer)
        except Crash:
            self.world.alarms.arm(timer, self.now())
        finally:
            self.faults.delivering = False

    def died(self) -> None:
        assert self.deadline is not None
        self.deaths.append(self.generation)
        self.death_deadline[self.generation] = self.deadline
        self.state = "fired"

    def released_lease(self, generation: int) -> list[dict[str, Any]]:
        return [{"resource": RESOURCE, "generation": self.lease_of[generation]}]

    def check_death(self, death: Death, finished: bool) -> None:
        g = death.generation
        assert g in self.deaths or (g == self.generation and self.overdue())
        # Never a death while the switch was beaten in time: the deadline it missed is the one
        # the last beat of its generation set, and it had passed when the switch fired.
        assert death.deadline == self.death_deadline.get(g, self.deadline)
        assert death.fired_at >= death.deadline
        assert death.actions == list(ACTION_ORDER)
        # Recorded in order, each once: what is done is always a prefix of the order, which
        # mark_failed begins (the firing's own write records it). The channels are notified
        # last, once the actions are done; and told of its end after that, once a beat armed the
        # switch again (and only then).
        rearmed = g < self.generation
        assert (death.recovered_at is not None) == rearmed
        steps = ["mark_failed", *(a for a in ACTION_ORDER if a != "mark_failed"), "notify"]
        steps += ["recovered"] if rearmed else []
        assert list(death.done) == steps[: len(death.done)]
        if finished:
            # A recovery that owes the mailbox an envelope is told by the death's alarm, after
            # the beat that ended it: finished once that alarm has run, driven until then.
            driven = any(t.kind == "switch" and t.generation == g for t in self.world.alarms.armed)
            if rearmed and driven and "recovered" not in death.done:
                steps = steps[:-1]
            assert list(death.done) == steps
        if "release_leases" in death.done:
            assert [held.model_dump() for held in death.release.first] == self.released_lease(g)
        alert = death.done.get("queue_alert")
        if alert is not None:
            assert alert["address"] == self.notify

    def check_all_finished(self) -> None:
        for death in self.store.deaths.values():
            self.check_death(death, finished=True)

    def queued_alerts(self) -> int:
        return sum(len(queue.messages) for queue in self.world.queues.queues.values())

    def drain_alerts(self) -> None:
        """The supervisor polls its mailbox until it is empty, acknowledging each alert."""
        for _ in range(100):
            page = self.world.call(
                "inbox_poll", self.supervisor_secret, max_messages=10, lease_seconds=900
            )["deliveries"]
            if not page and not self.queued_alerts():
                return
            for delivery in page:
                g = delivery["payload"]["generation"]
                assert (delivery["sender"], delivery["kind"]) == ("vigil", "alert")
                assert delivery["id"] not in self.alerts, "an alert was handed out twice"
                if delivery["payload"]["event"] == "switch_recovered":
                    assert g not in self.recoveries.values(), "two recoveries for one death"
                    assert g in self.alerts.values(), "a recovery before its death's alert"
                    assert g < self.generation, "a recovery of a switch not armed again"
                    self.recoveries[delivery["id"]] = g
                    self.acknowledge(delivery)
                    continue
                assert g not in self.alerts.values(), "two alerts for one death"
                assert g in self.recorded(), "an alert without a death"
                assert delivery["payload"]["scope"] == SCOPE
                assert delivery["payload"]["released_first"] == self.released_lease(g)
                self.alerts[delivery["id"]] = g
                self.acknowledge(delivery)
        raise AssertionError("the supervisor's mailbox never emptied")

    def acknowledge(self, delivery: dict[str, Any]) -> None:
        acknowledged = self.world.call(
            "acknowledge",
            self.supervisor_secret,
            id=delivery["id"],
            generation=delivery["generation"],
        )
        assert acknowledged["received"] is True

    # -- rules -----------------------------------------------------------------------------
    @initialize(window=st.integers(2, 60), ttl=st.integers(1, 600))
    def arm(self, window: int, ttl: int) -> None:
        self.beat(window, ttl)

    @rule(window=st.integers(2, 60), ttl=st.integers(1, 600))
    def beat(self, window: int, ttl: int) -> None:
        now = self.now()
        late = self.overdue()
        result = self.heartbeat(window)
        if late:
            self.died()
        deadline = to_ms(now) + timedelta(seconds=window)
        if self.state == "armed":  # in time: the deadline moves, nothing else happens
            assert self.deadline is not None
            assert (result["state"], result["generation"]) == ("armed", self.generation)
            self.beats += 1
            # The first beats of a generation armed after a death repeat that death.
            repeated = self.follows if self.beats <= REPEAT_DEATH_BEATS else None
            found = result["death"]["generation"] if result["death"] else None
            assert found == repeated
            self.deadline = deadline
        else:  # never armed, disarmed or dead: a new generation, and the lease taken again
            previous = self.state
            self.generation += 1
            self.state, self.deadline, self.beats = "armed", deadline, 1
            self.follows = self.generation - 1 if previous == "fired" else None
            assert (result["state"], result["generation"], result["beats"]) == (
                "armed",
                self.generation,
                1,
            )
            if previous == "fired":
                # The beat reports the death, and has finished whatever a crash left undone.
                assert result["death"]["generation"] == self.generation - 1
                assert result["death"]["completed"] == ALL_ACTIONS
            else:
                assert result["death"] is None
            lease = self.world.call(
                "acquire_lease", self.agent_secret, resource=RESOURCE, scope=SCOPE, ttl_seconds=ttl
            )["lease"]
            assert (lease["holder"], lease["state"]) == (self.agent, "held")
            self.lease_of[self.generation] = lease["generation"]
        assert parse_iso(result["deadline"]) == self.deadline
        self.check_all_finished()

    @rule()
    def disarm(self) -> None:
        late = self.overdue()
        result = self.heartbeat(5, disarm=True)
        if late:  # the deadline passed first: the death is a fact, the disarm changes nothing
            self.died()
            assert result["death"]["generation"] == self.generation
            assert result["death"]["completed"] == ALL_ACTIONS
        elif self.state == "armed":
            self.state = "disarmed"
        assert result["generation"] == self.generation
        assert result["state"] == ("failed" if self.state == "fired" else "disarmed")
        assert result["deadline"] is None
        self.check_all_finished()

    @rule(seconds=st.floats(0.1, 90))
    def advance(self, seconds: float) -> None:
        """Time passes and no alarm is delivered (the queue is slow, or down)."""
        self.clock.advance(seconds)

    @precondition(lambda self: self.state == "armed")
    @rule(offset_ms=st.sampled_from([-1, 0, 1]))
    def advance_to_the_deadline(self, offset_ms: int) -> None:
        """To the millisecond around the deadline, where the boundaries are."""
        assert self.deadline is not None
        target = self.deadline + timedelta(milliseconds=offset_ms)
        if target > self.now():
            self.clock.advance((target - self.now()).total_seconds())
            assert self.now() == target

    @rule()
    def deliver_due_alarms(self) -> None:
        """The queue delivers every due alarm once; a crashed one goes back on the queue."""
        for timer in self.world.due_alarms():
            self.deliver(timer)
        if self.overdue():
            # Every crash point is after the firing, so a due alarm has fired the switch.
            assert self.generation in self.recorded(), "an overdue switch did not fire"

    @precondition(lambda self: bool(self.world.delivered))
    @rule(data=st.data())
    def deliver_again(self, data: st.DataObject) -> None:
        """At-least-once delivery: an alarm that already ran arrives again, maybe late."""
        self.deliver(data.draw(st.sampled_from(self.world.delivered), label="timer"))

    @rule(point=st.sampled_from(CRASH_POINTS))
    def crash_next_delivery(self, point: str) -> None:
        """The alarm delivery that next reaches ``point`` dies just after it."""
        self.faults.pending = point

    @rule()
    def supervisor_polls(self) -> None:
        self.drain_alerts()
        queued = {
            g for (_, _, g), death in self.store.deaths.items() if "queue_alert" in death.done
        }
        # An alert recorded as queued has been handed out; one whose send crashed before it
        # was recorded may have been handed out already too.
        assert queued <= set(self.alerts.values())

    # -- invariants ------------------------------------------------------------------------
    @invariant()
    def recorded_deaths_are_the_models(self) -> None:
        recorded = self.recorded()
        if self.overdue() and recorded == [*self.deaths, self.generation]:
            return  # an alarm recorded the death before the next beat or disarm learnt of it
        assert recorded == self.deaths

    @invariant()
    def each_death_is_sound_so_far(self) -> None:
        for death in self.store.deaths.values():
            self.check_death(death, finished=False)

    @invariant()
    def leases_are_released_once_and_only_by_deaths(self) -> None:
        assert all(count == 1 for count in self.store.releases.values()), self.store.releases
        assert set(self.store.released_by.values()) <= {f"expiry:{SCOPE}"}
        assert set(self.store.releases) <= {(RESOURCE, self.lease_of[g]) for g in self.recorded()}

    def teardown(self) -> None:
        """Time runs far ahead and every alarm is delivered until none is left, crashed ones
        again; then every death the model expects is recorded and finished, exactly once."""
        for _ in range(50):
            if not self.world.alarms.armed:
                break
            latest = max(timer.due_at for timer in self.world.alarms.armed)
            if latest > self.now():
                self.clock.advance((latest - self.now()).total_seconds())
            self.deliver_due_alarms()
        assert self.world.alarms.armed == [], "the alarms kept re-arming"
        if self.state == "armed":  # never beaten again: it must have fired
            assert self.overdue()
            self.died()
        assert self.recorded() == self.deaths
        self.check_all_finished()
        self.drain_alerts()
        assert sorted(self.alerts.values()) == self.deaths  # one alert per death
        # One recovery per death that a beat ended: every death but the last, if it was last.
        ended = [g for g in self.deaths if g < self.generation]
        assert sorted(self.recoveries.values()) == ended
        assert self.queued_alerts() == 0
        released = {(RESOURCE, self.lease_of[g]) for g in self.deaths}
        assert len(released) == len(self.deaths)  # each death held a lease of its own
        assert self.store.releases == Counter(dict.fromkeys(released, 1))
        assert set(self.store.released_by.values()) <= {f"expiry:{SCOPE}"}
        lease = self.store.get_lease(NAMESPACE, RESOURCE)
        assert lease is not None
        assert lease.state == ("released" if self.state == "fired" else "held")
        dead_letters = self.world.call("list_dead_letters", self.supervisor_secret)
        assert dead_letters["dead_letters"] == []


SETTINGS = settings(
    max_examples=60,
    stateful_step_count=30,
    deadline=None,
    derandomize=False,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)


def test_random_histories_of_one_switch_match_the_model() -> None:
    run_state_machine_as_test(SwitchMachine, settings=SETTINGS)


def test_a_beat_that_shortens_the_window_fires_on_the_new_deadline(clock: ManualClock) -> None:
    """Found by the state machine: a shorter window needs an earlier alarm, armed by the beat
    that shortens it; the alarm for the old, later deadline then finds itself stale."""
    world = World(clock)
    _, secret = world.tenant.register(name="worker")
    world.call("heartbeat", secret, scope=SCOPE, expect_within_seconds=60)
    beaten = world.call("heartbeat", secret, scope=SCOPE, expect_within_seconds=2)
    assert parse_iso(beaten["deadline"]) == clock.now() + timedelta(seconds=2)
    world.advance(3)  # every due alarm delivered, second by second
    death = world.store.latest_death(NAMESPACE, SCOPE)
    assert death is not None
    assert death.lateness_seconds <= 1
