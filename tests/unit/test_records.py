"""The rules, without any store: each capability's transitions as methods of its records, on an
injected clock."""

from __future__ import annotations

from datetime import timedelta

from tests.contract.test_lease_store_contract import HOLDER, OTHER, lease
from tests.contract.test_store_contract import principal
from tests.contract.test_switch_contract import switch
from tests.support import error_of
from vigil.clock import ManualClock, iso
from vigil.errors import ErrorCode
from vigil.identity.records import hash_secret
from vigil.leases.records import granted
from vigil.mailboxes.records import Delivery, Envelope, Mailbox, envelope_id_for
from vigil.runs.records import Run
from vigil.sessions.records import Instruction, Session, instruction_seq
from vigil.switches.records import Beat, HeldLease


# -- versions -----------------------------------------------------------------------------
def test_every_change_moves_the_version_by_one(clock: ManualClock) -> None:
    agent = principal(clock)
    rotated = agent.rotated(hash_secret("new"), clock.advance(1))
    revoked = rotated.revoked(clock.advance(1))
    assert [agent.version, rotated.version, revoked.version] == [1, 2, 3]
    assert (rotated.secret_hash, revoked.status) == (hash_secret("new"), "revoked")
    assert agent.status == "active"  # a transition returns a new record, never changes one


# -- leases -------------------------------------------------------------------------------
def test_a_grant_takes_a_new_generation_unless_the_holder_renews_its_own(
    clock: ManualClock,
) -> None:
    now = clock.now()
    first = granted(None, "acme", "repo", None, HOLDER, "w-1", 30, now)
    assert (first.generation, first.version, first.expires_at) == (
        1,
        1,
        now + timedelta(seconds=30),
    )
    again = granted(first, "acme", "repo", "build", HOLDER, "w-2", 60, now)
    assert (again.generation, again.version, again.scope) == (1, 2, "build")
    assert error_of(granted, first, "acme", "repo", None, OTHER, None, 30, now).code is (
        ErrorCode.VERSION_CONFLICT
    )
    later = clock.advance(31)
    taken = granted(first, "acme", "repo", None, OTHER, None, 30, later)
    assert (taken.holder, taken.generation, taken.version) == (OTHER, 2, 2)


def test_only_the_live_current_generation_renews(clock: ManualClock) -> None:
    held = lease(clock)
    renewed = held.renewed(HOLDER, 1, 120, clock.advance(10))
    assert (renewed.expires_at, renewed.generation) == (clock.now() + timedelta(seconds=120), 1)
    assert error_of(held.renewed, HOLDER, 2, 60, clock.now()).code is ErrorCode.STALE_GENERATION
    assert error_of(held.renewed, OTHER, 1, 60, clock.now()).code is ErrorCode.STALE_GENERATION
    lapsed = clock.advance(60)
    assert error_of(held.renewed, HOLDER, 1, 60, lapsed).code is ErrorCode.STALE_GENERATION
    released = held.released("expiry:build", lapsed)
    assert (released.state, released.released_by, released.live(lapsed)) == (
        "released",
        "expiry:build",
        False,
    )


# -- runs ---------------------------------------------------------------------------------
def test_a_run_is_claimed_renewed_and_finished_only_by_its_holder(clock: ManualClock) -> None:
    run = Run.started("acme", "r-1", HOLDER, 30, clock.now())
    assert (run.generation, run.state(clock.now())) == (1, "running")
    assert error_of(run.claimed_by, OTHER, 30, clock.now()).code is ErrorCode.VERSION_CONFLICT
    assert run.claimed_by(HOLDER, 60, clock.now()).generation == 1
    lapsed_at = clock.advance(31)
    assert run.state(lapsed_at) == "lapsed"
    assert error_of(run.renewed, HOLDER, 30, lapsed_at).code is ErrorCode.STALE_GENERATION
    taken = run.claimed_by(OTHER, 30, lapsed_at)
    assert (taken.holder, taken.generation) == (OTHER, 2)
    finished_at = clock.advance(1)
    refused = error_of(taken.finished, OTHER, 1, "succeeded", None, finished_at).code
    assert refused is ErrorCode.STALE_GENERATION
    done = taken.finished(OTHER, 2, "succeeded", {"ok": True}, finished_at)
    assert (done.state(finished_at), done.outcome, done.result) == (
        "finished",
        "succeeded",
        {"ok": True},
    )
    assert error_of(done.claimed_by, HOLDER, 30, finished_at).code is (ErrorCode.INVALID_ARGUMENT)


# -- switches -----------------------------------------------------------------------------
def beat_at(clock: ManualClock, window: int = 30) -> Beat:
    return Beat(
        at=clock.now(),
        expect_within_seconds=window,
        on_expiry=["queue_alert", "release_leases"],
        notify_address="agent:agt_cccccccccccccccc",
        agent_id="worker-2",
    )


