"""Sessions and instructions: the in-memory fake and the DynamoDB adapter (on moto) honour one
contract."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import pending_claim
from vigil.clock import ManualClock, to_ms
from vigil.kit.idempotency import IdempotencyRecord
from vigil.kit.uow import ConditionFailed
from vigil.sessions.records import Instruction, Session, new_instruction_id
from vigil.store import Store

OWNER = "agt_aaaaaaaaaaaaaaaa"
PERSON = "per_pppppppppppppppp"


def session(clock: ManualClock, session_id: str = "s-1", **changes: Any) -> Session:
    now = to_ms(clock.now())
    fields: dict[str, Any] = {
        "namespace": "acme",
        "session_id": session_id,
        "owner": OWNER,
        "status": "active",
        "progress_percent": None,
        "current_step": None,
        "step_index": None,
        "step_count": None,
        "created_at": now,
        "last_beat_at": now,
        "beats": 1,
        "acked_through": 0,
        "last_seq": 0,
        "version": 1,
    }
    return Session(**{**fields, **changes})


def beaten(current: Session, clock: ManualClock, **changes: Any) -> Session:
    return current.model_copy(
        update={
            "last_beat_at": to_ms(clock.now()),
            "beats": current.beats + 1,
            "version": current.version + 1,
            **changes,
        }
    )


def instruction(
    clock: ManualClock, seq: int, session_id: str = "s-1", **changes: Any
) -> Instruction:
    fields: dict[str, Any] = {
        "namespace": "acme",
        "session_id": session_id,
        "seq": seq,
        "id": new_instruction_id(seq),
        "body": f"step {seq}: do the thing",
        "posted_by": PERSON,
        "posted_at": to_ms(clock.now()),
        "state": "pending",
        "delivery_count": 0,
    }
    return Instruction(**{**fields, **changes})


def handed(found: Instruction, clock: ManualClock) -> Instruction:
    return found.model_copy(
        update={
            "state": "delivered",
            "delivery_count": found.delivery_count + 1,
            "last_delivered_at": to_ms(clock.now()),
        }
    )


def acked(found: Instruction, clock: ManualClock) -> Instruction:
    return found.model_copy(update={"state": "acknowledged", "acknowledged_at": to_ms(clock.now())})


def claim(clock: ManualClock, token: str = "t1") -> IdempotencyRecord:
    return pending_claim(clock, OWNER, "session_heartbeat", token)


def completed(record: IdempotencyRecord) -> IdempotencyRecord:
    return record.model_copy(update={"status": "completed", "result": {"ok": True}})


def posted(store: Store, clock: ManualClock, count: int, session_id: str = "s-1") -> list[Any]:
    stored = store.get_session("acme", session_id)
    assert stored is not None
    made = [instruction(clock, stored.last_seq + n, session_id) for n in range(1, count + 1)]
    for one in made:
        store.commit([store.save_instruction(one)])
    return made


def seqs(found: list[Instruction]) -> list[int]:
    return [i.seq for i in found]


def test_the_first_beat_creates_the_session_once(store: Store, clock: ManualClock) -> None:
    first = session(clock, progress_percent=12.5, current_step="reading", step_index=1)
    store.commit([store.save_beat(first, [], [])])
    assert store.get_session("acme", "s-1") == first
    assert store.get_session("globex", "s-1") is None
    with pytest.raises(ConditionFailed):
        store.commit([store.save_beat(session(clock, owner="agt_bbbbbbbbbbbbbbbb"), [], [])])
    assert store.get_session("acme", "s-1") == first


def test_a_beat_is_conditional_on_the_version_and_keeps_the_posted_number(
    store: Store, clock: ManualClock
) -> None:
    first = session(clock)
    store.commit([store.save_beat(first, [], [])])
    with pytest.raises(ConditionFailed):
        store.commit([store.save_beat(beaten(first, clock, version=3), [], [])])
    with pytest.raises(ConditionFailed):
        store.commit([store.save_beat(beaten(session(clock, session_id="absent"), clock), [], [])])

    posted(store, clock, 2)  # moves last_seq, not the version
    clock.advance(5)
    second = beaten(first, clock, status="blocked", progress_percent=40.0)
    store.commit([store.save_beat(second, [], [])])
    stored = store.get_session("acme", "s-1")
    assert stored == second.model_copy(update={"last_seq": 2})
    with pytest.raises(ConditionFailed):
        store.commit([store.save_beat(beaten(first, clock), [], [])])  # read before the second beat


def test_posting_takes_the_next_number_only(store: Store, clock: ManualClock) -> None:
    with pytest.raises(ConditionFailed):
        store.commit([store.save_instruction(instruction(clock, 1))])  # no session
    store.commit([store.save_beat(session(clock), [], [])])
    with pytest.raises(ConditionFailed):
        store.commit([store.save_instruction(instruction(clock, 2))])  # skips a number
    one = instruction(clock, 1)
    store.commit([store.save_instruction(one)])
    with pytest.raises(ConditionFailed):
        store.commit([store.save_instruction(instruction(clock, 1))])  # the number is taken
    stored = store.get_session("acme", "s-1")
    assert stored is not None
    assert (stored.last_seq, stored.version) == (1, 1)
    assert store.get_instructions("acme", "s-1", [1]) == [one]
    assert store.get_instructions("globex", "s-1", [1]) == []
    assert store.get_instructions("acme", "s-2", [1]) == []


def test_the_completion_is_atomic_with_the_post(store: Store, clock: ManualClock) -> None:
    store.commit([store.save_beat(session(clock), [], [])])
    record = claim(clock)
    assert store.claim_idempotency(record, clock.now()) is None
    one = instruction(clock, 1)
    store.commit([store.save_instruction(one)], completed(record))
    replay = store.claim_idempotency(claim(clock, token="t2"), clock.now())
    assert replay is not None
    assert replay.status == "completed"

    with pytest.raises(ConditionFailed):
        store.commit([store.save_instruction(instruction(clock, 2))], completed(record))
    stored = store.get_session("acme", "s-1")
    assert stored is not None
    assert stored.last_seq == 1
    assert store.get_instructions("acme", "s-1", [1, 2]) == [one]


def test_open_instructions_reads_a_range_in_order_without_the_acknowledged(
    store: Store, clock: ManualClock
) -> None:
    store.commit([store.save_beat(session(clock), [], [])])
    made = posted(store, clock, 6)
    current = store.get_session("acme", "s-1")
    assert current is not None
    delivered = [handed(i, clock) for i in made[:4]]
    second = beaten(current, clock)
    store.commit([store.save_beat(second, delivered, [])])
    done = [acked(delivered[1], clock), acked(delivered[2], clock)]
    store.commit([store.save_beat(beaten(second, clock), [], done)])

    assert seqs(store.open_instructions("acme", "s-1", 0, 6, 10)) == [1, 4, 5, 6]
    assert seqs(store.open_instructions("acme", "s-1", 0, 5, 10)) == [1, 4, 5]
    assert seqs(store.open_instructions("acme", "s-1", 0, 6, 2)) == [1, 4]
    assert seqs(store.open_instructions("acme", "s-1", 1, 6, 2)) == [4, 5]
    assert seqs(store.open_instructions("acme", "s-1", 6, 6, 10)) == []
    assert seqs(store.open_instructions("acme", "s-1", 6, 9, 10)) == []
    found = store.open_instructions("acme", "s-1", 0, 1, 10)
    assert found == [delivered[0]]
    # Everything in any state, in order.
    listed = store.list_instructions("acme", "s-1", 0, 10)
    states = ["delivered", "acknowledged", "acknowledged", "delivered", "pending", "pending"]
    assert [i.state for i in listed] == states
    assert listed[1] == done[0]
    assert seqs(store.list_instructions("acme", "s-1", 2, 3)) == [3, 4, 5]
    assert store.list_instructions("acme", "s-1", 6, 3) == []


def test_deliveries_and_acknowledgments_are_conditional(store: Store, clock: ManualClock) -> None:
    first = session(clock)
    store.commit([store.save_beat(first, [], [])])
    one, two = posted(store, clock, 2)
    with pytest.raises(ConditionFailed):  # never delivered: cannot be acknowledged
        store.commit([store.save_beat(beaten(first, clock), [], [acked(one, clock)])])
    with pytest.raises(ConditionFailed):  # a count that is not one more than the stored one
        store.commit(
            [store.save_beat(beaten(first, clock), [handed(handed(one, clock), clock)], [])]
        )
    with pytest.raises(ConditionFailed):  # an id that is not the stored one
        store.commit(
            [
                store.save_beat(
                    beaten(first, clock), [handed(one, clock).model_copy(update={"id": two.id})], []
                )
            ]
        )
    assert store.get_instructions("acme", "s-1", [1, 2]) == [one, two]

    second = beaten(first, clock)
    store.commit([store.save_beat(second, [handed(one, clock)], [])])
    third = beaten(second, clock)
    store.commit([store.save_beat(third, [], [acked(handed(one, clock), clock)])])
    with pytest.raises(ConditionFailed):  # acknowledged: never handed out again
        store.commit(
            [store.save_beat(beaten(third, clock), [handed(handed(one, clock), clock)], [])]
        )
    with pytest.raises(ConditionFailed):  # acknowledging twice is the caller's no-op, not ours
        store.commit(
            [store.save_beat(beaten(third, clock), [], [acked(handed(one, clock), clock)])]
        )
    stored = store.get_instructions("acme", "s-1", [1])[0]
    assert (stored.state, stored.delivery_count) == ("acknowledged", 1)


def test_a_failed_beat_writes_nothing(store: Store, clock: ManualClock) -> None:
    first = session(clock)
    store.commit([store.save_beat(first, [], [])])
    one, two, three = posted(store, clock, 3)
    second = beaten(first, clock)
    store.commit([store.save_beat(second, [handed(one, clock)], [])])
    before = store.list_instructions("acme", "s-1", 0, 10)
    # The acknowledgment and the first delivery hold; the second delivery does not.
    with pytest.raises(ConditionFailed):
        store.commit(
            [
                store.save_beat(
                    beaten(second, clock, status="waiting"),
                    [handed(two, clock), handed(handed(three, clock), clock)],
                    [acked(handed(one, clock), clock)],
                )
            ]
        )
    assert store.list_instructions("acme", "s-1", 0, 10) == before
    stored = store.get_session("acme", "s-1")
    assert stored is not None
    assert (stored.status, stored.version) == ("active", 2)


def test_the_completion_is_atomic_with_the_beat(store: Store, clock: ManualClock) -> None:
    first = session(clock)
    store.commit([store.save_beat(first, [], [])])
    (one,) = posted(store, clock, 1)
    record = claim(clock)
    assert store.claim_idempotency(record, clock.now()) is None
    second = beaten(first, clock)
    store.commit([store.save_beat(second, [handed(one, clock)], [])], completed(record))
    with pytest.raises(ConditionFailed):  # the claim is no longer ours
        store.commit(
            [store.save_beat(beaten(second, clock), [handed(handed(one, clock), clock)], [])],
            completed(record),
        )
    stored = store.get_instructions("acme", "s-1", [1])[0]
    assert stored.delivery_count == 1
    current = store.get_session("acme", "s-1")
    assert current is not None
    assert current.version == 2


def test_a_beat_larger_than_one_transaction_stores_everything(
    store: Store, clock: ManualClock
) -> None:
    current = session(clock)
    store.commit([store.save_beat(current, [], [])])
    made = posted(store, clock, 110)
    delivered = [handed(i, clock) for i in made]
    for start in range(0, 110, 10):
        current = beaten(current, clock)
        store.commit([store.save_beat(current, delivered[start : start + 10], [])])
    record = claim(clock)
    assert store.claim_idempotency(record, clock.now()) is None
    current = beaten(current, clock)
    store.commit(
        [
            store.save_beat(
                current,
                [handed(i, clock) for i in delivered[100:]],
                [acked(i, clock) for i in delivered[:100]],
            )
        ],
        completed(record),
    )
    assert seqs(store.open_instructions("acme", "s-1", 0, 110, 20)) == list(range(101, 111))
    assert all(i.delivery_count == 2 for i in store.open_instructions("acme", "s-1", 0, 110, 20))
    assert store.get_instructions("acme", "s-1", list(range(1, 101)))[99].state == "acknowledged"
    replay = store.claim_idempotency(claim(clock, token="t2"), clock.now())
    assert replay is not None
    assert replay.status == "completed"


def test_get_instructions_reads_up_to_a_hundred_at_once(store: Store, clock: ManualClock) -> None:
    store.commit([store.save_beat(session(clock), [], [])])
    made = posted(store, clock, 101)
    assert store.get_instructions("acme", "s-1", list(range(1, 101))) == made[:100]
    assert seqs(store.get_instructions("acme", "s-1", [101, 3, 3, 500])) == [3, 101]
    assert store.get_instructions("acme", "s-1", []) == []


def test_list_sessions_pages_one_namespace_in_id_order(store: Store, clock: ManualClock) -> None:
    for session_id in ["b", "a:1", "c.d", "a"]:
        store.commit([store.save_beat(session(clock, session_id=session_id), [], [])])
    store.commit(
        [store.save_beat(session(clock).model_copy(update={"namespace": "globex"}), [], [])]
    )
    assert [s.session_id for s in store.list_sessions("acme", None, 10)] == ["a", "a:1", "b", "c.d"]
    assert [s.session_id for s in store.list_sessions("acme", "a", 2)] == ["a:1", "b"]
    assert store.list_sessions("acme", "c.d", 2) == []
    assert [s.session_id for s in store.list_sessions("globex", None, 10)] == ["s-1"]
    # A listed session is the stored one, last number included.
    posted(store, clock, 2, session_id="b")
    (listed,) = [s for s in store.list_sessions("acme", None, 10) if s.session_id == "b"]
    assert listed == store.get_session("acme", "b")
    assert listed.last_seq == 2


def test_the_longest_session_id_and_body_fit(store: Store, clock: ManualClock) -> None:
    session_id = "x" * 128
    store.commit(
        [store.save_beat(session(clock, session_id=session_id, current_step="é" * 500), [], [])]
    )
    big = instruction(clock, 1, session_id, body="\U0001d518" * 2048)  # 8 KiB of UTF-8
    store.commit([store.save_instruction(big)])
    assert store.get_instructions("acme", session_id, [1]) == [big]
    assert store.open_instructions("acme", session_id, 0, 1, 5) == [big]
