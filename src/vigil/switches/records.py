"""Dead-man switches and the deaths they observe.

A switch is one per scope in a namespace. Beating it in time moves its deadline; missing the
deadline fires it: exactly one caller wins the conditional change from armed to fired, and
that change creates the death record which lists the actions to run and records each one as
it is done, so an alarm delivered again after a crash finishes what is missing and repeats
nothing.

Every record here is bounded, whatever the holder held: the release of a scope's leases goes
in batches, each recorded as a page of its own beside the death, and the death keeps only the
counts, how far the release got, and the first few names.

An operator may pause the switches under a scope prefix: while a pause covers a switch, a
missed deadline holds it instead of firing it, and once its pauses end it gets its own window
again, from their end (its grace). ``Switch.reprieve`` is that rule.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, NamedTuple

from pydantic import Field

from vigil.clock import iso, to_ms
from vigil.kit.principals import new_id
from vigil.kit.records import Record, Versioned
from vigil.leases.records import Lease
from vigil.switches.calendars import Calendar

Action = Literal["release_leases", "mark_failed", "queue_alert"]
# The alert is last so that it can say what was released.
ACTION_ORDER: tuple[Action, ...] = ("release_leases", "mark_failed", "queue_alert")
# A death's steps: its actions, then the notification of the channels whose rules want it, then,
# once its switch is beaten again, the news of its recovery to whoever was told of the death.
Step = Literal["release_leases", "mark_failed", "queue_alert", "notify", "recovered"]
SwitchState = Literal["armed", "disarmed", "fired"]
# What callers are told: a fired switch is "failed" when its death marked the work failed.
PublicState = Literal["armed", "disarmed", "failed", "expired"]

MIN_WINDOW_SECONDS = 2
MAX_WINDOW_SECONDS = 2_592_000
# The leases one batch of release_leases releases: one transaction of two items per lease (the
# lease, and its copy in the scope's partition removed) and two more (the page, the death).
RELEASE_BATCH = 40
# An armed switch is "expiring soon", to the people watching it, with less than this part of its
# window left: an agent that beats every third of its window, as the README asks, never gets
# there, so the console and the CLI show only switches whose beats are late.
EXPIRING_PART = 1 / 3
# How many released leases a death names itself (and so the alert and the heartbeat); all of
# them are in its pages, which resume_packet reads.
NAMED_RELEASES = 5
# A switch held by a pause has its alarm come back every window of its own, but not more often
# than once a minute, nor less often than every 15 minutes (the timer queue's longest delay, so a
# hold never needs the Scheduler): that is how it learns that a pause was resumed early. A
# pause's end, when it has one, brings the alarm back then too.
HOLD_CHECK_MIN_SECONDS = 60
HOLD_CHECK_MAX_SECONDS = 900
# A pause lasts at most as long as the longest window.
MAX_PAUSE_SECONDS = MAX_WINDOW_SECONDS
# A chain of dependencies (a switch, what it depends on, what that depends on...) is at most
# this many switches above the one that names it: a death walks it, and a change checks it.
MAX_DEPENDENCY_DEPTH = 4
# A dependant that dies while what it depends on has not yet been judged (armed, not beaten
# since, its deadline at most this far after the death) waits for that deadline before it is
# told: if its parent dies too, it is told in its parent's alert instead.
MAX_DEPENDENCY_HOLD = timedelta(minutes=15)
# How many dependants a switch's alert names (it counts them all).
NAMED_DEPENDANTS = 50
# The pauses in force at once in a namespace: the expiry path reads them all, so they stay few.
MAX_PAUSES = 100
# How long an ended pause is kept: long enough for every switch it held to see it end (within a
# hold check) and take its grace from that end.
PAUSE_RETAIN = timedelta(days=1)
# A switch keeps its last day of beats as the latest beat of each half hour: one map entry per
# half hour, written by the steady beat's own update (no read), 48 of them, a few hundred bytes
# that keep the item under the 1 KB of one write unit.
BEAT_SLOT_MINUTES = 30
BEAT_SLOTS = 48
# A switch that dies FLAP_DEATHS times within FLAP_WINDOW is flapping: the death that makes it
# so is told as one alert (switch.flapping), and the deaths and recoveries after it are
# recorded but not told, until a whole FLAP_WINDOW passes without a death: then it has
# settled (switch.settled), and its next death is told as any death is.
FLAP_DEATHS = 3
FLAP_WINDOW = timedelta(hours=1)
Flapping = Literal["began", "ongoing", "ended"]
# A calendar's beat this long before a slot is that slot's: a job's clock may run a little ahead
# of ours, and its beat then comes a moment before the slot it ran for. Less than the shortest
# spacing of slots (a minute), so that no slot is skipped for it.
EARLY_BEAT = timedelta(seconds=30)
# A beat may begin a run of the work (start: its finish is expected within the beat's window,
# and, if it says so, no sooner than a floor) or end one (finish).
Phase = Literal["start", "finish"]


def with_beat(recent: Mapping[int, int], at: datetime) -> dict[int, int]:
    """``recent`` (half-hour slot of the day -> epoch minute of its latest beat) with a beat
    at ``at``; the steady beat's update sets the same entry."""
    slot, minute = beat_slot(at)
    return {**recent, slot: minute}


