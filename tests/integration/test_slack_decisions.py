"""Deciding from Slack, over HTTP on the in-memory app with Slack's recorded payload shapes: a
request's message carries buttons; a click signed with the channel's Slack signing secret
decides through ``reply`` as the Vigil person the Slack user linked once from the console; a
replayed, stale or badly signed click changes nothing; a later click is told who decided; the
message is updated in place afterwards, from what is stored."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from slack_sdk.signature import SignatureVerifier

from tests.integration.test_console_http import ORIGIN, Browser, field_of
from tests.integration.test_console_states import signed_in
from tests.liveness_support import World
from tests.support import TEST_KEYS, interleaving_store
from vigil.clock import ManualClock
from vigil.kit.http import HttpRequest, HttpResponse
from vigil.notifications.sending import Sender
from vigil.transports.router import Router

SIGNING_SECRET = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
RESPONSE_URL = "https://hooks.slack.com/actions/T0ACME/1234/abcdef"
ACTION = {"op": "deploy", "to": "prod"}
_clicks = itertools.count(1)


@pytest.fixture
def world(clock: ManualClock) -> World:
    world = World(clock)
    world.use_sender(Sender(keys=TEST_KEYS, clock=clock, console_base=ORIGIN, post=world._post))
    return world


class Scene:
    def __init__(
        self,
        world: World,
        policy: dict[str, Any] | None = None,
        action: dict[str, Any] | None = None,
        **asked: Any,
    ) -> None:
        self.world = world
        self.router = Router(world.app, frozenset())
        self.pat, self.pat_secret = world.tenant.register(kind="person", name="Pat Doe")
        self.lee, self.lee_secret = world.tenant.register(kind="person", name="Lee Roe")
        self.ann, self.ann_secret = world.tenant.register(name="ann")
        channel = world.call(
            "create_channel",
            name="approvals",
            kind="slack",
            url="https://hooks.slack.com/services/T0ACME/B0/secretpath",
            slack_signing_secret=SIGNING_SECRET,
            rules=[{"events": ["request.opened"]}],
        )["channel"]
        self.channel_id = channel["id"]
        self.path = f"/integrations/slack/acme/{self.channel_id}"
        people = [{"kind": "person", "id": person} for person in (self.pat, self.lee)]
        chat = world.call("start_chat", self.ann_secret, targets=people, body="Release day.")
        self.request = world.call(
            "ask",
            self.ann_secret,
            conversation_id=chat["conversation_id"],
            kind="approval",
            body="May I deploy?",
            action=action or ACTION,
            **({"policy": policy} if policy else {}),
            **asked,
        )
        self.request_id = self.request["id"]

    def posted_to(self, url_prefix: str) -> list[dict[str, Any]]:
        return [json.loads(body) for url, body in self.world.posted if url.startswith(url_prefix)]

    def state(self) -> dict[str, Any]:
        return self.world.call("get_request", self.ann_secret, id=self.request_id)

    def click(
        self,
        user: str,
        action_id: str,
        *,
        secret: str = SIGNING_SECRET,
        age_seconds: int = 0,
        body: bytes | None = None,
    ) -> tuple[HttpResponse, bytes, dict[str, str]]:
        body = body or payload_body(user, action_id, self.request_id)
        return self.send(body, signed(secret, body, self.world, age_seconds))

    def send(
        self, body: bytes, headers: dict[str, str]
    ) -> tuple[HttpResponse, bytes, dict[str, str]]:
        request = HttpRequest(
            "POST",
            self.path,
            {"content-type": "application/x-www-form-urlencoded", **headers},
            body,
        )
        return self.router.handle(request), body, headers


def payload_body(user: str, action_id: str, request_id: str, reason: str | None = None) -> bytes:
    """A block_actions payload as Slack posts it (form-encoded, ``payload=`` JSON); each
    click its own, as Slack's trigger_id and action_ts make them."""
    click = next(_clicks)
    payload = {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": "T0ACME"},
        "api_app_id": "A0VIGIL",
        "token": "legacy-verification-token",
        "container": {
            "type": "message",
            "message_ts": "1733227200.000100",
            "channel_id": "C0APPROVALS",
            "is_ephemeral": False,
        },
        "trigger_id": f"1733227201.42.abc{click}",
        "team": {"id": "T0ACME", "domain": "acme"},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": "C0APPROVALS", "name": "approvals"},
        "message": {"type": "message", "ts": "1733227200.000100", "text": "Approval opened"},
        "state": {"values": {} if reason is None else typed_reason(reason)},
        "response_url": RESPONSE_URL,
        "actions": [
            {
                "action_id": action_id,
                "block_id": "vigil",
                "text": {"type": "plain_text", "text": "Approve", "emoji": False},
                "value": request_id,
                "style": "primary",
                "type": "button",
                "action_ts": f"1733227201.{click:06d}",
            }
        ],
    }
    return urlencode({"payload": json.dumps(payload)}).encode()


