"""A namespace wired with the in-memory store, alarms and mailbox queues, and an alarm
"function" and a notify "function" that tests drive by hand, so every delivery, duplicate and
crash is chosen. Notifications leave through a transport that records them and reaches no
network, unless a test gives the world another sender."""

from __future__ import annotations

from typing import Any

from tests.support import TEST_KEYS, Tenant, app_on
from vigil.alarms import kinds
from vigil.alarms.memory import MemoryAlarms
from vigil.alarms.timers import Timer, TimerHandler, deliver
from vigil.attachments.memory import MemoryBlobs
from vigil.clock import ManualClock
from vigil.entrypoints.alarm import handlers
from vigil.mailboxes.memory import MemoryMailboxQueues
from vigil.notifications.delivery import Notifier, Sender
from vigil.notifications.outbound import Outcome
from vigil.store import Store
from vigil.stores.memory import MemoryStore
from vigil.switches.service import Liveness


class World:
    def __init__(self, clock: ManualClock, store: Store | None = None) -> None:
        self.clock = clock
        self.store = store or MemoryStore()
        self.alarms = MemoryAlarms()
        self.queues = MemoryMailboxQueues(clock)
        self.blobs = MemoryBlobs()
        self.posted: list[tuple[str, bytes]] = []
        self.sender = Sender(keys=TEST_KEYS, clock=clock, post=self._post)
        self.app = app_on(
            self.store,
            clock,
            queues=self.queues,
            alarms=self.alarms,
            blobs=self.blobs,
            sender=self.sender,
        )
        self.notifier = Notifier(self.store, clock, self.alarms, self.sender)
        self.tenant = Tenant(self.app, clock, "acme")
        self.liveness = Liveness(self.store, clock, self.alarms, self.queues)
        self.delivered: list[Timer] = []

    def call(self, tool: str, secret: str | None = None, **arguments: Any) -> dict[str, Any]:
        return self.tenant.call(tool, secret, **arguments)

    def due_alarms(self) -> list[Timer]:
        return self.alarms.take_due(self.clock.now())

    def _post(self, url: str, body: bytes, headers: Any, **options: Any) -> Outcome:
        self.posted.append((url, body))
        return Outcome("delivered", 204, "HTTP 204")

    def use_sender(self, sender: Sender) -> None:
        """Notifications leave through ``sender`` from now on, test_channel's too."""
        self.sender = self.app.sender = self.notifier.sender = sender

    def deliver(self, timer: Timer) -> bool:
        """One delivery of ``timer`` to the handler of the function that serves its kind."""
        self.delivered.append(timer)
        notify: dict[str, TimerHandler] = {
            kinds.NOTIFY: self.notifier.on_timer,
            kinds.REMIND: self.notifier.on_reminder,
            kinds.DEAD_LETTER: self.notifier.on_dead_letter,
            kinds.STALE: self.notifier.on_stale,
        }
        return deliver(timer, self.clock.now(), self.alarms, {**handlers(self.liveness), **notify})

    def run_alarms(self) -> int:
        """Delivers every due alarm once, as the queue would; returns how many ran."""
        return sum(self.deliver(timer) for timer in self.due_alarms())

    def advance(self, seconds: float) -> None:
        """Moves time and lets the alarm stages run, in steps no coarser than one second."""
        while seconds > 0:
            step = min(1.0, seconds)
            self.clock.advance(step)
            seconds -= step
            self.run_alarms()
