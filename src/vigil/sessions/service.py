"""Session use cases: the working agent's beat, and the people steering it posting and
reading instructions and listing sessions.

Instructions are numbered per session as they are posted (``vigil.sessions.records`` says why
a reader that takes the session's last number first can miss none). A beat reads the session,
then the open instructions after its starting point and up to that last number, in order. So
one walk (a series of beats, each passing the previous ``nextInstructionCursor``) shows each
instruction at most once and in order, and by its end every one that was open when it began;
one posted meanwhile comes on a later page or in the next walk. Whatever a beat hands out is
recorded as delivered in the same transaction as the beat, and comes back in later walks until
the agent acknowledges it. The session remembers how far everything is acknowledged
(``acked_through``), so a new walk starts at the first open instruction without reading the
acknowledged ones before it.

Acknowledging anything the session was never handed is refused before anything is written.
The checks that make the write safe are conditions, not the earlier reads: the session's
version (beats race only each other; posting moves ``last_seq`` alone), each delivery on the
count it was read with, each acknowledgment on the instruction still being delivered.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from vigil.alarms.kinds import STALE
from vigil.alarms.timers import Alarms, Timer
from vigil.clock import Clock, to_ms
from vigil.errors import VigilError, forbidden, not_found
from vigil.identity.records import Caller
from vigil.kit.paging import scan_page
from vigil.kit.publish import Publish
from vigil.kit.retry import R, retry_on_conflict, update_versioned
from vigil.kit.uow import UnitOfWork
from vigil.observability import get_logger, log_event
from vigil.sessions.events import InstructionPosted
from vigil.sessions.records import (
    PAGE_SIZE,
    Instruction,
    Session,
    SessionOutcome,
    instruction_seq,
)
from vigil.sessions.store import SessionStore

log = get_logger("vigil.sessions")

INSTRUCTIONS_PAGE = 25
SESSIONS_PAGE = 50
# One list_sessions call examines at most this many sessions, so that looking for the few
# stale ones returns a short page and a cursor rather than reading a whole namespace.
SESSIONS_SCAN_BUDGET = 500


class BeatOutcome(NamedTuple):
    session: Session
    delivered: list[Instruction]  # handed out by this beat, as recorded
    acknowledged: list[str]  # the ids the beat acknowledged, as the agent named them
    unknown: list[str]  # the ids it named that this session never handed out
    next_after: int | None  # where the walk continues; None when it is complete


def _received(
    store: SessionStore, namespace: str, current: Session | None, ids: list[str]
) -> tuple[list[Instruction], list[str]]:
    """The instructions named by ``ids`` that this session has handed out, and the ids that
    name nothing it handed out: those are reported back, and the rest of the beat stands."""
    stored: dict[str, Instruction] = {}
    if current is not None and ids:
        found = instructions_by_id(namespace, current.session_id, ids, store=store)
        stored = {id_: i for id_, i in found.items() if i.state != "pending"}
    return [stored[i] for i in ids if i in stored], [i for i in ids if i not in stored]


def _page(
    store: SessionStore, current: Session | None, after: int, acknowledging: set[int]
) -> tuple[list[Instruction], bool, int]:
    """The next page of open instructions after ``after``, whether more follow, and how far
    every instruction is now known to be acknowledged."""
    if current is None:
        return [], False, 0
    start = max(after, current.acked_through)
    limit = PAGE_SIZE + 1 + len(acknowledging)
    found = store.open_instructions(
        current.namespace, current.session_id, start, current.last_seq, limit
    )
    remaining = [i for i in found if i.seq not in acknowledging]
    acked_through = current.acked_through
    if start == current.acked_through:
        # Between the start and the first instruction still open, all are acknowledged, or
        # are being acknowledged by this beat: later walks need not read them again. Found
        # rows short of the limit mean the range was read to its end.
        acked_through = remaining[0].seq - 1 if remaining else current.last_seq
    return remaining[:PAGE_SIZE], len(remaining) > PAGE_SIZE, acked_through


def beat(
    caller: Caller,
    session_id: str,
    reported: dict[str, Any],
    acknowledging: list[str],
    after: int,
    *,
    store: SessionStore,
    uow: UnitOfWork,
    clock: Clock,
    alarms: Alarms,
    present: Callable[[BeatOutcome], R],
) -> R:
    """One beat of ``caller``'s session: what it ``reported`` (None keeps the last value),
    the instructions it acknowledges, and the next page of its walk after ``after``. A
    session no timer watches (a new one, one that went stale) gets one, armed first."""
    namespace = caller.namespace
    ack_ids = list(dict.fromkeys(acknowledging))

    def attempt() -> R:
        now = to_ms(clock.now())
        current = store.get_session(namespace, session_id)
        if current is not None and current.owner != caller.principal_id:
            raise not_found("session")
        received, unknown = _received(store, namespace, current, ack_ids)
        acknowledged = [i.acknowledged(now) for i in received if i.state == "delivered"]
        page, more, acked_through = _page(store, current, after, {i.seq for i in received})
        delivered = [i.handed_out(now) for i in page]
        if current is None:
            session = Session.begun(
                namespace, session_id, caller.principal_id, reported, acked_through, now
            )
        else:
            session = current.beaten(reported, acked_through, now)
        if _unwatched(session, now):
            watch = Timer(kind=STALE, namespace=namespace, key=session_id, due_at=session.stale_at)
            try:
                alarms.arm(watch, now)
            except VigilError as error:
                # The beat matters more than its watch: the next beat arms one.
                log_event(log, "session watch not armed", code=error.code.value)
            else:
                session = session.model_copy(update={"watch_due": watch.due_at})
        outcome = BeatOutcome(
            session,
            delivered,
            [i.id for i in received],
            unknown,
            page[-1].seq if more else None,
        )
        result = present(outcome)
        uow.commit(store.save_beat(session, delivered, acknowledged), result=result)
        return result

    return retry_on_conflict(attempt, "the session")


# A watch this far past its time was lost (its timer failed for good): a beat arms another.
WATCH_LOST_AFTER = timedelta(minutes=5)


def _unwatched(session: Session, now: datetime) -> bool:
    """Whether no timer watches ``session`` for staleness: none was armed since it went
    stale (or began), or the one armed is long overdue."""
    return session.watch_due is None or session.watch_due + WATCH_LOST_AFTER < now


def post(
    caller: Caller,
    session_id: str,
    body: str,
    now: datetime,
    *,
    store: SessionStore,
    uow: UnitOfWork,
    publish: Publish,
    present: Callable[[Instruction], R],
) -> R:
    """Posts an instruction to the session, with its agent's event that it waits (committed
    together: a lost race for the agent's feed is tried again, as one for the session)."""
    if not caller.is_overseer:
        raise forbidden("only people and operators may post instructions")

    def attempt() -> R:
        session = store.get_session(caller.namespace, session_id)
        if session is None:
            raise not_found("session")
        session.require_open("takes no more instructions")
        instruction = Instruction.posted(session, body, caller.principal_id, to_ms(now))
        result = present(instruction)
        told = publish(
            "instruction.posted",
            InstructionPosted.of(session, instruction),
            namespace=caller.namespace,
            occurred_at=instruction.posted_at,
        )
        uow.commit(store.save_instruction(instruction), *told.writes, result=result)
        return result

    return retry_on_conflict(attempt, "the session's instructions")


