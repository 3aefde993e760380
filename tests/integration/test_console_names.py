"""Names where people expect them, over HTTP on the in-memory app: a request headed by its
conversation's title, who asked it and who decides or decided it by name, a conversation's
authors by name (the reader's own as "you"), who set a pause and who posted an instruction by
name; and every id beside a name in the class that keeps it on one line."""

from __future__ import annotations

import re

import pytest

from tests.integration.test_console_states import page, signed_in
from tests.liveness_support import World
from vigil.clock import ManualClock

TITLE = "Deploy billing-api 1.2.3 to prod"
DEPLOY = {"op": "deploy", "service": "billing-api", "version": "1.2.3"}


@pytest.fixture
def world(clock: ManualClock) -> World:
    return World(clock)


def fact(body: str, name: str) -> str:
    """The value of the fact ``name`` on a page."""
    found = re.search(rf"<dt>{name}</dt><dd>(.*?)</dd>", body)
    assert found is not None, f"no fact {name}"
    return found.group(1)


def named(name: str, ident: str) -> str:
    return f'{name} <small class="meta id">{ident}</small>'


@pytest.fixture
def asked(world: World) -> dict[str, str]:
    pat, pat_secret = world.tenant.register(kind="person", name="Pat Doe")
    ann, ann_secret = world.tenant.register(name="ann")
    request = world.call(
        "ask",
        ann_secret,
        target={"kind": "person", "id": pat},
        title=TITLE,
        kind="approval",
        body="May I deploy billing-api?",
        action=DEPLOY,
    )
    return {
        "pat": pat,
        "pat_secret": pat_secret,
        "ann": ann,
        "ann_secret": ann_secret,
        "id": request["id"],
        "conversation_id": request["conversation_id"],
    }


def test_a_request_is_headed_by_its_title_and_says_who_asks_and_who_decides(
    world: World, asked: dict[str, str]
) -> None:
    pat = signed_in(world, asked["pat_secret"])
    body = page(pat, "/console/request", id=asked["id"])
    assert f"<h1>{TITLE}</h1>" in body
    assert f"Approval {asked['id']}" not in body
    assert f'<span class="id">{asked["id"]}</span>' in fact(body, "Request")
    assert fact(body, "Asked by") == named("ann", asked["ann"])
    assert fact(body, "Yours to decide") == named("Pat Doe", asked["pat"])
    assert f">{TITLE}</a>" in fact(body, "Conversation")
    assert "Decided by" not in body
    # The requester reads who decides; nobody has decided yet.
    ann = signed_in(world, asked["ann_secret"])
    assert fact(page(ann, "/console/request", id=asked["id"]), "Who decides") == named(
        "Pat Doe", asked["pat"]
    )
    # Once decided, who decided it.
    world.call("reply", asked["pat_secret"], id=asked["id"], version=1, outcome="approved")
    body = page(pat, "/console/request", id=asked["id"])
    assert fact(body, "Decided by") == named("Pat Doe", asked["pat"]) + " (from rest)"
    assert "Yours to decide" not in body
    history = re.search(r'<section aria-labelledby="history-title".*?</section>', body)
    assert history is not None
    assert named("Pat Doe", asked["pat"]) in history.group(0)
    assert named("ann", asked["ann"]) in history.group(0)


def test_a_request_without_a_title_is_headed_by_what_it_asks(
    world: World, asked: dict[str, str]
) -> None:
    second = world.call(
        "ask",
        asked["ann_secret"],
        target={"kind": "person", "id": asked["pat"]},
        kind="question",
        body="Which region first?\nWe have two.",
    )
    body = page(signed_in(world, asked["pat_secret"]), "/console/request", id=second["id"])
    assert "<h1>Question: Which region first?</h1>" in body
    pat = signed_in(world, asked["pat_secret"])
    conversation = page(pat, "/console/conversation", id=second["conversation_id"])
    assert "<h1>Conversation with ann</h1>" in conversation


def test_the_requests_listing_names_who_asked(world: World, asked: dict[str, str]) -> None:
    body = page(signed_in(world, asked["pat_secret"]), "/console/requests")
    assert named("ann", asked["ann"]) in body


def test_a_conversation_names_its_authors_and_the_readers_own_as_you(
    world: World, asked: dict[str, str]
) -> None:
    world.call(
        "send",
        asked["pat_secret"],
        conversation_id=asked["conversation_id"],
        body="Go after the freeze.",
    )
    pat = signed_in(world, asked["pat_secret"])
    body = page(pat, "/console/conversation", id=asked["conversation_id"])
    assert f"<h1>{TITLE}</h1>" in body
    authors = re.findall(r'<p class="meta"><strong>(.*?)</strong>', body)
    assert authors == [named("ann", asked["ann"]), "you"]
    assert named("Pat Doe", asked["pat"]) in body  # among the participants
    listing = page(pat, "/console/conversations")
    assert TITLE in listing


def test_who_set_a_pause_and_who_posted_an_instruction_are_named(
    world: World, asked: dict[str, str]
) -> None:
    world.call("heartbeat", asked["ann_secret"], scope="acme-job", expect_within_seconds=600)
    world.call(
        "session_heartbeat",
        asked["ann_secret"],
        sessionId="acme-session",
        idempotencyKey="beat-1",
    )
    world.call("post_instruction", asked["pat_secret"], sessionId="acme-session", body="stop")
    world.call("pause_switches", scope_prefix="acme-", until_next_beat=True, reason="upgrade")
    operator = signed_in(world, world.tenant.operator_secret)
    assert named("Ops", world.tenant.operator.id) in page(operator, "/console")
    session = page(operator, "/console/session", id="acme-session")
    assert named("Pat Doe", asked["pat"]) in session
