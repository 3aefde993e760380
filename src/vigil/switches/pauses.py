"""Operators pause the switches under a scope prefix, for maintenance, and end a pause early;
the people watching list the pauses in force. Each change is audited.

What a pause does to a switch is the engine's (vigil.switches.engine): only a switch past its
deadline reads its namespace's pauses, and under one in force it is held rather than fired.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from vigil.audit.records import AuditEvent
from vigil.errors import ErrorCode, VigilError, conflict, forbidden, invalid, not_found
from vigil.identity.records import Caller
from vigil.kit.retry import R, retry_on_conflict
from vigil.kit.uow import UnitOfWork
from vigil.switches.records import MAX_PAUSE_SECONDS, MAX_PAUSES, Pause
from vigil.switches.store import SwitchPorts
from vigil.switches.watching import LIST_PAGE


@dataclass(frozen=True)
class PauseOrder:
    """What an operator pauses: the switches whose scope begins with ``scope_prefix``, until
    ``until``, until each one's next beat (``until_next_beat``), or whichever comes first."""

    scope_prefix: str
    until: datetime | None
    until_next_beat: bool
    reason: str | None


def pause(
    order: PauseOrder,
    caller: Caller,
    now: datetime,
    *,
    store: SwitchPorts,
    uow: UnitOfWork,
    present: Callable[[Pause], R],
) -> R:
    """A new pause of the switches under ``order.scope_prefix``, audited: an operator's
    power. A prefix has one pause at a time, so one still in force there is a conflict."""
    if not caller.is_operator:
        raise forbidden("only an operator may pause switches")
    until = order.until
    if until is not None and not now < until <= now + timedelta(seconds=MAX_PAUSE_SECONDS):
        raise invalid(f"until must be after now and at most {MAX_PAUSE_SECONDS} s ahead")
    namespace, scope_prefix = caller.namespace, order.scope_prefix

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
            order.until_next_beat,
            order.reason,
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
    caller: Caller,
    pause_id: str | None,
    scope_prefix: str | None,
    version: int,
    now: datetime,
    *,
    store: SwitchPorts,
    uow: UnitOfWork,
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
    caller: Caller, after: str | None, now: datetime, *, store: SwitchPorts
) -> tuple[list[Pause], str | None]:
    """A page of the namespace's pauses in force, in prefix order, after the prefix
    ``after``; and the prefix to continue after, or None at the end."""
    if not caller.is_overseer:
        raise forbidden("only people and operators may list pauses")
    found = [
        p
        for p in store.pauses(caller.namespace)
        if p.in_force(now) and (after is None or p.scope_prefix > after)
    ]
    page = found[:LIST_PAGE]
    return page, page[-1].scope_prefix if len(found) > LIST_PAGE else None
