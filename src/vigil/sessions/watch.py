"""A session's watch: the timer, served by the notify function, that tells the people watching
a namespace that one of its sessions has gone stale (``session.stale``), once per silence.

A beat arms the watch when the session has none (``watch_due``, the due time of its one live
timer); the watch moves itself while the session is beaten, and stops once it has told, or
once its agent has ended the session (``end_session``): an ended session is never stale.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import timedelta

from vigil.alarms.timers import Alarms, Timer
from vigil.clock import Clock
from vigil.errors import contended
from vigil.kit.publish import Publish
from vigil.kit.uow import ConditionFailed, UnitOfWork
from vigil.sessions.events import SessionStale
from vigil.sessions.store import Audience, WatchPorts

# How often a session is looked at while no channel of its namespace wants session.stale.
UNWATCHED = timedelta(hours=1)


@dataclass
class SessionWatch:
    """The handler of a session's watch timer."""

    store: WatchPorts
    clock: Clock
    alarms: Alarms
    publish: Publish
    audience: Audience

    def on_timer(self, uow: UnitOfWork, timer: Timer) -> None:
        """A session's watch: the timer of the session's ``watch_due``, any other is a stale
        copy. Beaten since, the watch moves to when the session would go stale (an hour on,
        while no channel wants session.stale): armed first, then recorded. Stale, its channels
        are told, once per silence, and the watch stops until the session's next beat."""
        for _ in range(3):
            now = self.clock.now()
            session = self.store.get_session(timer.namespace, timer.key)
            if session is None or session.ended_at is not None or session.watch_due != timer.due_at:
                return  # gone, ended (never stale again), or a stale copy of the timer
            if session.stale(now):
                published = self.publish(
                    "session.stale",
                    SessionStale.of(session),
                    namespace=timer.namespace,
                    occurred_at=session.stale_at,
                )
                # Written once: a second run of this timer finds it written.
                with contextlib.suppress(ConditionFailed):
                    uow.commit(*published.writes)
                moved = session.changed(watch_due=None)
            else:
                wanted = self.audience.wanted(timer.namespace, "session.stale")
                due = session.stale_at if wanted else max(session.stale_at, now + UNWATCHED)
                self.alarms.arm(timer.model_copy(update={"due_at": due}), now)
                moved = session.changed(watch_due=due)
            try:
                uow.commit(self.store.save_beat(moved, [], []))
            except ConditionFailed:
                continue  # beaten meanwhile: look again
            return
        # Lost to beats every time: failing hands the timer back to its queue, to try again.
        raise contended("the session's watch lost to its beats; retry later")
