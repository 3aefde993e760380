"""Requests, their listings, the blocking edges and execution intents: the in-memory fake and
the DynamoDB adapter (on moto) honour one contract."""

from __future__ import annotations

import pytest

from vigil.clock import ManualClock, to_ms
from vigil.conversations.records import MAX_BODY_BYTES, MAX_PARTICIPANTS
from vigil.kit.principals import new_id
from vigil.kit.uow import ConditionFailed
from vigil.requests.inputs import EDITABLE_NAME, MAX_EDITABLE
from vigil.requests.policy import MAX_REASON
from vigil.requests.records import (
    ACTION_BOUNDS,
    MAX_CHOICE,
    MAX_CHOICES,
    MAX_EDITS,
    MAX_HISTORY,
    Change,
    Execution,
    Request,
    Response,
)
from vigil.requests.standing import StandingApproval, StandingTerms
from vigil.requests.store import listing_position
from vigil.requests.waits import WaitGraph
from vigil.store import Store

A = "agt_aaaaaaaaaaaaaaaa"
B = "agt_bbbbbbbbbbbbbbbb"
P = "per_pppppppppppppppp"


def asked(clock: ManualClock, audience: list[str] | None = None, **extra: object) -> Request:
    clock.advance(0.001)
    kind = extra.pop("kind", "approval")
    return Request.asked(
        "acme",
        new_id("req"),
        kind,  # type: ignore[arg-type]
        A,
        audience or [B, P],
        "cnv_cccccccccccccccc",
        "msg_aaaaaaabaaaaaaaa",
        "may I?",
        None,
        {"op": "deploy"} if kind == "approval" else None,
        to_ms(clock.now()),
        60,
        **extra,  # type: ignore[arg-type]
    )


def test_a_request_is_created_once_and_changed_on_its_version(
    store: Store, clock: ManualClock
) -> None:
    request = asked(clock)
    store.commit([store.add_request(request)])
    assert store.get_request("acme", request.id) == request
    assert store.get_request("globex", request.id) is None
    with pytest.raises(ConditionFailed):
        store.commit([store.add_request(request)])

    now = to_ms(clock.now())
    approved = request.replied(B, "approved", None, 1, now)
    store.commit([store.save_request(approved)])
    assert store.get_request("acme", request.id) == approved
    with pytest.raises(ConditionFailed):  # a second change from the same version
        store.commit([store.save_request(request.replied(P, "denied", None, 1, now))])
    assert store.get_requests("acme", [request.id, "req_none", request.id]) == [approved]


def test_each_principal_lists_what_it_asked_or_decides_oldest_first(
    store: Store, clock: ManualClock
) -> None:
    first, second = asked(clock), asked(clock, audience=[B])
    store.commit([store.add_request(first)])
    store.commit([store.add_request(second)])
    places = [listing_position(first), listing_position(second)]
    assert store.list_requests("acme", A, None, 10) == places
    assert store.list_requests("acme", B, None, 10) == places
    assert store.list_requests("acme", P, None, 10) == [listing_position(first)]
    assert store.list_requests("acme", A, places[0], 10) == places[1:]
    assert store.list_requests("acme", A, None, 1) == places[:1]
    assert store.list_requests("globex", A, None, 10) == []


def test_a_request_to_a_full_chat_fits_with_its_listings(store: Store, clock: ManualClock) -> None:
    """The largest request: a body of 32 KiB, the largest action and choices, the audience of
    a full chat, and a full history. Its hundred and one listings go ahead of it."""
    audience = [f"agt_{n:016d}" for n in range(MAX_PARTICIPANTS - 1)]
    request = asked(clock, audience=audience)
    request = request.model_copy(
        update={
            "body": "\x01" * MAX_BODY_BYTES,
            "choices": [f"{n:02d}" + "é" * (MAX_CHOICE - 2) for n in range(MAX_CHOICES)],
            "action": {"k": "\x01" * (ACTION_BOUNDS.max_bytes - 16)},
            "history": request.history * MAX_HISTORY,
        }
    )
    store.commit([store.add_request(request), store.count("acme", "open_requests", 1, 10)])
    assert store.get_request("acme", request.id) == request
    assert len(store.list_requests("acme", audience[-1], None, 10)) == 1