def typed_reason(text: str) -> dict[str, Any]:
    """The message's state as Slack sends it with a click: what its reason field holds."""
    return {"vigil.reason": {"vigil.reason": {"type": "plain_text_input", "value": text}}}


def signed(secret: str, body: bytes, world: World, age_seconds: int = 0) -> dict[str, str]:
    timestamp = str(int(world.clock.now().timestamp()) - age_seconds)
    signature = SignatureVerifier(secret).generate_signature(timestamp=timestamp, body=body)
    assert signature is not None
    return {"x-slack-request-timestamp": timestamp, "x-slack-signature": signature}


def link_from(note: dict[str, Any]) -> str:
    found = re.search(r"<(https://vigil\.example/console/link\?[^|>]+)\|", note["text"])
    assert found is not None, note
    return found.group(1)


def link_user(scene: Scene, user: str, secret: str) -> None:
    """The user clicks once unlinked, is answered with a console link, and binds it there."""
    response, _, _ = scene.click(user, "vigil.approve")
    assert response.status == 200
    scene.world.run_alarms()
    link = link_from(scene.posted_to(RESPONSE_URL)[-1])
    browser: Browser = signed_in(scene.world, secret)
    parts = urlsplit(link)
    page = browser.get(parts.path, **{k: v[0] for k, v in parse_qs(parts.query).items()})
    assert page.status == 200
    assert "Slack" in page.body.decode()
    done = browser.post(
        "/console/link", {"csrf": field_of(page, "csrf"), "token": field_of(page, "token")}
    )
    assert done.status == 200, done.body.decode()


@pytest.fixture
def scene(world: World) -> Scene:
    return Scene(world)


def test_a_request_opened_in_a_slack_channel_gets_buttons(scene: Scene) -> None:
    scene.world.run_alarms()
    [message] = scene.posted_to("https://hooks.slack.com/services/")
    buttons = [
        element
        for block in message["blocks"]
        if block["type"] == "actions"
        for element in block["elements"]
    ]
    by_id = {b["action_id"]: b for b in buttons}
    assert by_id["vigil.approve"]["value"] == scene.request_id
    assert by_id["vigil.deny"]["value"] == scene.request_id
    assert "url" not in by_id["vigil.approve"]  # an action, not a link


def test_an_unlinked_slack_user_decides_nothing_and_is_sent_to_the_console(scene: Scene) -> None:
    response, _, _ = scene.click("U0PAT", "vigil.approve")
    assert response.status == 200
    assert scene.state()["state"] == "open"
    scene.world.run_alarms()
    [note] = scene.posted_to(RESPONSE_URL)
    assert note["response_type"] == "ephemeral"
    assert note["replace_original"] is False
    assert link_from(note)


def test_a_signed_click_approves_and_the_message_says_who(scene: Scene) -> None:
    link_user(scene, "U0PAT", scene.pat_secret)
    before = len(scene.posted_to(RESPONSE_URL))
    response, _, _ = scene.click("U0PAT", "vigil.approve")
    assert response.status == 200
    state = scene.state()
    assert state["state"] == "approved"
    assert state["response"]["by"] == scene.pat
    scene.world.run_alarms()
    [update] = scene.posted_to(RESPONSE_URL)[before:]
    assert update["replace_original"] is True
    text = json.dumps(update)
    assert "Approved by Pat Doe" in text
    assert "vigil.approve" not in text  # the buttons are gone


def test_a_replayed_click_changes_nothing(scene: Scene) -> None:
    link_user(scene, "U0PAT", scene.pat_secret)
    response, body, headers = scene.click("U0PAT", "vigil.deny")
    assert response.status == 200
    decided = scene.state()
    scene.world.run_alarms()
    posted = len(scene.world.posted)
    again, _, _ = scene.send(body, headers)
    assert again.status == 200
    assert scene.state() == decided
    scene.world.run_alarms()
    assert len(scene.world.posted) == posted  # not even a note: the same click was answered


@pytest.mark.parametrize(
    "how", ["another secret", "stale timestamp", "body changed", "no signature"]
)
def test_a_badly_signed_or_stale_click_changes_nothing(scene: Scene, how: str) -> None:
    link_user(scene, "U0PAT", scene.pat_secret)
    posted = len(scene.world.posted)
    body = payload_body("U0PAT", "vigil.approve", scene.request_id)
    headers = signed(SIGNING_SECRET, body, scene.world)
    if how == "another secret":
        headers = signed("ffffffffffffffffffffffffffffffff", body, scene.world)
    elif how == "stale timestamp":
        headers = signed(SIGNING_SECRET, body, scene.world, age_seconds=301)
    elif how == "body changed":
        body = payload_body("U0PAT", "vigil.deny", scene.request_id)
    else:
        headers = {}
    response, _, _ = scene.send(body, headers)
    assert response.status == 401
    assert scene.state()["state"] == "open"
    scene.world.run_alarms()
    assert len(scene.world.posted) == posted


