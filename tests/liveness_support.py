"""A namespace wired with the in-memory store, alarms and mailbox queues, and an alarm
"function" and a notify "function" that tests drive by hand, so every delivery, duplicate and
crash is chosen. Notifications leave through a transport that records them and reaches no
network, unless a test gives the world another sender."""

from __future__ import annotations

from typing import Any

from tests.support import TEST_KEYS, Tenant, app_on
from vigil.alarms.memory import MemoryAlarms
from vigil.alarms.timers import Timer, deliver
from vigil.attachments.memory import MemoryBlobs
from vigil.clock import ManualClock
from vigil.entrypoints import alarm, notify
from vigil.mailboxes.memory import MemoryMailboxQueues
from vigil.notifications.deliverer import NotificationDeliverer
from vigil.notifications.outbound import SendResult
from vigil.notifications.outbox import Outbox
from vigil.notifications.sending import Sender
from vigil.store import Store
from vigil.stores.memory import MemoryStore
from vigil.switches.engine import SwitchEngine


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
        self.deliverer = NotificationDeliverer(self.store, clock, self.alarms, self.sender)
        self.tenant = Tenant(self.app, clock, "acme")
        self.switch_engine = SwitchEngine(
            store=self.store,
            clock=clock,
            alarms=self.alarms,
            queues=self.queues,
            publish=Outbox(self.store, clock, self.alarms),
        )
        self.delivered: list[Timer] = []

    def call(self, tool: str, secret: str | None = None, **arguments: Any) -> dict[str, Any]:
        return self.tenant.call(tool, secret, **arguments)

    def due_alarms(self) -> list[Timer]:
        return self.alarms.take_due(self.clock.now())

    def _post(self, url: str, body: bytes, headers: Any, **options: Any) -> SendResult:
        self.posted.append((url, body))
        return SendResult("delivered", 204, "HTTP 204")

    def use_sender(self, sender: Sender) -> None:
        """Notifications leave through ``sender`` from now on, test_channel's too."""
        self.sender = self.app.sender = self.deliverer.sender = sender

    def deliver(self, timer: Timer) -> bool:
        """One delivery of ``timer`` to the handler of the function that serves its kind."""
        self.delivered.append(timer)
        worker = notify.Worker(self.store, self.clock, self.alarms, self.sender)
        handlers = {**alarm.handlers(self.switch_engine), **notify.handlers(worker)}
        return deliver(timer, self.clock.now(), self.alarms, handlers)

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