def test_a_request_with_every_vote_and_the_largest_answer_fits(
    store: Store, clock: ManualClock
) -> None:
    """The largest request again, its history full of counted votes each with the longest
    reason (of characters JSON escapes six bytes long), and its response the deciding vote's
    (an approval whose votes are counted takes no longer answer)."""
    audience = [f"agt_{n:016d}" for n in range(MAX_PARTICIPANTS - 1)]
    request = asked(clock, audience=audience)
    vote = Change(
        kind="voted",
        by=audience[0],
        at=to_ms(clock.now()),
        version=2,
        via="console",
        outcome="denied",
        reason="\x01" * MAX_REASON,
    )
    answer = "\x01" * MAX_REASON
    request = request.model_copy(
        update={
            "body": "\x01" * MAX_BODY_BYTES,
            "choices": [f"{n:02d}" + "é" * (MAX_CHOICE - 2) for n in range(MAX_CHOICES)],
            "action": {"k": "\x01" * (ACTION_BOUNDS.max_bytes - 16)},
            "history": [vote] * MAX_HISTORY,
            "response": Response(outcome="denied", answer=answer, by=audience[0], at=vote.at),
        }
    )
    store.commit([store.add_request(request)])
    assert store.get_request("acme", request.id) == request


def test_a_request_edited_as_often_as_it_may_be_still_fits(
    store: Store, clock: ManualClock
) -> None:
    """The largest request with every vote (above), three of its votes edits of the action,
    each keeping its members before and after at the most an action holds (8 KiB of JSON),
    and the action as asked kept beside it."""
    audience = [f"agt_{n:016d}" for n in range(MAX_PARTICIPANTS - 1)]
    request = asked(clock, audience=audience)
    # A character JSON writes six bytes long, as many as 8 KiB of JSON holds.
    most = {"k": "\x01" * (ACTION_BOUNDS.max_bytes // 6 - 2)}
    assert ACTION_BOUNDS.size(most) <= ACTION_BOUNDS.max_bytes
    vote = Change(
        kind="voted",
        by=audience[0],
        at=to_ms(clock.now()),
        version=2,
        via="console",
        outcome="denied",
        reason="\x01" * MAX_REASON,
    )
    edit = vote.model_copy(update={"outcome": "approved", "edits": most, "edited_from": most})
    request = request.model_copy(
        update={
            "body": "\x01" * MAX_BODY_BYTES,
            "choices": [f"{n:02d}" + "é" * (MAX_CHOICE - 2) for n in range(MAX_CHOICES)],
            "action": most,
            "asked_action": most,
            "editable": ["k" * EDITABLE_NAME] * MAX_EDITABLE,
            "history": [edit] * MAX_EDITS + [vote] * (MAX_HISTORY - MAX_EDITS),
            "response": Response(outcome="denied", answer=vote.reason, by=audience[0], at=vote.at),
        }
    )
    store.commit([store.add_request(request)])
    assert store.get_request("acme", request.id) == request


def test_the_wait_graph_starts_empty_and_moves_on_its_version(
    store: Store, clock: ManualClock
) -> None:
    empty = store.get_wait_graph("acme")
    assert empty == WaitGraph(namespace="acme", version=0)
    request = asked(clock, audience=[B], blocking=True)
    graph = empty.adding(request)
    store.commit([store.save_wait_graph(graph)])
    assert store.get_wait_graph("acme") == graph
    with pytest.raises(ConditionFailed):
        store.commit([store.save_wait_graph(empty.adding(request))])
    cleared = graph.without(request.id)
    store.commit([store.save_wait_graph(cleared)])
    assert store.get_wait_graph("acme").edges == []
    assert store.get_wait_graph("globex").version == 0


def test_an_approval_has_one_execution_intent(store: Store, clock: ManualClock) -> None:
    request = asked(clock).replied(B, "approved", None, 1, to_ms(clock.now()))
    intent = Execution.redeemed(request, A, {"op": "deploy"}, to_ms(clock.now()))
    store.commit([store.add_execution(intent)])
    assert store.get_execution("acme", request.id) == intent
    with pytest.raises(ConditionFailed):
        store.commit([store.add_execution(intent)])
    started = intent.reported(A, "started", {"n": 1}, to_ms(clock.now()))
    assert started is not None
    store.commit([store.save_execution(started)])
    assert store.get_execution("acme", request.id) == started
    with pytest.raises(ConditionFailed):
        store.commit([store.save_execution(started)])
    assert store.get_execution("globex", request.id) is None


def test_a_shared_answer_is_kept_under_its_key_and_replaced(
    store: Store, clock: ManualClock
) -> None:
    question = asked(clock, kind="question", shared_key="region")
    first = question.replied(B, "answered", "eu", 1, to_ms(clock.now())).shared_answer()
    assert first is not None
    assert store.get_shared_answer("acme", first.key) is None
    store.commit([store.keep_shared_answer(first)])
    assert store.get_shared_answer("acme", first.key) == first
    second = first.model_copy(update={"request_id": "req_other"})
    store.commit([store.keep_shared_answer(second)])
    assert store.get_shared_answer("acme", first.key) == second
    assert store.get_shared_answer("globex", first.key) is None


# -- standing approvals -------------------------------------------------------------------------
def _standing(clock: ManualClock, asker: str, hours: float, **terms: object) -> StandingApproval:
    return StandingApproval.granted(
        "acme",
        new_id("req"),
        asker,
        P,
        {"op": "deploy", "ref": "release/1"},
        StandingTerms(hours=hours, **terms),  # type: ignore[arg-type]
        to_ms(clock.now()),
    )


def test_standing_approvals_answer_their_asker_or_any_until_they_end(
    store: Store, clock: ManualClock
) -> None:
    mine = _standing(clock, A, 2)
    anyones = _standing(clock, B, 1, any_asker=True)
    others = _standing(clock, B, 3)
    store.commit([store.add_standing(s) for s in (mine, anyones, others)])
    with pytest.raises(ConditionFailed):
        store.commit([store.add_standing(mine)])
    assert store.get_standing("acme", mine.id) == mine
    assert store.get_standing("globex", mine.id) is None
    now = clock.now()
    # Soonest to expire first: any agent's (1 h), then A's own (2 h); never B's own.
    assert [s.id for s in store.standing_for("acme", A, now)] == [anyones.id, mine.id]
    assert store.standing_for("globex", A, now) == []
    clock.advance(3600)
    assert [s.id for s in store.standing_for("acme", A, clock.now())] == [mine.id]

    used = mine.used_on("req_x", clock.now())
    store.commit([store.save_standing(used)])
    with pytest.raises(ConditionFailed):  # a use or revocation made on the version before
        store.commit([store.save_standing(mine.revoked(P, False, clock.now()))])
    revoked = used.revoked(P, False, clock.now())
    store.commit([store.save_standing(revoked)])
    assert store.get_standing("acme", mine.id) == revoked
    assert store.standing_for("acme", A, clock.now()) == []
    listed = [s.id for _, s in store.list_standing("acme", None, 10)]
    assert mine.id not in listed
    assert others.id in listed


def test_the_standing_listing_pages_in_order(store: Store, clock: ManualClock) -> None:
    granted = [_standing(clock, A if i % 2 else B, 1 + i) for i in range(7)]
    store.commit([store.add_standing(s) for s in granted])
    seen: list[str] = []
    after = None
    while True:
        page = store.list_standing("acme", after, 3)
        seen += [s.id for _, s in page]
        if len(page) < 3:
            break
        after = page[-1][0]
    assert sorted(seen) == sorted(s.id for s in granted)
    assert len(seen) == len(set(seen))
    positions = [p for p, _ in store.list_standing("acme", None, 10)]
    assert positions == sorted(positions)