def test_a_second_click_is_told_who_decided(scene: Scene) -> None:
    link_user(scene, "U0PAT", scene.pat_secret)
    link_user(scene, "U0LEE", scene.lee_secret)
    scene.click("U0PAT", "vigil.approve")
    scene.world.run_alarms()
    before = len(scene.posted_to(RESPONSE_URL))
    response, _, _ = scene.click("U0LEE", "vigil.deny")
    assert response.status == 200
    assert scene.state()["state"] == "approved"
    scene.world.run_alarms()
    notes = [p for p in scene.posted_to(RESPONSE_URL)[before:] if not p["replace_original"]]
    assert "approved by Pat Doe" in notes[0]["text"]


def test_a_slack_user_outside_the_audience_decides_nothing(scene: Scene) -> None:
    _, ops_secret = scene.world.tenant.register(kind="person", role="operator", name="Ops Two")
    link_user(scene, "U0OPS", ops_secret)
    before = len(scene.posted_to(RESPONSE_URL))
    scene.click("U0OPS", "vigil.approve")
    assert scene.state()["state"] == "open"
    scene.world.run_alarms()
    [note] = scene.posted_to(RESPONSE_URL)[before:]
    assert "not among" in note["text"]


def test_a_slack_user_is_linked_to_one_person_only(scene: Scene) -> None:
    scene.click("U0LEE", "vigil.approve")
    scene.world.run_alarms()
    link = link_from(scene.posted_to(RESPONSE_URL)[-1])
    parts = urlsplit(link)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    lee = signed_in(scene.world, scene.lee_secret)
    page = lee.get(parts.path, **query)
    assert (
        lee.post("/console/link", {"csrf": field_of(page, "csrf"), "token": query["token"]}).status
        == 200
    )
    # The same link, forwarded to Pat, binds nothing more: the Slack user stays Lee's.
    pat = signed_in(scene.world, scene.pat_secret)
    page = pat.get(parts.path, **query)
    taken = pat.post("/console/link", {"csrf": field_of(page, "csrf"), "token": query["token"]})
    assert taken.status == 409
    scene.click("U0LEE", "vigil.approve")
    assert scene.state()["response"]["by"] == scene.lee


@pytest.fixture(params=["memory", "dynamodb"])
def racing(request: pytest.FixtureRequest, clock: ManualClock) -> Scene:
    world = World(clock, store=interleaving_store(request, "get_request"))
    world.use_sender(Sender(keys=TEST_KEYS, clock=clock, console_base=ORIGIN, post=world._post))
    return Scene(world)


def test_a_click_racing_a_console_decision_leaves_one_outcome(racing: Scene) -> None:
    scene = racing
    link_user(scene, "U0PAT", scene.pat_secret)
    before = len(scene.posted_to(RESPONSE_URL))
    asked = scene.state()

    def lee_denies_on_the_console() -> None:
        scene.world.call(
            "reply",
            scene.lee_secret,
            id=scene.request_id,
            outcome="denied",
            version=asked["version"],
        )

    # Right after the click's route has read the request open, Lee denies it elsewhere.
    scene.world.store.interloper = lee_denies_on_the_console  # type: ignore[attr-defined]
    response, _, _ = scene.click("U0PAT", "vigil.approve")
    assert response.status == 200
    final = scene.state()
    assert final["state"] == "denied"
    assert final["response"]["by"] == scene.lee
    assert [change["kind"] for change in final["history"]].count("replied") == 1
    scene.world.run_alarms()
    notes = [p for p in scene.posted_to(RESPONSE_URL)[before:] if not p["replace_original"]]
    assert "already denied by Lee Roe" in notes[0]["text"]


def test_an_approvals_message_carries_a_reason_field_for_a_deny(scene: Scene) -> None:
    scene.world.run_alarms()
    [message] = scene.posted_to("https://hooks.slack.com/services/")
    [field] = [block for block in message["blocks"] if block["type"] == "input"]
    assert field["block_id"] == "vigil.reason"
    assert field["optional"] is True
    assert field["element"]["type"] == "plain_text_input"


def test_a_deny_carries_the_reason_typed_in_the_message(scene: Scene) -> None:
    link_user(scene, "U0PAT", scene.pat_secret)
    body = payload_body("U0PAT", "vigil.deny", scene.request_id, reason="Not on a Friday.")
    assert scene.click("U0PAT", "vigil.deny", body=body)[0].status == 200
    state = scene.state()
    assert (state["state"], state["response"]["answer"]) == ("denied", "Not on a Friday.")


