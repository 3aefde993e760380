"""What the notifications' tools read of a call's context (``vigil.context.Context`` gives it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from vigil.alarms.timers import Alarms
from vigil.identity.calls import Call
from vigil.kit.keys import Keys
from vigil.notifications.store import ChannelPorts

if TYPE_CHECKING:
    from vigil.notifications.sending import Sender


class NotificationContext(Call[ChannelPorts], Protocol):
    @property
    def alarms(self) -> Alarms:
        """Where a replayed delivery's first attempt is armed."""
        ...

    @property
    def keys(self) -> Keys:
        """The service key, that a channel's secrets are sealed under."""
        ...

    @property
    def sender(self) -> Sender:
        """How notifications leave: ``test_channel`` sends one at once."""
        ...