def test_a_beat_moves_the_deadline_and_keeps_the_actions_in_order(clock: ManualClock) -> None:
    armed = switch(clock)
    clock.advance(10)
    beaten = armed.beaten(beat_at(clock), alarm_due=armed.alarm_due)
    assert beaten.deadline == clock.now() + timedelta(seconds=30)
    assert beaten.on_expiry == ["release_leases", "queue_alert"]
    assert (beaten.beats, beaten.version, beaten.generation) == (2, 2, 1)


def test_a_switch_armed_after_a_death_is_the_next_generation(clock: ManualClock) -> None:
    armed = switch(clock)
    fire_at = clock.advance(31)
    assert armed.overdue(fire_at)
    death = armed.death(fire_at)
    # mark_failed is a record only: the death is made with it done.
    assert (death.generation, death.lateness_seconds, death.pending()) == (
        1,
        1.0,
        ["release_leases", "notify"],
    )
    assert death.done == {"mark_failed": {"failed_at": iso(fire_at)}}
    fired = armed.model_copy(update={"state": "fired"})
    assert fired.public_state(death) == "failed"
    assert fired.public_state(None) == "expired"
    recorded = death.recorded("release_leases", {"released": []})
    assert (recorded.pending(), recorded.version) == (["notify"], 2)
    # A death recorded before channels existed has no notification step to run; one recorded
    # before mark_failed was done by the firing runs it as a step.
    assert death.model_copy(update={"notify": False}).pending() == ["release_leases"]
    assert death.model_copy(update={"done": {}}).pending() == [
        "release_leases",
        "mark_failed",
        "notify",
    ]
    again = type(armed).armed_after(fired, death, beat_at(clock), "acme", armed.scope, HOLDER)
    assert (again.generation, again.follows_death, again.beats, again.version) == (2, 1, 1, 2)
    assert again.alarm_due == again.deadline


# -- mailboxes ----------------------------------------------------------------------------
def test_each_hand_out_raises_the_generation_and_keeps_the_first_delivery_time(
    clock: ManualClock,
) -> None:
    mailbox = Mailbox(
        namespace="acme",
        address=f"agent:{HOLDER}",
        owner=HOLDER,
        queue_name="q",
        created_at=clock.now(),
    )
    envelope = Envelope(
        id=envelope_id_for("one"),
        namespace="acme",
        address=mailbox.address,
        sender="vigil",
        kind="alert",
        payload={},
        sent_at=clock.now(),
    )
    first_at = clock.now()
    first = Delivery.handed_out(None, envelope, mailbox, "m-1", "r-1", 30, first_at)
    again = Delivery.handed_out(first, envelope, mailbox, "m-1", "r-2", 30, clock.advance(31))
    assert (first.generation, again.generation, again.version) == (1, 2, 2)
    assert again.first_delivered_at == first_at
    assert again.usage(envelope).delivered_at == first_at
    done = again.acknowledged(clock.now())
    assert (done.state, done.version, done.leased(clock.now())) == ("acknowledged", 3, False)


# -- sessions -----------------------------------------------------------------------------
def test_a_beat_keeps_what_it_leaves_out_and_instructions_are_numbered(
    clock: ManualClock,
) -> None:
    reported = {
        "status": None,
        "current_step": "reading",
        "progress_percent": 5.0,
        "step_index": None,
        "step_count": None,
    }
    session = Session.begun("acme", "s-1", HOLDER, reported, 0, clock.now())
    assert (session.status, session.current_step, session.version) == ("active", "reading", 1)
    later = session.beaten({"status": "blocked", "current_step": None}, 0, clock.advance(5))
    assert (later.status, later.current_step, later.beats, later.version) == (
        "blocked",
        "reading",
        2,
        2,
    )
    posted = Instruction.posted(
        later.model_copy(update={"last_seq": 6}), "stop", OTHER, clock.now()
    )
    assert (posted.seq, instruction_seq(posted.id), posted.state) == (7, 7, "pending")
    handed = posted.handed_out(clock.now()).handed_out(clock.now())
    assert (handed.state, handed.delivery_count) == ("delivered", 2)
    assert handed.acknowledged(clock.now()).state == "acknowledged"


def test_a_death_keeps_counts_and_the_first_names_of_what_it_released(
    clock: ManualClock,
) -> None:
    death = switch(clock).death(clock.advance(31))
    for start in range(0, 12, 4):
        batch = [HeldLease(resource=f"r{i:02d}", generation=i) for i in range(start, start + 4)]
        assert death.page(batch).number == start // 4 + 1
        death = death.released_batch(batch, after=batch[-1].resource)
    assert (death.release.released, death.release.pages, death.release.after) == (12, 3, "r11")
    assert [held.resource for held in death.release.first] == ["r00", "r01", "r02", "r03", "r04"]
    assert death.released_batch([], after="r20").release.pages == 3  # an empty batch: no page