def end(
    caller: Caller,
    session_id: str,
    outcome: SessionOutcome,
    now: datetime,
    *,
    store: SessionStore,
    uow: UnitOfWork,
    present: Callable[[Session], R],
) -> R:
    """``caller``'s session ends with ``outcome``, written on the version it was read at: a
    beat that lands first is kept, and the end is decided again on what it wrote."""

    def ended(current: Session | None) -> Session:
        if current is None or current.owner != caller.principal_id:
            raise not_found("session")
        return current.ended(outcome, to_ms(now))

    return update_versioned(
        uow,
        read=lambda: store.get_session(caller.namespace, session_id),
        change=ended,
        save=lambda session, _: store.save_beat(session, [], []),
        present=present,
        what="the session",
    )


def instructions_by_id(
    namespace: str, session_id: str, ids: list[str], *, store: SessionStore
) -> dict[str, Instruction]:
    """The session's stored instructions by id, among those ``ids`` may name (one batch read);
    an id that names none, or whose number names another instruction, is not among them."""
    seqs = [seq for seq in map(instruction_seq, ids) if seq is not None]
    found = store.get_instructions(namespace, session_id, seqs) if seqs else []
    return {i.id: i for i in found}


def instructions_page(
    caller: Caller, session_id: str, after: int, *, store: SessionStore
) -> tuple[Session, list[Instruction], int | None]:
    """The session, its instructions numbered after ``after`` in posting order, and the number
    to continue after (None at the end). For people, operators and the session's owner."""
    session = store.get_session(caller.namespace, session_id)
    if session is None or not (caller.is_overseer or session.owner == caller.principal_id):
        raise not_found("session")
    found = store.list_instructions(
        session.namespace, session.session_id, after, INSTRUCTIONS_PAGE + 1
    )
    page = found[:INSTRUCTIONS_PAGE]
    return session, page, page[-1].seq if len(found) > INSTRUCTIONS_PAGE else None


def sessions_page(
    caller: Caller, stale_only: bool, after: str | None, now: datetime, *, store: SessionStore
) -> tuple[list[Session], str | None]:
    """A page of the namespace's sessions (only the stale ones, if asked) in session id
    order, and the id to continue after, or None at the end."""
    if not caller.is_overseer:
        raise forbidden("only people and operators may list sessions")
    return scan_page(
        lambda start, size: store.list_sessions(caller.namespace, start, size),
        position=lambda session: session.session_id,
        keep=lambda session: not stale_only or session.stale(now),
        after=after,
        size=SESSIONS_PAGE,
        budget=SESSIONS_SCAN_BUDGET,
    )
