"""Dead letters told of: when an envelope's last hand-out ends unacknowledged, the people
watching the namespace are told (``delivery.dead_lettered``), once.

A mailbox arms the timer (``alarms.kinds.DEAD_LETTER``) as it hands an envelope out for the last
time, due when that hand-out's lease lapses; the notify function serves it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from vigil.alarms.timers import Timer
from vigil.clock import Clock
from vigil.kit.publish import Publish
from vigil.kit.uow import ConditionFailed, UnitOfWork
from vigil.mailboxes.events import DeliveryDeadLettered
from vigil.mailboxes.store import DeadLetterPorts


@dataclass
class DeadLetters:
    """The handler of the timer at the end of an envelope's last hand-out."""

    store: DeadLetterPorts
    clock: Clock
    publish: Publish

    def on_timer(self, uow: UnitOfWork, timer: Timer) -> None:
        """The end of an envelope's last hand-out: unless it was acknowledged or handed out
        again since, it is a dead letter, and the channels that want it are told, once."""
        envelope_id, _, kind = timer.key.partition("/")
        delivery = self.store.get_delivery(timer.namespace, envelope_id)
        if (
            delivery is None
            or delivery.state == "acknowledged"
            or delivery.generation != timer.generation
            or delivery.leased(self.clock.now())
        ):
            return
        data = DeliveryDeadLettered(
            mailbox_owner=delivery.owner,
            envelope_id=envelope_id,
            kind=kind,
            attempts=delivery.generation,
            dead_lettered_at=delivery.leased_until,
        )
        published = self.publish(
            "delivery.dead_lettered",
            data,
            namespace=timer.namespace,
            occurred_at=delivery.leased_until,
        )
        # Written once: a second run of this timer finds it written.
        with contextlib.suppress(ConditionFailed):
            uow.commit(*published.writes)
