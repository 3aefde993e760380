"""Conversations and their messages: the in-memory fake and the DynamoDB adapter (on moto)
honour one contract, DynamoDB's size limits included."""

from __future__ import annotations

import pytest

from tests.contract.test_store_contract import principal
from vigil.clock import ManualClock, to_ms
from vigil.conversations.records import (
    MAX_BODY_BYTES,
    MAX_PARTICIPANTS,
    Conversation,
    Mention,
    Message,
)
from vigil.kit.uow import ConditionFailed
from vigil.store import Store

A = "agt_aaaaaaaaaaaaaaaa"
B = "agt_bbbbbbbbbbbbbbbb"
P = "per_pppppppppppppppp"


def started(
    clock: ManualClock, *others: str, kind: str = "chat", body: str = "hello"
) -> tuple[Conversation, Message]:
    conversation = Conversation.started(
        "acme",
        kind,  # type: ignore[arg-type]
        A,
        list(others or (B, P)),
        "plans" if kind == "chat" else None,
        to_ms(clock.now()),
    )
    return conversation.posted(A, body, [], to_ms(clock.now()))


def test_a_conversation_starts_with_its_first_message(store: Store, clock: ManualClock) -> None:
    conversation, first = started(clock)
    store.commit([store.start_conversation(conversation, first)])

    assert store.get_conversation("acme", conversation.id) == conversation
    assert store.get_conversation("globex", conversation.id) is None
    assert store.get_message("acme", conversation.id, 1) == first
    assert first.recipients == [B]
    assert first.delivered == 0
    with pytest.raises(ConditionFailed):
        store.commit([store.start_conversation(conversation, first)])


def test_a_pair_reuses_one_direct_conversation(store: Store, clock: ManualClock) -> None:
    assert store.get_direct("acme", A, B) is None
    reused, first = started(clock, B, kind="direct")
    store.commit([store.start_conversation(reused, first, reused=True)])
    assert store.get_direct("acme", A, B) == reused.id
    assert store.get_direct("acme", B, A) == reused.id
    assert store.get_direct("globex", A, B) is None

    # A second one for the same pair is refused; one not reused is not recorded.
    rival, rival_first = started(clock, B, kind="direct")
    with pytest.raises(ConditionFailed):
        store.commit([store.start_conversation(rival, rival_first, reused=True)])
    assert store.get_conversation("acme", rival.id) is None
    store.commit([store.start_conversation(rival, rival_first)])
    assert store.get_direct("acme", A, B) == reused.id


def test_a_message_takes_the_next_number_at_the_version_read(
    store: Store, clock: ManualClock
) -> None:
    conversation, first = started(clock)
    store.commit([store.start_conversation(conversation, first)])
    numbered, second = conversation.posted(
        B, "two", [Mention(start=0, end=3, principal_id=A)], clock.now()
    )
    store.commit([store.add_message(conversation, second)])
    assert store.get_conversation("acme", conversation.id) == numbered
    assert store.get_message("acme", conversation.id, 2) == second

    # Another message took number 2 first: the same number again is refused.
    _, again = conversation.posted(P, "also two", [], clock.now())
    with pytest.raises(ConditionFailed):
        store.commit([store.add_message(conversation, again)])
    assert store.get_message("acme", conversation.id, 2) == second


def test_a_membership_change_and_a_message_never_cross(store: Store, clock: ManualClock) -> None:
    conversation, first = started(clock)
    store.commit([store.start_conversation(conversation, first)])
    _, sent_unseen = conversation.posted(B, "racing", [], clock.now())
    renamed = conversation.renamed("new plans")
    store.commit([store.save_conversation(renamed)])

    # A message composed against version 1 cannot land after version 2 exists...
    with pytest.raises(ConditionFailed):
        store.commit([store.add_message(conversation, sent_unseen)])
    # ...and a change composed before a message cannot land after it.
    numbered, sent = renamed.posted(B, "after the rename", [], clock.now())
    store.commit([store.add_message(renamed, sent)])
    with pytest.raises(ConditionFailed):
        store.commit([store.save_conversation(renamed.without([P]))])
    with pytest.raises(ConditionFailed):
        store.commit([store.save_conversation(conversation.renamed("stale"))])
    assert store.get_conversation("acme", conversation.id) == numbered

    removed = numbered.without([P])
    store.commit([store.save_conversation(removed)])
    assert store.get_conversation("acme", conversation.id) == removed


