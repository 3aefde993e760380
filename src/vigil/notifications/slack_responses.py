"""What a Slack interaction is owed once it has been acknowledged, and its sending.

Slack waits three seconds for the acknowledgement of a click; what the click changes in Slack
(the request's message redrawn in place, a note only the clicker sees) goes afterwards through
the interaction's ``response_url``. The interactions route writes it down (``owe``) as a
``SlackResponse`` and arms a timer; the notify function sends it (``SlackResponder``), drawing
the message from the request as it is stored then, so a timer that comes twice, or late, sends
the same message again: it replaces the original, whatever was sent before. A response_url
works for 30 minutes and five uses: a failed attempt is made again a few times within that.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from vigil.alarms.kinds import SLACK_RESPONSE
from vigil.alarms.timers import Alarms, Timer
from vigil.clock import Clock, to_ms
from vigil.kit.keys import Keys
from vigil.kit.sealing import seal, unseal
from vigil.notifications.events import EventType, make_event
from vigil.notifications.records import SlackResponse, response_context
from vigil.notifications.sending import Sender
from vigil.notifications.slack import fit, slack_message
from vigil.notifications.store import ChannelStore, SlackResponsePorts
from vigil.notifications.summary import when
from vigil.requests.events import RequestData
from vigil.requests.records import Request

SEALING_PURPOSE = "slack-responses"
# A response_url takes five messages; each attempt sends at most two (the update, the note).
MAX_ATTEMPTS = 2
RETRY_AFTER = timedelta(seconds=30)
_EVENT_OF_STATE: dict[str, EventType] = {"open": "request.opened", "expired": "request.expired"}


def response_id(signature: str) -> str:
    """The id of what one signed interaction is owed: the same click, replayed, has the same."""
    return hashlib.sha256(signature.encode()).hexdigest()[:32]


def _key(keys: Keys) -> str:
    return keys.for_purpose(SEALING_PURPOSE).hex()


@dataclass(frozen=True)
class Owed:
    """What one interaction is owed: the message redrawn (``update``), a note, or both."""

    namespace: str
    id: str  # response_id of the interaction's signature
    request_id: str | None
    update: bool
    note: str | None


def owe(
    owed: Owed, response_url: str, now: datetime, *, store: ChannelStore, alarms: Alarms, keys: Keys
) -> bool:
    """Writes ``owed`` down, its response_url sealed, and arms its sending; False, owing
    nothing more, if the same interaction is owed already (a replay)."""
    sealed = seal(_key(keys), response_url, response_context(owed.namespace, owed.id))
    response = SlackResponse(
        namespace=owed.namespace,
        id=owed.id,
        request_id=owed.request_id,
        response_url=sealed,
        update=owed.update,
        note=owed.note,
        created_at=to_ms(now),
    )
    if not store.add_slack_response(response):
        return False
    timer = Timer(
        kind=SLACK_RESPONSE,
        namespace=response.namespace,
        key=response.id,
        generation=1,
        due_at=response.created_at,
    )
    alarms.arm(timer, response.created_at)
    return True


def decided_line(request: Request, name: str) -> str | None:
    """Who decided ``request`` and when, in words ("Approved by Pat Doe at ..."); None while
    it is open or if nobody did."""
    response = request.response
    if response is None or response.by is None:
        return None
    return f"{response.outcome.capitalize()} by {name} at {when(response.at)}"


@dataclass
class SlackResponder:
    """The notify function's handler of what Slack interactions are owed."""

    store: SlackResponsePorts
    clock: Clock
    alarms: Alarms
    sender: Sender

    def name_of(self, namespace: str, principal_id: str) -> str:
        principal = self.store.get_principal(namespace, principal_id)
        return principal.name if principal is not None else principal_id

    def message(self, request: Request) -> dict[str, Any]:
        """The request's message as it stands: still with its buttons while it is open; else
        without them, saying who decided."""
        now = to_ms(self.clock.now())
        event = make_event(
            _EVENT_OF_STATE.get(request.state, "request.answered"),
            RequestData.of(request),
            namespace=request.namespace,
            occurred_at=now,
            console_base=self.sender.console_base,
        )
        message = slack_message(event, self.sender.console_base, interactive=True)
        by = request.response.by if request.response is not None else None
        line = decided_line(request, self.name_of(request.namespace, by)) if by else None
        if line is not None:
            section = {
                "type": "section",
                "text": {"type": "mrkdwn", "text": f"*{fit(line, 2000)}*"},
            }
            message["blocks"].insert(1, section)
        return {**message, "replace_original": True}

    def on_timer(self, timer: Timer) -> None:
        """Attempt number ``timer.generation`` at sending what the interaction is owed."""
        owed = self.store.get_slack_response(timer.namespace, timer.key)
        now = self.clock.now()
        if owed is None or not owed.usable(now):
            return
        url = unseal(
            _key(self.sender.keys), owed.response_url, response_context(owed.namespace, owed.id)
        )
        if url is None:
            raise RuntimeError(f"slack response {owed.id}: its sealed response_url does not open")
        messages: list[dict[str, Any]] = []
        if owed.update and owed.request_id is not None:
            request = self.store.get_request(owed.namespace, owed.request_id)
            if request is not None:
                messages.append(self.message(request))
        if owed.note is not None:
            messages.append(
                {"response_type": "ephemeral", "replace_original": False, "text": owed.note}
            )
        for message in messages:
            result = self.sender.post(
                url,
                json.dumps(message).encode(),
                {"content-type": "application/json"},
                timeout_seconds=self.sender.timeout_seconds,
                allow_private=self.sender.allow_private,
                clock=self.clock,
            )
            if result.kind == "retry" and timer.generation < MAX_ATTEMPTS:
                again = timer.model_copy(
                    update={"generation": timer.generation + 1, "due_at": now + RETRY_AFTER}
                )
                self.alarms.arm(again, now)
                return