def beat_slot(at: datetime) -> tuple[int, int]:
    """Where a beat at ``at`` goes: its slot and the epoch minute kept in it."""
    minute = int(at.timestamp()) // 60
    return (minute // BEAT_SLOT_MINUTES) % BEAT_SLOTS, minute


def beats_of_the_day(recent: Mapping[int, int], now: datetime) -> list[datetime]:
    """The latest beat of each of the day's half hours up to ``now`` (this one and the 47
    before it), oldest first; an entry older than that is a slot not written since."""
    this_minute = int(now.timestamp()) // 60
    first_slot = this_minute // BEAT_SLOT_MINUTES - BEAT_SLOTS + 1
    minutes = sorted(
        m for m in recent.values() if first_slot <= m // BEAT_SLOT_MINUTES and m <= this_minute
    )
    return [datetime.fromtimestamp(m * 60, UTC) for m in minutes]


class Switch(Versioned):
    namespace: str
    scope: str
    holder: str  # the principal that armed this generation
    agent_id: str | None
    state: SwitchState
    generation: int  # grows each time the switch is armed after a disarm or a death
    deadline: datetime
    expect_within_seconds: int
    on_expiry: list[Action]
    notify_address: str | None
    armed_at: datetime
    last_beat_at: datetime
    beats: int  # beats of this generation
    alarm_due: datetime  # the due time of the newest alarm armed for this generation
    # The generation whose death this one was armed after: its first beats repeat that death,
    # so that a lost answer cannot hide it from the worker.
    follows_death: int | None = None
    # The latest beat of each half hour (with_beat), across generations.
    recent: dict[int, int] = Field(default_factory=dict)
    # When it died lately, across generations: at most FLAP_DEATHS - 1, within FLAP_WINDOW of
    # the beat that armed this generation.
    flaps: list[datetime] = Field(default_factory=list)
    # Since when it is flapping (the death that made it so), until it settles.
    flapping_since: datetime | None = None
    # The scope of the switch this one depends on (its host, its orchestrator): while that one
    # is dead, this one's deaths are told in its alert instead of apart.
    depends_on: str | None = None
    # When beats are expected, if on a schedule: the next slot's due time after each beat
    # (Beat.deadline), instead of a window after it.
    calendar: Calendar | None = None
    # The start beat of a run not yet finished, and the moment before which its finish is
    # told as too short (switch.ran_short), if the start beat set a floor.
    run_started_at: datetime | None = None
    short_before: datetime | None = None

    @classmethod
    def armed_after(
        cls,
        previous: Switch | None,
        death: Death | None,
        beat: Beat,
        namespace: str,
        scope: str,
        holder: str,
    ) -> Switch:
        """A new generation, armed by ``holder``'s beat: after nothing, a disarm or a death.
        It keeps the deaths of the last FLAP_WINDOW, and whether they make it flap."""
        flaps = previous.flaps if previous is not None else []
        flapping_since = previous.flapping_since if previous is not None else None
        if death is not None:
            flaps = [*flaps, death.fired_at]
            if death.flapping == "began":
                flapping_since = death.fired_at
            elif death.flapping == "ended":
                flapping_since = None  # that death told it settled, before its own news
        since = beat.at - FLAP_WINDOW
        terms = beat.first_terms()
        if beat.phase == "start" and previous is not None:
            terms["calendar"] = previous.calendar  # a run's start keeps the calendar
        return cls(
            namespace=namespace,
            scope=scope,
            holder=holder,
            state="armed",
            generation=previous.generation + 1 if previous is not None else 1,
            armed_at=beat.at,
            beats=1,
            alarm_due=beat.deadline,
            version=previous.version + 1 if previous is not None else 1,
            follows_death=death.generation if death is not None else None,
            recent=with_beat(previous.recent if previous is not None else {}, beat.at),
            flaps=[moment for moment in flaps if moment > since][-(FLAP_DEATHS - 1) :],
            flapping_since=flapping_since,
            **terms,
        )

    def flapping(self, now: datetime) -> Flapping | None:
        """Whether a death at ``now`` finds this switch flapping: one that makes it so
        (``began``), one while it is (``ongoing``), the first after it settled unsaid (``ended``:
        a whole FLAP_WINDOW passed without a death, and no alarm came to say so); None if its
        deaths are few enough."""
        dead_lately = [moment for moment in self.flaps if moment > now - FLAP_WINDOW]
        if self.flapping_since is not None:
            return "ongoing" if dead_lately else "ended"
        if len(dead_lately) + 1 >= FLAP_DEATHS:
            return "began"
        return None

    def settled(self, now: datetime) -> bool:
        """Whether this switch, flapping, has gone a whole FLAP_WINDOW without a death."""
        return self.flapping_since is not None and all(
            moment <= now - FLAP_WINDOW for moment in self.flaps
        )

    def beaten(self, beat: Beat, alarm_due: datetime) -> Switch:
        """A beat of this generation by its holder, on the slow path (the fast path is the
        same change made by one conditional update, and leaves a run's start again here)."""
        changes = beat.changes()
        if beat.phase == "start" and self.run_started_at == self.last_beat_at:
            # A start again, with no beat since the run's start: a retried call, as likely as
            # a new run. The run keeps its start, and its floor, so that its length is true.
            changes |= {"run_started_at": self.run_started_at, "short_before": self.short_before}
        return self.changed(
            **changes,
            alarm_due=alarm_due,
            beats=self.beats + 1,
            recent=with_beat(self.recent, beat.at),
        )

    def alarm_moved(self, due: datetime) -> Switch:
        """The switch with its newest alarm due at ``due`` (the store moves the version)."""
        return self.model_copy(update={"alarm_due": due})

    def disarmed(self) -> Switch:
        return self.changed(state="disarmed")

    def overdue(self, now: datetime) -> bool:
        return self.state == "armed" and self.deadline <= now

    def reprieve(self, pauses: Iterable[Pause], now: datetime) -> Reprieve | None:
        """Why this switch, armed and past its deadline at ``now``, does not fire yet: pauses
        in force cover it (it is held, and its alarm comes back at the first of their ends or
        at its next hold check), or pauses that held it ended less than its window ago (its
        grace runs until the last of those ends plus its window). None: it fires."""
        pauses = list(pauses)
        holding = [pause for pause in pauses if pause.covers(self, now)]
        if holding:
            # To the millisecond, as stored: the alarm that comes back must match alarm_due.
            check = to_ms(now + timedelta(seconds=hold_check_seconds(self.expect_within_seconds)))
            ends = [pause.ends_at for pause in holding if pause.ends_at is not None]
            return Reprieve(held_by=holding, until=min([check, *ends]))
        grace = self.grace_deadline(pauses)
        if grace is not None and grace > now:
            return Reprieve(held_by=[], until=grace)
        return None

    def grace_deadline(self, pauses: Iterable[Pause]) -> datetime | None:
        """The deadline this switch has once the pauses that held it past its own deadline
        have ended: the last of their ends plus its window; None if no pause did. On a
        calendar, a pause that covered the slot (from its start to its end) excuses it, grace
        and all, as the job's own scheduler may have been stopped too: the switch is then due
        at the first slot after the pauses."""
        calendar = self.calendar if self.run_started_at is None else None
        # On a calendar, the slot that the deadline is of.
        slot = self.deadline - timedelta(seconds=calendar.grace_seconds) if calendar else None
        ended = [
            (pause, end)
            for pause in pauses
            if pause.reaches(self) and (end := pause.ends_at) is not None and end > pause.paused_at
        ]
        covered = [
            end for pause, end in ended if slot is not None and pause.paused_at <= slot < end
        ]
        ends = covered + [end for _, end in ended if end > self.deadline]
        if not ends:
            return None
        if calendar is not None and covered:
            return calendar.due_after(max(ends))
        return max(ends) + timedelta(seconds=self.expect_within_seconds)

    def missed(self, pauses: Iterable[Pause]) -> datetime:
        """The deadline this switch missed, firing: its own, or its grace's if pauses held it
        past its own."""
        return self.grace_deadline(pauses) or self.deadline

    def graced(self, deadline: datetime) -> Switch:
        """The switch given ``deadline`` by its grace, with its alarm due then (the store
        moves the version); no beat: its last beat and its beats stay as they were."""
        return self.model_copy(update={"deadline": deadline, "alarm_due": deadline})

    def death(self, now: datetime, missed: datetime | None = None) -> Death:
        """The death this switch's expiry at ``now`` records: the actions still to run, and
        the deadline missed (``missed``, when a grace after a pause moved it; else its own).
        ``mark_failed`` is a record and nothing else, so it is done in the firing's own write:
        a burst of deaths makes one write fewer each."""
        done: dict[str, Any] = {}
        if "mark_failed" in self.on_expiry:
            done["mark_failed"] = {"failed_at": iso(now)}
        return Death(
            namespace=self.namespace,
            scope=self.scope,
            generation=self.generation,
            holder=self.holder,
            agent_id=self.agent_id,
            deadline=missed or self.deadline,
            fired_at=now,
            actions=ordered(self.on_expiry),
            notify_address=self.notify_address if "queue_alert" in self.on_expiry else None,
            done=done,
            notify=True,
            flapping=self.flapping(now),
            depends_on=self.depends_on,
            last_beat_at=self.last_beat_at,
            flapping_since=self.flapping_since,
            run_started_at=self.run_started_at,
            version=1,
        )

    def public_state(self, death: Death | None) -> PublicState:
        if self.state != "fired":
            return self.state
        return "failed" if death is not None and "mark_failed" in death.actions else "expired"

    @property
    def listed_state(self) -> PublicState:
        """The public state without reading the death: a fired switch keeps the on_expiry of
        the generation that fired, which is what its death's actions are."""
        if self.state != "fired":
            return self.state
        return "failed" if "mark_failed" in self.on_expiry else "expired"


class Pause(Versioned):
    """An operator's pause of the switches whose scope begins with ``scope_prefix``, one per
    prefix in a namespace. It ends at ``until``, or for each switch at that switch's next beat
    (``until_next_beat``), whichever comes first if both are set, or when it is resumed."""

    namespace: str
    id: str
    scope_prefix: str
    paused_by: str
    paused_at: datetime
    until: datetime | None
    until_next_beat: bool
    reason: str | None
    resumed_at: datetime | None = None
    resumed_by: str | None = None

    @classmethod
    def begun(
        cls,
        previous: Pause | None,
        namespace: str,
        scope_prefix: str,
        paused_by: str,
        now: datetime,
        until: datetime | None,
        until_next_beat: bool,
        reason: str | None,
    ) -> Pause:
        """A new pause of ``scope_prefix``, in the place of the ended ``previous`` one, if
        any (its version goes on from there)."""
        return cls(
            namespace=namespace,
            id=new_id("pau"),
            scope_prefix=scope_prefix,
            paused_by=paused_by,
            paused_at=now,
            until=until,
            until_next_beat=until_next_beat,
            reason=reason,
            version=previous.version + 1 if previous is not None else 1,
        )

    @property
    def ends_at(self) -> datetime | None:
        """When it ends for every switch: at ``until`` or when resumed, whichever is first;
        None while neither is known."""
        ends = [moment for moment in (self.until, self.resumed_at) if moment is not None]
        return min(ends) if ends else None

    def in_force(self, now: datetime) -> bool:
        ends = self.ends_at
        return ends is None or now < ends

    def reaches(self, switch: Switch) -> bool:
        """Whether this pause is about ``switch``: its scope begins with the prefix, and, for
        a pause until the next beat, it has not been beaten since the pause began."""
        return (
            switch.namespace == self.namespace
            and switch.scope.startswith(self.scope_prefix)
            and not (self.until_next_beat and switch.last_beat_at > self.paused_at)
        )

    def covers(self, switch: Switch, now: datetime) -> bool:
        return self.in_force(now) and self.reaches(switch)

    def resumed(self, by: str, now: datetime) -> Pause:
        return self.changed(resumed_at=now, resumed_by=by)


class Reprieve(NamedTuple):
    """What keeps an overdue switch from firing: the pauses that hold it (none in its grace),
    and until when: its next alarm, and, in its grace, its new deadline."""

    held_by: list[Pause]
    until: datetime


def hold_check_seconds(window_seconds: int) -> int:
    return min(max(window_seconds, HOLD_CHECK_MIN_SECONDS), HOLD_CHECK_MAX_SECONDS)


# What a switch armed by a beat that names no on_expiry runs when it fires.
DEFAULT_ACTIONS: tuple[Action, ...] = ("mark_failed",)


class Beat(Record):
    """What one heartbeat asks for: the next deadline and the terms of the switch. A term it
    leaves out (None) stays as the armed switch has it; a switch armed anew by it takes the
    defaults: DEFAULT_ACTIONS, no notify_address, no agent_id, no depends_on. Its calendar is
    the rule of its own deadline, as its window is: a beat without one leaves none, but for a
    run's start, whose deadline is its run's, and which keeps the calendar as it is."""

    at: datetime
    expect_within_seconds: int
    on_expiry: list[Action] | None
    notify_address: str | None
    agent_id: str | None
    depends_on: str | None = None
    calendar: Calendar | None = None  # made by Calendar.parse at ``at``: it has a slot after
    phase: Phase | None = None
    min_run_seconds: int | None = None  # with phase start

    @property
    def deadline(self) -> datetime:
        """A run's start is due to finish within the window; else the next slot of the
        calendar is due (a beat up to EARLY_BEAT before a slot is that slot's), or, without
        one, the window's end."""
        if self.calendar is not None and self.phase != "start":
            return self.calendar.due_after(self.at + EARLY_BEAT)
        return self.at + timedelta(seconds=self.expect_within_seconds)

    def changes(self) -> dict[str, Any]:
        """The switch's attributes that this beat sets: those it names, and its calendar and
        run (a None there clears the attribute: the fast path removes it)."""
        given: dict[str, Any] = {
            "deadline": self.deadline,
            "expect_within_seconds": self.expect_within_seconds,
            "last_beat_at": self.at,
        }
        if self.phase != "start":
            given["calendar"] = self.calendar
        if self.on_expiry is not None:
            given["on_expiry"] = ordered(self.on_expiry)
        if self.notify_address is not None:
            given["notify_address"] = self.notify_address
        if self.agent_id is not None:
            given["agent_id"] = self.agent_id
        if self.depends_on is not None:
            given["depends_on"] = self.depends_on
        if self.phase == "start":
            given["run_started_at"] = self.at
            given["short_before"] = (
                self.at + timedelta(seconds=self.min_run_seconds) if self.min_run_seconds else None
            )
        elif self.phase == "finish":
            given["run_started_at"] = given["short_before"] = None
        return given

    def first_terms(self) -> dict[str, Any]:
        """The attributes of a switch this beat arms anew: its own, or the defaults."""
        defaults = {
            "on_expiry": list(DEFAULT_ACTIONS),
            "notify_address": None,
            "agent_id": None,
            "depends_on": None,
            "calendar": None,
            "run_started_at": None,
            "short_before": None,
        }
        return defaults | self.changes()

    def ran_short(self, switch: Switch) -> bool:
        """Whether this beat finishes ``switch``'s run sooner than its start beat's floor."""
        return (
            self.phase == "finish"
            and switch.short_before is not None
            and self.at < switch.short_before
        )


class HeldLease(Record):
    resource: str
    generation: int


class Release(Record):
    """How far release_leases got: the scope's leases are walked in resource order, a batch at
    a time, and each batch's released leases are kept as a page of their own."""

    after: str | None = None  # the last resource of the scope looked at
    released: int = 0
    pages: int = 0
    first: list[HeldLease] = Field(default_factory=list)  # the first NAMED_RELEASES released

    def advanced(self, batch: list[HeldLease], after: str | None) -> Release:
        return Release(
            after=after,
            released=self.released + len(batch),
            pages=self.pages + (1 if batch else 0),
            first=(self.first + batch)[:NAMED_RELEASES],
        )


class ReleasedPage(Record):
    """One batch of the leases a death released."""

    namespace: str
    scope: str
    generation: int
    number: int  # from 1
    leases: list[HeldLease]


class Death(Versioned):
    """What was observed when a switch fired, and what its actions did."""

    namespace: str
    scope: str
    generation: int
    holder: str
    agent_id: str | None
    deadline: datetime
    fired_at: datetime
    actions: list[Action]  # in ACTION_ORDER
    notify_address: str | None
    release: Release = Field(default_factory=Release)
    done: dict[str, dict[str, Any]]  # step -> its recorded outcome
    # Whether the channels are notified, last (deaths recorded before channels existed were not).
    notify: bool = False
    # When the switch was beaten again, and by whom: the end of this death's downtime.
    recovered_at: datetime | None = None
    recovered_by: str | None = None
    # Whether this death made its switch flap, or came while it did (Switch.flapping).
    flapping: Flapping | None = None
    # The switch its switch depended on when it fired, and that switch's last beat.
    depends_on: str | None = None
    last_beat_at: datetime | None = None
    # Since when its switch flapped, for a death that found the flapping over (``ended``).
    flapping_since: datetime | None = None
    # When the run it died in began (its start beat): it did not finish in time.
    run_started_at: datetime | None = None

    @property
    def lateness_seconds(self) -> float:
        return round((self.fired_at - self.deadline).total_seconds(), 3)

    def pending(self) -> list[Step]:
        steps: list[Step] = [action for action in self.actions if action not in self.done]
        if self.notify and "notify" not in self.done:
            steps.append("notify")
        if self.recovered_at is not None and "recovered" not in self.done:
            steps.append("recovered")
        return steps

    @property
    def downtime_seconds(self) -> float | None:
        """From the deadline missed to the beat that armed the switch again; None until then."""
        if self.recovered_at is None:
            return None
        return round((self.recovered_at - self.deadline).total_seconds(), 3)

    def recovery(self, at: datetime, by: str) -> Death:
        """This death ended by ``by``'s beat at ``at``: its switch is armed again."""
        return self.changed(recovered_at=at, recovered_by=by)

    @property
    def position(self) -> str:
        """Where the death sorts among its namespace's deaths: by when it fired, then by a
        digest of its scope (short, whatever the scope's length) and its generation."""
        fired_ms = int(self.fired_at.timestamp() * 1000)
        digest = hashlib.sha256(self.scope.encode()).hexdigest()[:16]
        return f"{fired_ms:015d}#{digest}#{self.generation:012d}"

    def releases(self, lease: Lease) -> bool:
        """Whether release_leases frees ``lease``, found in this death's scope: the holder's,
        held, and granted before the death (a lease taken since belongs to what came after)."""
        return (
            lease.holder == self.holder
            and lease.state == "held"
            and lease.acquired_at <= self.fired_at
        )

    def released_batch(self, batch: list[HeldLease], after: str | None) -> Death:
        return self.changed(release=self.release.advanced(batch, after))

    def page(self, batch: list[HeldLease]) -> ReleasedPage:
        """The page that records ``batch``, the next after those already recorded."""
        return ReleasedPage(
            namespace=self.namespace,
            scope=self.scope,
            generation=self.generation,
            number=self.release.pages + 1,
            leases=batch,
        )

    def recorded(self, action: Step, outcome: dict[str, Any]) -> Death:
        return self.changed(done={**self.done, action: outcome})


def ordered(actions: list[Action]) -> list[Action]:
    return [action for action in ACTION_ORDER if action in actions]


def expiring_soon(deadline: datetime, window_seconds: float, now: datetime) -> bool:
    """Whether an armed switch's deadline is under EXPIRING_PART of its window away."""
    return (deadline - now).total_seconds() < window_seconds * EXPIRING_PART


def pause_reaches(pause: Mapping[str, Any], switch: Mapping[str, Any]) -> bool:
    """``Pause.reaches``, on the tools' views (list_pauses' pause in force, list_switches'
    switch), for those that read them: the console and the people's CLI."""
    if not str(switch["scope"]).startswith(str(pause["scope_prefix"])):
        return False
    beaten_since = datetime.fromisoformat(str(switch["last_beat_at"])) > datetime.fromisoformat(
        str(pause["paused_at"])
    )
    return not (pause["until_next_beat"] and beaten_since)
