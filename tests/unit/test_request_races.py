"""Races around a request, injected rather than hoped for, on the fake and on DynamoDB (moto): a
reply and the expiry in both orders, two replies at once, two redemptions at once, and a
replacement against a reply in both orders. Another caller acts right after the first has
read the request (or the execution) and before it writes: exactly one outcome lands, and the
loser is told the final state."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.liveness_support import World
from tests.support import error_of, interleaving_store
from vigil.app import App
from vigil.clock import ManualClock
from vigil.errors import ErrorCode, VigilError
from vigil.kit.principals import Surface
from vigil.kit.uow import UnitOfWork
from vigil.notifications.outbox import Outbox
from vigil.requests.service import Requests

DEPLOY = {"op": "deploy", "service": "checkout"}


@pytest.fixture(params=["memory", "dynamo"])
def racing(request: pytest.FixtureRequest) -> Any:
    return interleaving_store(request, "get_request")


@pytest.fixture(params=["memory", "dynamo"])
def racing_redemptions(request: pytest.FixtureRequest) -> Any:
    return interleaving_store(request, "get_execution")


class Pair:
    """ann asks; bob and pat decide."""

    def __init__(self, clock: ManualClock, store: Any) -> None:
        self.world = World(clock, store)
        self.clock = clock
        self.secrets: dict[str, str] = {}
        self.ids: dict[str, str] = {}
        for label, kind in (("ann", "agent"), ("bob", "agent"), ("pat", "person")):
            self.ids[label], self.secrets[label] = self.world.tenant.register(kind=kind, name=label)

    def call(self, tool: str, who: str, **arguments: Any) -> dict[str, Any]:
        return self.world.call(tool, self.secrets[who], **arguments)

    def refused(self, tool: str, who: str, **arguments: Any) -> VigilError:
        return error_of(self.call, tool, who, **arguments)

    def ask(self, **arguments: Any) -> dict[str, Any]:
        chat = self.call(
            "start_chat",
            "ann",
            targets=[
                {"kind": "agent", "id": self.ids["bob"]},
                {"kind": "person", "id": self.ids["pat"]},
            ],
            body="hi",
        )
        return self.call("ask", "ann", conversation_id=chat["conversation_id"], **arguments)

    def expire(self) -> None:
        store, alarms = self.world.store, self.world.alarms
        requests = Requests(
            store,
            queues=self.world.queues,
            clock=self.clock,
            alarms=alarms,
            publish=Outbox(store, self.clock, alarms),
            audit=store,
        )
        for timer in self.world.due_alarms():
            requests.on_timer(UnitOfWork(store), timer)

    def state(self, request_id: str) -> dict[str, Any]:
        return self.call("get_request", "ann", id=request_id)


def between(store: Any, action: Callable[[], Any]) -> None:
    store.interloper = action


def test_the_expiry_landing_between_a_replys_read_and_write_wins(
    clock: ManualClock, racing: Any
) -> None:
    pair = Pair(clock, racing)
    asked = pair.ask(body="go?", expires_in_seconds=60)
    clock.advance(59.999)
    # The reply reads the request open; then the deadline passes and the alarm expires it.
    between(racing, lambda: (clock.advance(0.001), pair.expire()))
    refused = pair.refused("reply", "bob", id=asked["id"], version=1, outcome="answered")
    assert refused.code is ErrorCode.VERSION_CONFLICT
    assert refused.details["state"] == "expired"
    final = pair.state(asked["id"])
    assert final["state"] == "expired"
    assert [c["kind"] for c in final["history"]] == ["asked", "expired"]


def test_a_reply_landing_between_the_expirys_read_and_write_wins(
    clock: ManualClock, racing: Any
) -> None:
    pair = Pair(clock, racing)
    asked = pair.ask(body="go?", expires_in_seconds=60)
    # Another invocation whose call began just before the deadline: its reply is in time.
    earlier = ManualClock(clock.now())
    earlier.advance(59.999)
    in_time = App(
        racing,
        earlier,
        queues=pair.world.queues,
        alarms=pair.world.alarms,
        blobs=pair.world.blobs,
        keys=pair.world.app.keys,
        sender=pair.world.sender,
    )
    replied: list[dict[str, Any]] = []

    def reply() -> None:
        arguments = {"id": asked["id"], "version": 1, "outcome": "answered"}
        replied.append(in_time.call("reply", arguments, pair.secrets["bob"], via="rest"))

    clock.advance(60)
    # The alarm reads the request open and due; the reply lands before its write.
    between(racing, reply)
    pair.expire()
    final = pair.state(asked["id"])
    assert final["state"] == "answered"
    assert [c["kind"] for c in final["history"]] == ["asked", "replied"]
    assert replied[0]["state"] == "answered"


def test_of_two_replies_at_once_one_lands_and_the_other_is_told(
    clock: ManualClock, racing: Any
) -> None:
    pair = Pair(clock, racing)
    asked = pair.ask(body="go?", kind="approval", action=DEPLOY)
    between(racing, lambda: pair.call("reply", "pat", id=asked["id"], version=1, outcome="denied"))
    refused = pair.refused("reply", "bob", id=asked["id"], version=1, outcome="approved")
    assert refused.details["state"] == "denied"
    final = pair.state(asked["id"])
    assert final["state"] == "denied"
    assert final["response"]["by"] == pair.ids["pat"]
    assert pair.refused("redeem_approval", "ann", id=asked["id"], action=DEPLOY).code is (
        ErrorCode.VERSION_CONFLICT
    )


def test_two_redemptions_at_once_make_one_intent(
    clock: ManualClock, racing_redemptions: Any
) -> None:
    store = racing_redemptions
    pair = Pair(clock, store)
    asked = pair.ask(body="go?", kind="approval", action=DEPLOY)
    pair.call("reply", "pat", id=asked["id"], version=1, outcome="approved")
    twin: list[dict[str, Any]] = []
    between(
        store,
        lambda: twin.append(pair.call("redeem_approval", "ann", id=asked["id"], action=DEPLOY)),
    )
    first = pair.call("redeem_approval", "ann", id=asked["id"], action=DEPLOY)
    assert first == twin[0]
    assert store.get_execution("acme", asked["id"]).id == first["id"]


@pytest.mark.parametrize("first", ["reply", "replace"])
def test_a_replacement_and_a_reply_one_lands(clock: ManualClock, racing: Any, first: str) -> None:
    pair = Pair(clock, racing)
    asked = pair.ask(body="go?")

    def reply() -> Any:
        return pair.call("reply", "bob", id=asked["id"], version=1, outcome="answered")

    def replace() -> Any:
        arguments = {"id": asked["id"], "version": 1, "body": "v2", "idempotency_key": "r"}
        return pair.call("replace_request", "ann", **arguments)

    landing, losing = (reply, replace) if first == "reply" else (replace, reply)
    between(racing, landing)
    with pytest.raises(VigilError) as caught:
        losing()
    final = pair.state(asked["id"])
    expected = "answered" if first == "reply" else "replaced"
    assert final["state"] == expected
    assert caught.value.details["state"] == expected
    listed = pair.call("request_status", "ann")["requests"]
    assert len(listed) == (1 if first == "reply" else 2)


# -- votes: two surfaces at once ----------------------------------------------------------------
def _reply_via(pair: Pair, who: str, via: Surface, **arguments: Any) -> dict[str, Any]:
    return pair.world.app.call("reply", arguments, pair.secrets[who], via=via)


def test_two_approvals_at_once_both_count_and_approve_it_once(
    clock: ManualClock, racing: Any
) -> None:
    pair = Pair(clock, racing)
    asked = pair.ask(body="go?", kind="approval", action=DEPLOY, policy={"quorum": "all"})
    # bob's vote (the CLI) reads the request; pat's (the console) lands before bob's write.
    between(
        racing,
        lambda: _reply_via(pair, "pat", "console", id=asked["id"], version=1, outcome="approved"),
    )
    decided = _reply_via(pair, "bob", "cli", id=asked["id"], version=1, outcome="approved")
    assert decided["state"] == "approved"
    history = pair.state(asked["id"])["history"]
    assert [(c["kind"], c["by"], c["via"]) for c in history[1:]] == [
        ("voted", pair.ids["pat"], "console"),
        ("replied", pair.ids["bob"], "cli"),
    ]
    intent = pair.call("redeem_approval", "ann", id=asked["id"], action=DEPLOY)
    assert pair.call("redeem_approval", "ann", id=asked["id"], action=DEPLOY) == intent


def test_a_denial_landing_between_an_approvals_read_and_write_decides(
    clock: ManualClock, racing: Any
) -> None:
    pair = Pair(clock, racing)
    asked = pair.ask(body="go?", kind="approval", policy={"quorum": "all"})
    between(
        racing,
        lambda: _reply_via(pair, "pat", "slack", id=asked["id"], version=1, outcome="denied"),
    )
    refused = error_of(
        _reply_via, pair, "bob", "console", id=asked["id"], version=1, outcome="approved"
    )
    assert refused.details["state"] == "denied"
    final = pair.state(asked["id"])
    assert (final["state"], final["response"]["by"], final["response"]["via"]) == (
        "denied",
        pair.ids["pat"],
        "slack",
    )
    assert [c["kind"] for c in final["history"]] == ["asked", "replied"]


def test_the_timer_denying_between_a_votes_read_and_write_wins(
    clock: ManualClock, racing: Any
) -> None:
    pair = Pair(clock, racing)
    asked = pair.ask(
        body="go?", kind="approval", expires_in_seconds=60, policy={"deny_on_timeout": True}
    )
    clock.advance(59.999)
    between(racing, lambda: (clock.advance(0.001), pair.expire()))
    refused = pair.refused("reply", "bob", id=asked["id"], version=1, outcome="approved")
    assert refused.details["state"] == "denied"
    final = pair.state(asked["id"])
    assert (final["state"], final["response"]["answer"]) == ("denied", "timeout")
    assert [c["kind"] for c in final["history"]] == ["asked", "timed_out"]
