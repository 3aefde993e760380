"""Attachment metadata: the in-memory fake and the DynamoDB adapter (on moto) honour one
contract: conditional creation and change, batched reads within a namespace, and a
conversation's files listed in the order they came, paged."""

from __future__ import annotations

from datetime import timedelta

import pytest

from vigil.attachments.records import Attachment
from vigil.clock import ManualClock, to_ms
from vigil.kit.uow import ConditionFailed
from vigil.store import Store


def draft(clock: ManualClock, owner: str = "agt_aaaaaaaaaaaaaaaa") -> Attachment:
    return Attachment.staged(
        "acme", owner, "r\u00e9sum\u00e9.pdf", "application/pdf", 10, "ab" * 32, to_ms(clock.now())
    )


def test_a_draft_is_created_once_and_changed_at_its_version(
    store: Store, clock: ManualClock
) -> None:
    first = draft(clock)
    store.commit([store.save_attachment(first, None)])
    with pytest.raises(ConditionFailed):
        store.commit([store.save_attachment(first, None)])
    assert store.get_attachment("acme", first.id) == first
    assert store.get_attachment("globex", first.id) is None

    file = first.claimed(first.owner, "send/k", "cnv_1", "msg_aaaaaaaaaaaaaaaa", clock.now())
    store.commit([store.save_attachment(file, first.version)])
    with pytest.raises(ConditionFailed):
        store.commit([store.save_attachment(file, first.version)])
    assert store.get_attachment("acme", first.id) == file


def test_attachments_are_read_in_one_batch_within_their_namespace(
    store: Store, clock: ManualClock
) -> None:
    drafts = [draft(clock) for _ in range(3)]
    store.commit([store.save_attachment(d, None) for d in drafts])
    ids = [d.id for d in drafts] + ["att_aaaaaaaaaaaaaaaa"]
    assert {a.id for a in store.get_attachments("acme", ids)} == {d.id for d in drafts}
    assert store.get_attachments("globex", ids) == []
    assert store.get_attachments("acme", []) == []


def test_a_conversations_files_are_listed_in_the_order_they_came(
    store: Store, clock: ManualClock
) -> None:
    files = []
    for n in range(5):
        clock.advance(1)
        made = draft(clock)
        store.commit([store.save_attachment(made, None)])
        file = made.claimed(made.owner, f"op{n}", "cnv_1", f"msg_{n}", clock.now())
        store.commit([store.save_attachment(file, made.version)])
        files.append(file)
    elsewhere = draft(clock).claimed(
        "agt_aaaaaaaaaaaaaaaa", "op", "cnv_2", "msg_x", clock.now() + timedelta(seconds=1)
    )
    store.commit([store.save_attachment(elsewhere, None)])
    first = store.files_of("acme", "cnv_1", None, 3)
    assert [f.id for f in first] == [f.id for f in files[:3]]
    rest = store.files_of("acme", "cnv_1", first[-1].list_position, 3)
    assert [f.id for f in rest] == [f.id for f in files[3:]]
    assert store.files_of("globex", "cnv_1", None, 10) == []