def test_a_deny_without_the_reason_a_request_requires_changes_nothing(world: World) -> None:
    scene = Scene(world, policy={"reason_on_deny": True})
    link_user(scene, "U0PAT", scene.pat_secret)
    before = len(scene.posted_to(RESPONSE_URL))
    body = payload_body("U0PAT", "vigil.deny", scene.request_id, reason="  ")
    assert scene.click("U0PAT", "vigil.deny", body=body)[0].status == 200
    assert scene.state()["state"] == "open"
    scene.world.run_alarms()
    [note] = scene.posted_to(RESPONSE_URL)[before:]
    assert "Not done" in json.dumps(note)
    body = payload_body("U0PAT", "vigil.deny", scene.request_id, reason="Tests are red.")
    assert scene.click("U0PAT", "vigil.deny", body=body)[0].status == 200
    assert scene.state()["response"]["answer"] == "Tests are red."


def test_linking_a_slack_user_is_in_the_audit_trail(scene: Scene) -> None:
    """A link gives a Slack user a person's power to decide: operators see who made it."""
    link_user(scene, "U0PAT", scene.pat_secret)
    events = scene.world.call("list_audit_events")["events"]
    [linked] = [e for e in events if e["action"] == "link_account"]
    assert (linked["actor"], linked["target_kind"], linked["target"]) == (
        scene.pat,
        "account",
        "slack:T0ACME/U0PAT",
    )
    assert linked["via"] == "console"


def test_a_signed_payload_nested_past_the_readers_depth_is_no_click(scene: Scene) -> None:
    """Whoever holds the signing secret (Slack, or a thief of it) cannot make the route fail:
    a payload nested deeper than the JSON reader goes is answered as no click of Slack's."""
    body = urlencode({"payload": "[" * 5_000 + "]" * 5_000}).encode()
    response, _, _ = scene.send(body, signed(SIGNING_SECRET, body, scene.world))
    assert (response.status, response.body) == (200, b"")  # signed, and nothing to act on
    assert scene.state()["state"] == "open"


# An action longer than a Slack section shows, its dangerous member sorted last.
LONG_ACTION = {
    "op": "transfer",
    **{f"note_{n}": "routine " * 150 for n in range(3)},
    "zz_to": "an account of mallory's",
}


def test_an_action_slack_cannot_show_whole_gets_no_buttons_and_says_why(world: World) -> None:
    scene = Scene(world, action=LONG_ACTION)
    scene.world.run_alarms()
    [message] = scene.posted_to("https://hooks.slack.com/services/")
    text = json.dumps(message)
    assert "vigil.approve" not in text
    assert "vigil.deny" not in text
    assert "longer than a Slack message shows whole" in text
    assert "mallory" not in text  # cut: the reason there is no button
    # The link to the request's page, which shows it all, stays.
    links = [e for b in message["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert any("/console/request" in link.get("url", "") for link in links)


def test_a_click_on_an_action_slack_cannot_show_whole_decides_nothing(world: World) -> None:
    """A click crafted (or kept from before) for such a request: refused, and told why."""
    scene = Scene(world, action=LONG_ACTION)
    link_user(scene, "U0PAT", scene.pat_secret)
    before = len(scene.posted_to(RESPONSE_URL))
    response, _, _ = scene.click("U0PAT", "vigil.approve")
    assert response.status == 200
    assert scene.state()["state"] == "open"
    scene.world.run_alarms()
    [note] = scene.posted_to(RESPONSE_URL)[before:]
    assert "longer than a Slack message shows whole" in note["text"]


def test_a_click_on_a_message_whose_action_was_edited_since_decides_nothing(world: World) -> None:
    """Lee edits the action in the console; Pat's click on the message that shows the action as
    asked would approve what Pat was not shown: refused, and sent to the console."""
    member = next(iter(ACTION))
    scene = Scene(world, policy={"quorum": 2}, editable=[member])
    link_user(scene, "U0PAT", scene.pat_secret)
    asked = scene.state()
    world.call(
        "reply",
        scene.lee_secret,
        id=scene.request_id,
        version=asked["version"],
        outcome="approved",
        edits={member: "edited"},
    )
    before = len(scene.posted_to(RESPONSE_URL))
    response, _, _ = scene.click("U0PAT", "vigil.approve")
    assert response.status == 200
    after = scene.state()
    assert (after["state"], after["version"]) == ("open", asked["version"] + 1)
    scene.world.run_alarms()
    [note] = scene.posted_to(RESPONSE_URL)[before:]
    assert "changed the action since this message was sent" in note["text"]
