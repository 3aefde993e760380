"""Slack's interactions: a click on a request message's Approve, Deny or choice button, posted
by Slack to ``/integrations/slack/<namespace>/<channel id>``, decided through ``reply``.

Nothing of a request is read before its signature holds: Slack signs ``v0:<timestamp>:<raw
body>`` with HMAC-SHA256 under the Slack app's signing secret, which the channel keeps sealed,
and a timestamp more than five minutes from now is refused, so a captured click cannot be
replayed later. Within those minutes, a replay finds what the first one is owed
(``slack_responses.owe``, keyed by the signature) and changes nothing; a click on a request
decided already is told who decided it, since a request has one final outcome.

The Slack user decides as the Vigil person who linked that user from the console
(``notifications.accounts``); an unlinked user is answered with the console link that links
them. The decision is ``reply`` called as that person (``App.call_as``, ``via="slack"``): the
same audience check, the same version rule, as anywhere else. Slack is answered at once (it
waits three seconds); the message is redrawn afterwards, by the notify function.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs

from vigil.app import App
from vigil.errors import ErrorCode, VigilError
from vigil.identity.records import Principal
from vigil.kit.http import HttpRequest, HttpResponse
from vigil.notifications.accounts import link_url
from vigil.notifications.channel_secrets import open_secrets
from vigil.notifications.slack import APPROVE, CHOICE, DENY, REASON, TOO_LONG, shows_whole
from vigil.notifications.slack_responses import Owed, owe, response_id
from vigil.notifications.summary import when
from vigil.requests.views import VERBS, tally, vote_of

PREFIX = "/integrations/slack/"
# Slack's own tolerance: a request signed further from now than this is refused.
TOLERANCE_SECONDS = 5 * 60
# A click's payload carries the message it was made on: up to 50 blocks of 3,000 characters.
MAX_BODY_BYTES = 512 * 1024
RESPONSE_URL_PREFIX = "https://hooks.slack.com/"
_PATH = re.compile(r"^/integrations/slack/([a-z0-9][a-z0-9-]{1,62})/(chn_[a-z2-7]{16})$")
_NOT_AMONG = "You are not among those who may decide this request."
EDITED = (
    "An approver changed the action since this message was sent: decide in the console, which "
    "shows it as it stands."
)
_REFUSED = HttpResponse(401, b"", {"cache-control": "no-store"})


def slack_signed(
    secrets: Sequence[str], headers: Mapping[str, str], body: bytes, now: datetime
) -> bool:
    """Whether one of ``secrets`` signed ``body`` as Slack signs a request, within
    TOLERANCE_SECONDS of ``now``."""
    timestamp = headers.get("x-slack-request-timestamp", "")
    signature = headers.get("x-slack-signature", "")
    if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 12):
        return False
    if abs(now.timestamp() - int(timestamp)) > TOLERANCE_SECONDS:
        return False
    if not signature.isascii():
        return False
    signed = b"v0:" + timestamp.encode() + b":" + body
    return any(
        hmac.compare_digest(
            signature.encode(),
            ("v0=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()).encode(),
        )
        for secret in secrets
    )


@dataclass(frozen=True)
class Click:
    """What a block_actions payload says of the click: who, which button, where to answer."""

    account: str  # "<team id>/<user id>"
    action_id: str
    request_id: str
    response_url: str
    # What the message's reason field held (a denial's reason), if anything was typed.
    reason: str | None = None

    @classmethod
    def of(cls, body: bytes) -> Click | None:
        try:
            payload = json.loads(parse_qs(body.decode())["payload"][0])
            user = payload["user"]
            team = (payload.get("team") or {}).get("id") or user.get("team_id")
            [action] = payload["actions"]
            typed = ((payload.get("state") or {}).get("values") or {}).get(REASON) or {}
            reason = (typed.get(REASON) or {}).get("value")
            click = cls(
                f"{team}/{user['id']}",
                str(action["action_id"]),
                str(action["value"]),
                str(payload["response_url"]),
                reason if isinstance(reason, str) and reason.strip() else None,
            )
        except (
            ValueError,
            KeyError,
            TypeError,
            IndexError,
            AttributeError,
            UnicodeDecodeError,
            RecursionError,  # a payload nested past the reader's depth: no click of Slack's
        ):
            return None
        if payload.get("type") != "block_actions":
            return None
        return click


class SlackInteractions:
    def __init__(self, app: App) -> None:
        self.app = app

    def handle(self, request: HttpRequest) -> HttpResponse:
        if request.method != "POST":
            return HttpResponse(405, b"", {"allow": "POST"})
        path = _PATH.match(request.path.rstrip("/"))
        if path is None:
            return HttpResponse(404, b"", {})
        if len(request.body) > MAX_BODY_BYTES:
            return HttpResponse(413, b"", {})
        namespace, channel_id = path.groups()
        now = self.app.clock.now()
        channel = self.app.store.get_channel(namespace, channel_id)
        # An unknown channel answers as a bad signature does: the route tells nobody which exist.
        if channel is None or channel.kind != "slack" or not channel.secrets:
            return _REFUSED
        secrets = open_secrets(channel, self.app.keys, now)
        if not slack_signed(secrets, request.headers, request.body, now):
            return _REFUSED
        click = Click.of(request.body)
        if click is None:
            return HttpResponse(200, b"", {})  # signed, but nothing Vigil acts on
        allow_private = self.app.sender.allow_private
        if not (allow_private or click.response_url.startswith(RESPONSE_URL_PREFIX)):
            return HttpResponse(400, b"", {})
        answer_id = response_id(request.headers["x-slack-signature"])
        if self.app.store.get_slack_response(namespace, answer_id) is not None:
            return HttpResponse(200, b"", {})  # a replay: the click was answered already
        update, note = self._decide(namespace, click, request, now)
        owed = Owed(namespace, answer_id, click.request_id, update, note)
        owe(
            owed,
            click.response_url,
            now,
            store=self.app.store,
            alarms=self.app.alarms,
            keys=self.app.keys,
        )
        return HttpResponse(200, b"", {})

    def _decide(
        self, namespace: str, click: Click, request: HttpRequest, now: datetime
    ) -> tuple[bool, str | None]:
        """Decides the click, if its Slack user is a linked, active person; whether the
        message is to be redrawn, and the note to the clicker, if any."""
        person_id = self.app.store.linked_account(namespace, "slack", click.account)
        if person_id is None:
            base = self.app.sender.console_base or request.origin() or ""
            link = link_url(self.app.keys, base, namespace, "slack", click.account, now)
            return False, (
                "Vigil does not know who you are yet. Link your Slack user to your Vigil "
                f"account once, signed in to the console: <{link}|link it>, then click again."
            )
        person = self.app.store.get_principal(namespace, person_id)
        if person is None or person.status != "active":
            return False, "The Vigil account your Slack user is linked to is not active."
        try:
            found = self.app.call_as("get_request", {"id": click.request_id}, person, via="slack")
        except VigilError:
            return False, _NOT_AMONG
        if person.id not in found["audience"]:
            return False, _NOT_AMONG
        if found["state"] != "open":
            return True, self._decided(found, person)
        earlier = vote_of(found, person.id)
        if earlier is not None:
            return False, (
                f"You voted {VERBS[earlier['outcome']]} already; {tally(found)} so far. "
                "A vote is not changed."
            )
        if any(change.get("edits") is not None for change in found["history"]):
            # The message shows the action as it was asked; an approver has changed it since.
            # A click decides only what its message showed.
            return False, EDITED
        if not shows_whole(found.get("action")):
            # A message that could not show the action whole offered no button; a click that
            # says otherwise (an old message, a crafted one) decides nothing either.
            return False, TOO_LONG
        arguments = _reply_arguments(click, found)
        if arguments is None:
            return False, "This button decides nothing Vigil knows."
        try:
            replied = self.app.call_as("reply", arguments, person, via="slack")
        except VigilError as error:
            if error.code is ErrorCode.FORBIDDEN:
                return False, _NOT_AMONG
            if error.code is ErrorCode.VERSION_CONFLICT:
                again = self.app.call_as(
                    "get_request", {"id": click.request_id}, person, via="slack"
                )
                return True, self._decided(again, person)
            return False, f"Not done: {error.message}"
        if replied["state"] == "open" and arguments["outcome"] in VERBS:
            counted = {**found, "history": replied["history"]}
            return True, f"You voted {VERBS[arguments['outcome']]}; {tally(counted)}."
        return True, None

    def _decided(self, found: Mapping[str, Any], person: Principal) -> str:
        response = found.get("response") or {}
        by = response.get("by")
        if by is None:
            return f"This request is {found['state']} already."
        decider = self.app.store.get_principal(person.namespace, by)
        name = decider.name if decider is not None else by
        at = when(datetime.fromisoformat(response["at"]))
        return f"This request was already {found['state']} by {name} at {at}."


def _reply_arguments(click: Click, found: Mapping[str, Any]) -> dict[str, Any] | None:
    """``reply``'s arguments for the button clicked on the request ``found``, at the version
    read: an approval's Approve, or Deny with the reason typed in the message, or a question's
    choice by its number."""
    action_id = click.action_id
    base = {"id": found["id"], "version": found["version"]}
    if found["kind"] == "approval" and action_id == APPROVE:
        return {**base, "outcome": "approved"}
    if found["kind"] == "approval" and action_id == DENY:
        reason = {"answer": click.reason} if click.reason is not None else {}
        return {**base, "outcome": "denied", **reason}
    choices = found.get("choices") or []
    number = action_id.removeprefix(CHOICE)
    question = found["kind"] == "question" and action_id.startswith(CHOICE)
    if question and number.isdigit() and int(number) < len(choices):
        return {**base, "outcome": "answered", "answer": choices[int(number)]}
    return None