def test_messages_are_listed_in_number_order_after_a_number(
    store: Store, clock: ManualClock
) -> None:
    conversation, first = started(clock)
    store.commit([store.start_conversation(conversation, first)])
    for n in range(2, 13):
        conversation, message = conversation.posted(A, f"m{n}", [], clock.now())
        current = store.get_conversation("acme", conversation.id)
        assert current is not None
        store.commit([store.add_message(current, message)])

    assert [m.seq for m in store.list_messages("acme", conversation.id, 0, 5)] == [1, 2, 3, 4, 5]
    assert [m.body for m in store.list_messages("acme", conversation.id, 9, 5)] == [
        "m10",
        "m11",
        "m12",
    ]
    assert store.list_messages("acme", conversation.id, 12, 5) == []
    assert store.list_messages("globex", conversation.id, 0, 5) == []


def test_delivery_progress_only_moves_forward(store: Store, clock: ManualClock) -> None:
    conversation, first = started(clock, B, "agt_cccccccccccccccc", "agt_dddddddddddddddd")
    store.commit([store.start_conversation(conversation, first)])

    store.mark_delivered(first, 2)
    stored = store.get_message("acme", conversation.id, 1)
    assert stored is not None
    assert stored.delivered == 2
    assert stored.owed() == ["agt_dddddddddddddddd"]
    for behind in (1, 2):
        with pytest.raises(ConditionFailed):
            store.mark_delivered(first, behind)
    store.mark_delivered(first, 3)
    stored = store.get_message("acme", conversation.id, 1)
    assert stored is not None
    assert stored.owed() == []
    _, never_stored = conversation.posted(A, "not stored", [], clock.now())
    with pytest.raises(ConditionFailed):
        store.mark_delivered(never_stored, 1)
    assert store.get_message("acme", conversation.id, 2) is None


def test_the_largest_records_fit_one_item_and_one_transaction(
    store: Store, clock: ManualClock
) -> None:
    """A full chat and a body at its limit of the characters JSON escapes longest."""
    others = [f"agt_{chr(97 + n // 26)}{chr(97 + n % 26)}{'q' * 14}" for n in range(100)]
    assert len(set(others)) == MAX_PARTICIPANTS - 1
    mentions = [Mention(start=n, end=n + 1, principal_id=others[n]) for n in range(20)]
    conversation = Conversation.started("acme", "chat", A, others, "t" * 200, to_ms(clock.now()))
    numbered, first = conversation.posted(A, "\x01" * MAX_BODY_BYTES, mentions, clock.now())
    store.commit([store.start_conversation(numbered, first)])
    stored = store.get_message("acme", numbered.id, 1)
    assert stored is not None
    assert stored.body == first.body
    assert len(stored.recipients) == MAX_PARTICIPANTS - 1


def test_principals_are_read_in_one_batch_within_their_namespace(
    store: Store, clock: ManualClock
) -> None:
    mine = [principal(clock, name=f"p{n}") for n in range(3)]
    abroad = principal(clock, ns="globex")
    store.commit([store.add_principal(p) for p in [*mine, abroad]])

    wanted = [mine[0].id, mine[2].id, abroad.id, "agt_zzzzzzzzzzzzzzzz", "not an id", mine[0].id]
    found = store.get_principals("acme", wanted)
    assert sorted(p.id for p in found) == sorted([mine[0].id, mine[2].id])
    assert store.get_principals("acme", []) == []
