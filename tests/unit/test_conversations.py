"""Conversations at the service layer, on the in-memory store and queues: sending and its
delivery into the agents' mailboxes (and its completion by a retry after a failure part-way),
mentions in code points, direct history reused only on request, shared chats and their
membership, what each participant may read, and who may contact whom."""

from __future__ import annotations

import base64
import copy
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support import Tenant, app_on, error_of
from vigil.clock import ManualClock
from vigil.conversations.records import MAX_BODY_BYTES, MAX_PARTICIPANTS, Message
from vigil.conversations.service import DELIVERY_BATCH, MESSAGES_PAGE, PAGE_BYTES
from vigil.errors import ErrorCode, VigilError, unavailable
from vigil.mailboxes.memory import MemoryMailboxQueues
from vigil.mailboxes.queues import QueueRef
from vigil.stores.memory import MemoryStore


class FlakyQueues(MemoryMailboxQueues):
    """SQS that refuses every message after the first ``fail_after`` it accepts."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__(clock)
        self.fail_after: int | None = None
        self.accepted = 0

    def send(self, ref: QueueRef, body: str) -> str:
        if self.fail_after is not None and self.accepted >= self.fail_after:
            raise unavailable("the mailbox queue is temporarily unavailable; retry later")
        self.accepted += 1
        return super().send(ref, body)


class Recording(MemoryStore):
    """Counts delivery records, and runs ``before_commit`` once, just before the next commit
    (another caller acting between a call's reads and its write)."""

    def __init__(self) -> None:
        super().__init__()
        self.marks: list[int] = []
        self.losing_marks = False
        self.before_commit: Callable[[], None] | None = None

    def mark_delivered(self, message: Message, count: int) -> None:
        if self.losing_marks:
            raise unavailable("the store is temporarily unavailable; retry later")
        self.marks.append(count)
        super().mark_delivered(message, count)

    def commit(self, writes: Any, completion: Any = None) -> None:
        run, self.before_commit = self.before_commit, None
        if run is not None:
            run()
        super().commit(writes, completion)


@dataclass
class Room:
    tenant: Tenant
    store: Recording
    queues: FlakyQueues
    secrets: dict[str, str]  # label -> secret
    ids: dict[str, str]  # label -> principal id

    def call(self, tool: str, who: str, **arguments: Any) -> dict[str, Any]:
        return self.tenant.call(tool, self.secrets[who], **arguments)

    def refused(self, tool: str, who: str, **arguments: Any) -> VigilError:
        return error_of(self.call, tool, who, **arguments)

    def add(self, label: str, kind: str = "agent") -> str:
        principal_id, secret = self.tenant.register(kind=kind, name=label)
        self.ids[label], self.secrets[label] = principal_id, secret
        return principal_id

    def target(self, label: str) -> dict[str, str]:
        principal_id = self.ids[label]
        kind = {"agt": "agent", "per": "person", "svc": "service"}[principal_id[:3]]
        return {"kind": kind, "id": principal_id}

    def inbox(self, label: str) -> list[dict[str, Any]]:
        """Everything handed to ``label`` now, acknowledged."""
        got: list[dict[str, Any]] = []
        while True:
            page = self.call("receive", label, max_messages=10)["deliveries"]
            if not page:
                return got
            for delivery in page:
                self.call("acknowledge", label, id=delivery["id"], generation=1)
            got += page

    def history(self, label: str, conversation_id: str) -> list[str]:
        bodies: list[str] = []
        cursor: dict[str, str] = {}
        while True:
            page = self.call("get_conversation", label, id=conversation_id, **cursor)
            bodies += [m["body"] for m in page["messages"]]
            if page["next_cursor"] is None:
                return bodies
            cursor = {"cursor": page["next_cursor"]}

    def chat(self, manager: str, *others: str, body: str = "kick-off") -> dict[str, Any]:
        return self.call("start_chat", manager, targets=[self.target(o) for o in others], body=body)


@pytest.fixture
def room(clock: ManualClock) -> Room:
    store, queues = Recording(), FlakyQueues(clock)
    app = app_on(store, clock, queues=queues)
    room = Room(Tenant(app, clock, "acme"), store, queues, {}, {})
    room.secrets["operator"] = room.tenant.operator_secret
    room.ids["operator"] = room.tenant.operator.id
    for label in ("ann", "bob", "cat"):
        room.add(label)
    room.add("pat", kind="person")
    room.add("svc", kind="service")
    return room


def snapshot(store: MemoryStore, queues: MemoryMailboxQueues) -> Any:
    kept = {name: value for name, value in vars(store).items() if isinstance(value, dict)}
    return copy.deepcopy((kept, queues.queues))


# -- sending --------------------------------------------------------------------------------
def test_a_message_to_an_agent_reaches_its_mailbox_once(room: Room) -> None:
    sent = room.call("send", "ann", target=room.target("bob"), body="the build is green")
    (message,) = sent["messages"]
    assert sent["created"] is True
    assert message["queued_for"] == [room.ids["bob"]]

    (delivery,) = room.inbox("bob")
    assert delivery["kind"] == "message"
    assert delivery["sender"] == room.ids["ann"]
    assert delivery["payload"] == {
        "conversation_id": sent["conversation_id"],
        "message_id": message["id"],
        "body": "the build is green",
        "mentions": [],
        "attachments": [],
    }
    assert room.inbox("ann") == []
    read = room.call("get_conversation", "bob", id=sent["conversation_id"])
    assert [(m["sender"], m["body"]) for m in read["messages"]] == [
        (room.ids["ann"], "the build is green")
    ]
    assert {p["principal_id"] for p in read["participants"]} == {room.ids["ann"], room.ids["bob"]}


def test_people_and_services_read_the_conversation_and_get_no_envelope(room: Room) -> None:
    for reader in ("pat", "svc"):
        sent = room.call("send", "ann", target=room.target(reader), body=f"for {reader}")
        assert sent["messages"][0]["queued_for"] == []
        assert room.history(reader, sent["conversation_id"]) == [f"for {reader}"]
        replied = room.call("send", reader, conversation_id=sent["conversation_id"], body="noted")
        assert replied["messages"][0]["queued_for"] == [room.ids["ann"]]
    assert [d["payload"]["body"] for d in room.inbox("ann")] == ["noted", "noted"]


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"conversation_id": "cnv_aaaaaaaaaaaaaaaa", "target": {"kind": "agent", "id": "x"}},
        {"conversation_id": "cnv_aaaaaaaaaaaaaaaa", "title": "t"},
        {"conversation_id": "cnv_aaaaaaaaaaaaaaaa", "reuse_direct": True},
        {"target": {"kind": "robot", "id": "x"}},
        {"target": {"kind": "agent"}},
    ],
)
def test_send_needs_exactly_one_destination(room: Room, arguments: dict[str, Any]) -> None:
    before = snapshot(room.store, room.queues)
    refused = room.refused("send", "ann", body="hi", **arguments)
    assert refused.code is ErrorCode.INVALID_ARGUMENT
    assert snapshot(room.store, room.queues) == before


def test_the_body_is_bounded_in_bytes_of_utf8_not_characters(room: Room) -> None:
    at_limit = "é" * (MAX_BODY_BYTES // 2)  # 16,384 characters, 32 KiB
    sent = room.call("send", "ann", target=room.target("bob"), body=at_limit)
    assert room.history("bob", sent["conversation_id"]) == [at_limit]
    before = snapshot(room.store, room.queues)
    refused = room.refused("send", "ann", target=room.target("bob"), body=at_limit + "a")
    assert refused.code is ErrorCode.INVALID_ARGUMENT
    assert "bytes of UTF-8" in refused.details["problems"][0]["problem"]
    lone = room.refused("send", "ann", target=room.target("bob"), body="half \ud83d")
    assert lone.code is ErrorCode.INVALID_ARGUMENT
    assert snapshot(room.store, room.queues) == before


def test_the_longest_body_when_escaped_still_fits_an_sqs_message_and_an_item(room: Room) -> None:
    body = "\x01" * MAX_BODY_BYTES  # six bytes each as JSON
    sent = room.call("send", "ann", target=room.target("bob"), body=body)
    (delivery,) = room.inbox("bob")
    assert delivery["payload"]["body"] == body
    assert room.history("ann", sent["conversation_id"]) == [body]


# -- mentions -------------------------------------------------------------------------------
def test_mentions_count_code_points_and_address_without_narrowing(room: Room) -> None:
    body = "👋🏽 @bob, \U0001d538 🎉 @cat: ship it"  # a mathematical A, outside the BMP too
    bob, cat = body.index("@bob"), body.index("@cat")
    assert (bob, cat) == (3, 13)  # code points; UTF-16 would say 5 and 17, UTF-8 far more
    mentions = [
        {"start": bob, "end": bob + 4, "principal_id": room.ids["bob"]},
        {"start": cat, "end": cat + 4, "principal_id": room.ids["cat"]},
    ]
    chat = room.chat("ann", "bob", "cat", "pat")
    room.call(
        "send",
        "ann",
        conversation_id=chat["conversation_id"],
        body=body,
        mentions=[mentions[0]],
    )
    delivered = {label: room.inbox(label)[-1] for label in ("bob", "cat")}
    assert delivered["cat"]["payload"]["body"] == body  # not mentioned, still a reader
    assert delivered["bob"]["payload"]["mentions"] == [mentions[0]]
    span = delivered["bob"]["payload"]["mentions"][0]
    assert body[span["start"] : span["end"]] == "@bob"
    read = room.call("get_conversation", "pat", id=chat["conversation_id"])
    assert read["messages"][-1]["mentions"] == [mentions[0]]

    room.call("send", "ann", target=room.target("bob"), body=body, mentions=mentions[:1])
    assert room.inbox("bob")[-1]["payload"]["mentions"] == mentions[:1]


@pytest.mark.parametrize(
    ("start", "end"),
    [(0, 0), (3, 2), (0, 9), (8, 9)],  # empty, reversed, and past the body's 8 code points
)
def test_a_mention_outside_the_body_is_refused(room: Room, start: int, end: int) -> None:
    mention = {"start": start, "end": end, "principal_id": room.ids["bob"]}
    before = snapshot(room.store, room.queues)
    refused = room.refused(
        "send", "ann", target=room.target("bob"), body="hi 🙂 bob", mentions=[mention]
    )
    assert refused.code is ErrorCode.INVALID_ARGUMENT
    assert snapshot(room.store, room.queues) == before


def test_a_mention_names_a_participant(room: Room) -> None:
    before = snapshot(room.store, room.queues)
    for stranger in (room.ids["cat"], "agt_zzzzzzzzzzzzzzzz"):
        refused = room.refused(
            "send",
            "ann",
            target=room.target("bob"),
            body="ask cat",
            mentions=[{"start": 4, "end": 7, "principal_id": stranger}],
        )
        assert refused.code is ErrorCode.INVALID_ARGUMENT
        assert refused.details == {"ids": [stranger]}
    assert snapshot(room.store, room.queues) == before


# -- direct history -------------------------------------------------------------------------
def test_direct_history_is_reused_only_when_asked(room: Room) -> None:
    first = room.call("send", "ann", target=room.target("bob"), body="one")
    second = room.call("send", "ann", target=room.target("bob"), body="two")
    assert first["conversation_id"] != second["conversation_id"]

    reused = room.call("send", "ann", target=room.target("bob"), body="three", reuse_direct=True)
    assert reused["created"] is True
    back = room.call("send", "bob", target=room.target("ann"), body="four", reuse_direct=True)
    assert back["conversation_id"] == reused["conversation_id"]
    assert back["created"] is False
    assert room.history("ann", reused["conversation_id"]) == ["three", "four"]
    assert room.history("ann", first["conversation_id"]) == ["one"]


def test_a_shared_chat_is_never_taken_for_direct_history(room: Room) -> None:
    chat = room.chat("ann", "bob")
    direct = room.call("send", "ann", target=room.target("bob"), body="d", reuse_direct=True)
    assert direct["conversation_id"] != chat["conversation_id"]
    again = room.chat("ann", "bob")
    assert again["conversation_id"] != chat["conversation_id"]
    assert room.history("bob", chat["conversation_id"]) == ["kick-off"]


# -- who may contact whom, and who may read --------------------------------------------------
def test_only_active_principals_of_the_namespace_can_be_contacted(
    room: Room, other_tenant: Tenant
) -> None:
    abroad, _ = other_tenant.register(name="abroad")
    before = snapshot(room.store, room.queues)
    missing = room.refused(
        "send", "ann", target={"kind": "agent", "id": "agt_zzzzzzzzzzzzzzzz"}, body="x"
    )
    elsewhere = room.refused("send", "ann", target={"kind": "agent", "id": abroad}, body="x")
    wrong_kind = room.refused(
        "send", "ann", target={"kind": "person", "id": room.ids["bob"]}, body="x"
    )
    opaque = room.refused("send", "ann", target={"kind": "agent", "id": "not/an id"}, body="x")
    for refused in (elsewhere, wrong_kind, opaque):
        assert refused.to_dict() == missing.to_dict()
    assert missing.code is ErrorCode.NOT_FOUND
    itself = room.refused("send", "ann", target=room.target("ann"), body="x")
    assert itself.code is ErrorCode.INVALID_ARGUMENT
    in_chat = room.refused(
        "start_chat", "ann", targets=[room.target("bob"), {"kind": "agent", "id": abroad}], body="x"
    )
    assert in_chat.to_dict() == missing.to_dict()
    assert snapshot(room.store, room.queues) == before

    revoked = room.add("gone")
    room.call("revoke_principal", "operator", principal_id=revoked, version=1)
    refused = room.refused("send", "ann", target={"kind": "agent", "id": revoked}, body="x")
    assert refused.code is ErrorCode.INVALID_ARGUMENT
    assert refused.details == {"ids": [revoked]}


def test_a_conversation_is_read_and_written_by_its_participants_only(
    room: Room, other_tenant: Tenant
) -> None:
    sent = room.call("send", "ann", target=room.target("bob"), body="private")
    conversation_id = sent["conversation_id"]
    missing = room.refused("get_conversation", "cat", id="cnv_zzzzzzzzzzzzzzzz")
    assert missing.code is ErrorCode.NOT_FOUND
    for who in ("cat", "pat", "operator"):
        assert room.refused("get_conversation", who, id=conversation_id).to_dict() == (
            missing.to_dict()
        )
        refused = room.refused("send", who, conversation_id=conversation_id, body="me too")
        assert refused.to_dict() == missing.to_dict()
    abroad = error_of(other_tenant.call, "get_conversation", id=conversation_id)
    assert abroad.to_dict() == missing.to_dict()
    assert room.history("bob", conversation_id) == ["private"]


# -- delivery and its retry ------------------------------------------------------------------
def test_a_send_failing_part_way_is_completed_by_its_retry(room: Room) -> None:
    chat = room.chat("ann", "bob", "cat", "pat", "svc")
    for label in ("bob", "cat"):
        room.inbox(label)
    room.queues.fail_after = room.queues.accepted + 1  # bob's envelope goes, cat's does not
    arguments = {
        "conversation_id": chat["conversation_id"],
        "body": "deploy at noon",
        "idempotency_key": "noon",
    }
    failed = room.refused("send", "ann", **arguments)
    assert failed.code is ErrorCode.UNAVAILABLE
    assert failed.retryable is True
    # The message is stored, and the first recipient has it; the rest is owed.
    assert room.history("pat", chat["conversation_id"])[-1] == "deploy at noon"
    assert [d["payload"]["body"] for d in room.inbox("bob")] == ["deploy at noon"]
    assert room.inbox("cat") == []

    room.queues.fail_after = None
    retried = room.call("send", "ann", **arguments)
    assert [d["payload"]["body"] for d in room.inbox("cat")] == ["deploy at noon"]
    assert room.inbox("bob") == []
    assert retried["messages"][0]["queued_for"] == [room.ids["bob"], room.ids["cat"]]
    assert room.history("pat", chat["conversation_id"]) == ["kick-off", "deploy at noon"]

    # Once delivered, a replay queues nothing more.
    queued = room.queues.accepted
    assert room.call("send", "ann", **arguments) == retried
    assert room.queues.accepted == queued


def test_a_crash_after_queueing_before_recording_delivers_each_envelope_once(
    room: Room,
) -> None:
    chat = room.chat("ann", "bob", "cat")
    for label in ("bob", "cat"):
        room.inbox(label)
    arguments = {"conversation_id": chat["conversation_id"], "body": "b", "idempotency_key": "k"}
    room.store.losing_marks = True
    assert room.refused("send", "ann", **arguments).code is ErrorCode.UNAVAILABLE
    room.store.losing_marks = False
    room.call("send", "ann", **arguments)
    # Two copies of each envelope were queued; each recipient is handed one.
    for label in ("bob", "cat"):
        assert [d["payload"]["body"] for d in room.inbox(label)] == ["b"]


def test_a_chat_of_a_hundred_agents_fits_and_each_receives_once(room: Room) -> None:
    agents = [f"a{n}" for n in range(MAX_PARTICIPANTS - 1)]
    for label in agents:
        room.add(label)
    room.store.marks.clear()
    chat = room.call(
        "start_chat", "ann", targets=[room.target(a) for a in agents], body="all hands"
    )
    assert len(chat["messages"][0]["queued_for"]) == len(agents)
    batches = -(-len(agents) // DELIVERY_BATCH)
    assert room.store.marks == [min(n * DELIVERY_BATCH, len(agents)) for n in range(1, batches + 1)]
    for label in (agents[0], agents[-1]):
        assert [d["payload"]["body"] for d in room.inbox(label)] == ["all hands"]
    crowded = room.refused(
        "change_chat_membership",
        "ann",
        conversation_id=chat["conversation_id"],
        operation="add",
        members=[room.ids["bob"]],
        version=1,
    )
    assert crowded.code is ErrorCode.LIMIT_EXCEEDED
    assert crowded.details == {"limit": MAX_PARTICIPANTS}


# -- shared chats and their membership -------------------------------------------------------
def test_members_added_later_read_from_when_they_joined_unless_history_is_shared(
    room: Room,
) -> None:
    chat = room.chat("ann", "bob", body="before")
    conversation_id = chat["conversation_id"]
    joined = room.call(
        "change_chat_membership",
        "ann",
        conversation_id=conversation_id,
        operation="add",
        members=[room.ids["cat"]],
        version=1,
    )
    assert joined == {"conversation_id": conversation_id, "version": 2, "left": None}
    room.call(
        "change_chat_membership",
        "ann",
        conversation_id=conversation_id,
        operation="add",
        members=[room.ids["pat"]],
        share_history=True,
        version=2,
    )
    room.call("send", "bob", conversation_id=conversation_id, body="after")
    assert room.history("cat", conversation_id) == ["after"]
    assert room.history("pat", conversation_id) == ["before", "after"]
    assert room.history("bob", conversation_id) == ["before", "after"]
    assert [d["payload"]["body"] for d in room.inbox("cat")] == ["after"]


def test_a_removed_member_loses_the_chat_at_once(room: Room) -> None:
    chat = room.chat("ann", "bob", "cat")
    conversation_id = chat["conversation_id"]
    missing = room.refused("get_conversation", "cat", id="cnv_zzzzzzzzzzzzzzzz")
    room.call(
        "change_chat_membership",
        "ann",
        conversation_id=conversation_id,
        operation="remove",
        members=[room.ids["cat"]],
        version=1,
    )
    assert room.refused("get_conversation", "cat", id=conversation_id).to_dict() == (
        missing.to_dict()
    )
    assert room.refused("send", "cat", conversation_id=conversation_id, body="x").code is (
        ErrorCode.NOT_FOUND
    )
    sent = room.call("send", "ann", conversation_id=conversation_id, body="without cat")
    assert sent["messages"][0]["queued_for"] == [room.ids["bob"]]
    read = room.call("get_conversation", "bob", id=conversation_id)
    assert {p["principal_id"] for p in read["participants"]} == {room.ids["ann"], room.ids["bob"]}


def test_a_stale_version_conflicts_and_changes_nothing(room: Room) -> None:
    chat = room.chat("ann", "bob")
    conversation_id = chat["conversation_id"]
    room.call(
        "change_chat_membership",
        "ann",
        conversation_id=conversation_id,
        operation="rename",
        title="release",
        version=1,
    )
    before = snapshot(room.store, room.queues)
    stale = room.refused(
        "change_chat_membership",
        "ann",
        conversation_id=conversation_id,
        operation="add",
        members=[room.ids["cat"]],
        version=1,
    )
    assert stale.code is ErrorCode.VERSION_CONFLICT
    assert stale.details == {"current_version": 2}
    assert stale.retryable is False
    assert snapshot(room.store, room.queues) == before
    read = room.call("get_conversation", "bob", id=conversation_id)
    assert (read["title"], read["version"]) == ("release", 2)


def test_the_seeds_rename_without_a_title_clears_it(room: Room) -> None:
    chat = room.call(
        "start_chat", "ann", targets=[room.target("bob")], body="kick-off", title="release"
    )
    conversation_id = chat["conversation_id"]
    # The coordination seed's own example: a rename at the current version, and no title.
    renamed = room.call(
        "change_chat_membership",
        "ann",
        conversation_id=conversation_id,
        operation="rename",
        version=1,
    )
    assert renamed == {"conversation_id": conversation_id, "version": 2, "left": None}
    read = room.call("get_conversation", "bob", id=conversation_id)
    assert (read["title"], read["version"]) == (None, 2)


def test_a_title_is_any_text_kept_as_written(room: Room) -> None:
    title = "release\n\tnotes \u202e\x1b[31m 👩‍💻"
    chat = room.call("start_chat", "ann", targets=[room.target("bob")], body="b", title=title)
    read = room.call("get_conversation", "bob", id=chat["conversation_id"])
    assert read["title"] == title
    refused = room.refused(
        "start_chat", "ann", targets=[room.target("bob")], body="b", title="\ud800"
    )
    assert refused.code is ErrorCode.INVALID_ARGUMENT


def test_sends_do_not_make_a_membership_change_stale(room: Room) -> None:
    chat = room.chat("ann", "bob")
    conversation_id = chat["conversation_id"]
    for n in range(3):
        room.call("send", "bob", conversation_id=conversation_id, body=f"m{n}")
    changed = room.call(
        "change_chat_membership",
        "ann",
        conversation_id=conversation_id,
        operation="add",
        members=[room.ids["cat"]],
        version=1,
    )
    assert changed["version"] == 2


def test_a_send_racing_a_removal_is_refused_on_its_retry(room: Room) -> None:
    chat = room.chat("ann", "bob", "cat")
    conversation_id = chat["conversation_id"]

    def removal() -> None:
        room.call(
            "change_chat_membership",
            "ann",
            conversation_id=conversation_id,
            operation="remove",
            members=[room.ids["cat"]],
            version=1,
        )

    room.store.before_commit = removal
    refused = room.refused("send", "cat", conversation_id=conversation_id, body="sneaking in")
    assert refused.code is ErrorCode.NOT_FOUND
    assert room.history("bob", conversation_id) == ["kick-off"]


def test_a_member_added_while_a_message_is_sent_is_its_reader_or_not_both_ways(
    room: Room,
) -> None:
    chat = room.chat("ann", "bob")
    conversation_id = chat["conversation_id"]

    def send() -> None:
        room.call("send", "bob", conversation_id=conversation_id, body="racing")

    room.store.before_commit = send
    room.call(
        "change_chat_membership",
        "ann",
        conversation_id=conversation_id,
        operation="add",
        members=[room.ids["cat"]],
        version=1,
    )
    # The send won the race: cat, added after it, neither reads nor receives it.
    assert room.history("cat", conversation_id) == []
    assert room.inbox("cat") == []


def test_only_the_manager_renames_adds_and_removes(room: Room) -> None:
    chat = room.chat("ann", "bob", "cat")
    conversation_id = chat["conversation_id"]
    before = snapshot(room.store, room.queues)
    for operation, extra in (
        ("rename", {"title": "mine"}),
        ("add", {"members": [room.ids["pat"]]}),
        ("remove", {"members": [room.ids["cat"]]}),
    ):
        refused = room.refused(
            "change_chat_membership",
            "bob",
            conversation_id=conversation_id,
            operation=operation,
            version=1,
            **extra,
        )
        assert refused.code is ErrorCode.FORBIDDEN
    assert snapshot(room.store, room.queues) == before


def test_a_leaving_manager_hands_the_chat_on(room: Room) -> None:
    chat = room.chat("ann", "bob", "cat")
    conversation_id = chat["conversation_id"]
    for extra in ({}, {"next_manager": room.ids["pat"]}, {"next_manager": room.ids["ann"]}):
        refused = room.refused(
            "change_chat_membership",
            "ann",
            conversation_id=conversation_id,
            operation="leave",
            version=1,
            **extra,
        )
        assert refused.code is ErrorCode.INVALID_ARGUMENT
    left = room.call(
        "change_chat_membership",
        "ann",
        conversation_id=conversation_id,
        operation="leave",
        next_manager=room.ids["bob"],
        version=1,
    )
    assert left == {"conversation_id": conversation_id, "version": 2, "left": True}
    assert room.refused("get_conversation", "ann", id=conversation_id).code is (ErrorCode.NOT_FOUND)
    read = room.call("get_conversation", "cat", id=conversation_id)
    assert read["manager"] == room.ids["bob"]
    room.call(
        "change_chat_membership",
        "cat",
        conversation_id=conversation_id,
        operation="leave",
        version=2,
    )
    renamed = room.call(
        "change_chat_membership",
        "bob",
        conversation_id=conversation_id,
        operation="rename",
        title="just me",
        version=3,
    )
    assert renamed["version"] == 4


@pytest.mark.parametrize(
    "arguments",
    [
        {"operation": "rename", "title": "t", "members": ["agt_aaaaaaaaaaaaaaaa"]},
        {"operation": "add"},
        {"operation": "add", "members": []},
        {"operation": "remove", "members": ["x"], "share_history": True},
        {"operation": "leave", "title": "t"},
        {"operation": "add", "members": ["x"], "next_manager": "y"},
        {"operation": "join", "members": ["x"]},
    ],
)
def test_each_operation_takes_its_own_fields(room: Room, arguments: dict[str, Any]) -> None:
    chat = room.chat("ann", "bob")
    before = snapshot(room.store, room.queues)
    refused = room.refused(
        "change_chat_membership",
        "ann",
        conversation_id=chat["conversation_id"],
        version=1,
        **arguments,
    )
    assert refused.code is ErrorCode.INVALID_ARGUMENT
    assert snapshot(room.store, room.queues) == before


def test_a_direct_conversation_keeps_its_two_participants(room: Room) -> None:
    sent = room.call("send", "ann", target=room.target("bob"), body="x")
    refused = room.refused(
        "change_chat_membership",
        "ann",
        conversation_id=sent["conversation_id"],
        operation="add",
        members=[room.ids["cat"]],
        version=1,
    )
    assert refused.code is ErrorCode.INVALID_ARGUMENT


# -- reading ------------------------------------------------------------------------------------
def test_history_is_paged_oldest_first_with_an_opaque_cursor(room: Room) -> None:
    chat = room.chat("ann", "bob", body="m0")
    conversation_id = chat["conversation_id"]
    for n in range(1, 45):
        room.call("send", "ann", conversation_id=conversation_id, body=f"m{n}")
    pages = []
    cursor: dict[str, str] = {}
    while True:
        page = room.call("get_conversation", "bob", id=conversation_id, **cursor)
        pages.append([m["body"] for m in page["messages"]])
        if page["next_cursor"] is None:
            break
        cursor = {"cursor": page["next_cursor"]}
    assert [len(p) for p in pages] == [MESSAGES_PAGE, MESSAGES_PAGE, 5]
    assert [b for p in pages for b in p] == [f"m{n}" for n in range(45)]

    other = room.chat("ann", "bob")
    refused = room.refused("get_conversation", "bob", id=other["conversation_id"], **cursor)
    assert refused.code is ErrorCode.INVALID_ARGUMENT


def test_a_page_holds_a_bounded_amount_of_text(room: Room) -> None:
    chat = room.chat("ann", "bob", body="m0")
    conversation_id = chat["conversation_id"]
    big = "x" * MAX_BODY_BYTES
    for _ in range(8):
        room.call("send", "ann", conversation_id=conversation_id, body=big)
    page = room.call("get_conversation", "bob", id=conversation_id)
    assert sum(len(m["body"]) for m in page["messages"]) <= PAGE_BYTES
    assert page["next_cursor"] is not None
    assert len(room.history("bob", conversation_id)) == 9


# -- not available yet --------------------------------------------------------------------------
def stage(room: Room, who: str, data: bytes = b"report", name: str = "r.txt") -> str:
    staged = room.call(
        "stage_attachment",
        who,
        base64=base64.b64encode(data).decode(),
        file_name=name,
        media_type="text/plain",
    )
    return str(staged["id"])


def test_a_message_carries_its_claimed_drafts_to_its_readers(room: Room) -> None:
    first, second = stage(room, "ann", b"one", "one.txt"), stage(room, "ann", b"two", "two.txt")
    sent = room.call(
        "send",
        "ann",
        target=room.target("bob"),
        body="files attached",
        attachment_ids=[first, second],
        idempotency_key="with-files",
    )
    (message,) = sent["messages"]
    assert message["attachment_ids"] == [first, second]
    (delivery,) = room.inbox("bob")
    carried = delivery["payload"]["attachments"]
    assert [(a["id"], a["file_name"], a["size"]) for a in carried] == [
        (first, "one.txt", 3),
        (second, "two.txt", 3),
    ]
    read = room.call("get_conversation", "bob", id=sent["conversation_id"])
    assert [a["id"] for a in read["messages"][0]["attachments"]] == [first, second]
    for attachment_id in (first, second):
        stored = room.store.get_attachment("acme", attachment_id)
        assert stored is not None
        assert (stored.state, stored.message_id) == ("file", message["id"])

    # The same call retried claims nothing twice and replays its answer; any other operation
    # naming a claimed draft is refused, and changes nothing.
    again = room.call(
        "send",
        "ann",
        target=room.target("bob"),
        body="files attached",
        attachment_ids=[first, second],
        idempotency_key="with-files",
    )
    assert again == sent
    before = snapshot(room.store, room.queues)
    for tool, arguments in (
        ("send", {"conversation_id": sent["conversation_id"]}),
        ("start_chat", {"targets": [room.target("cat")]}),
    ):
        refused = room.refused(tool, "ann", body="again", attachment_ids=[first], **arguments)
        assert refused.code is ErrorCode.INVALID_ARGUMENT
        assert "claimed by another operation" in refused.message
    assert snapshot(room.store, room.queues) == before


def test_a_draft_is_its_stagers_and_lasts_a_day(room: Room, clock: ManualClock) -> None:
    bobs = stage(room, "bob")
    refused = room.refused(
        "send", "ann", target=room.target("cat"), body="x", attachment_ids=[bobs]
    )
    assert refused.code is ErrorCode.NOT_FOUND
    anns = stage(room, "ann")
    clock.advance(24 * 3600)
    expired = room.refused(
        "start_chat", "ann", targets=[room.target("cat")], body="x", attachment_ids=[anns]
    )
    assert expired.code is ErrorCode.NOT_FOUND
    assert room.store.conversations == {} or all(
        c.created_by != room.ids["ann"] for c in room.store.conversations.values()
    )


# -- files in conversations ----------------------------------------------------------------------
def upload(room: Room, who: str, conversation_id: str, data: bytes, name: str) -> dict[str, Any]:
    return room.call(
        "upload_attachment",
        who,
        conversation_id=conversation_id,
        base64=base64.b64encode(data).decode(),
        file_name=name,
        media_type="text/plain",
    )


def seen(room: Room, who: str, conversation_id: str) -> list[str]:
    listed = room.call("list_attachments", who, conversation_id=conversation_id)
    return [a["file_name"] for a in listed["attachments"]]


def test_file_access_follows_history_access(room: Room, clock: ManualClock) -> None:
    chat = room.chat("ann", "bob")
    cid = chat["conversation_id"]
    early = upload(room, "ann", cid, b"before", "early.txt")
    clock.advance(1)
    version = room.call("get_conversation", "ann", id=cid)["version"]
    room.call(
        "change_chat_membership",
        "ann",
        conversation_id=cid,
        version=version,
        operation="add",
        members=[room.ids["cat"]],
    )
    clock.advance(1)
    room.call(
        "send",
        "bob",
        conversation_id=cid,
        body="late",
        attachment_ids=[stage(room, "bob", b"x", "late.txt")],
    )
    clock.advance(1)
    upload(room, "bob", cid, b"after", "after.txt")
    assert seen(room, "ann", cid) == ["early.txt", "late.txt", "after.txt"]
    assert seen(room, "cat", cid) == ["late.txt", "after.txt"]  # joined later, history not shared
    hidden = room.refused("download_attachment", "cat", id=early["id"])
    assert hidden.code is ErrorCode.NOT_FOUND
    got = room.call("download_attachment", "bob", id=early["id"])
    assert (base64.b64decode(got["base64"]), got["download_url"]) == (b"before", None)

    # Shared history: a member added with it sees every file.
    version = room.call("get_conversation", "ann", id=cid)["version"]
    room.call(
        "change_chat_membership",
        "ann",
        conversation_id=cid,
        version=version,
        operation="add",
        members=[room.ids["pat"]],
        share_history=True,
    )
    assert seen(room, "pat", cid) == ["early.txt", "late.txt", "after.txt"]
    # Removed: nothing of the conversation is there any more, files included.
    version = room.call("get_conversation", "ann", id=cid)["version"]
    room.call(
        "change_chat_membership",
        "ann",
        conversation_id=cid,
        version=version,
        operation="remove",
        members=[room.ids["bob"]],
    )
    for tool, arguments in (
        ("list_attachments", {"conversation_id": cid}),
        ("download_attachment", {"id": early["id"]}),
        (
            "upload_attachment",
            {
                "conversation_id": cid,
                "base64": "eA==",
                "file_name": "x",
                "media_type": "text/plain",
            },
        ),
    ):
        assert room.refused(tool, "bob", **arguments).code is ErrorCode.NOT_FOUND
    # Another namespace sees the same not_found as a missing file.
    other = Tenant(room.tenant.app, clock, "globex")
    missing = error_of(other.call, "download_attachment", id="att_aaaaaaaaaaaaaaaa")
    foreign = error_of(other.call, "download_attachment", id=early["id"])
    assert (foreign.code, foreign.message) == (missing.code, missing.message)


def test_a_large_file_downloads_through_a_presigned_url(room: Room) -> None:
    begun = room.call(
        "begin_attachment_upload", "ann", file_name="big.bin", media_type="application/zip"
    )
    key = begun["upload"]["fields"]["key"]
    data = b"\x07" * (64 * 1024 + 1)
    room.tenant.app.blobs.put(key, data, "application/zip", hashlib.sha256(data).hexdigest())
    draft = room.call("finish_attachment_upload", "ann", id=begun["attachment"]["id"])
    sent = room.call(
        "send", "ann", target=room.target("bob"), body="big", attachment_ids=[draft["id"]]
    )
    got = room.call("download_attachment", "bob", id=draft["id"])
    assert (got["size"], got["base64"]) == (64 * 1024 + 1, None)
    assert got["download_url"]
    assert sent["messages"][0]["attachment_ids"] == [draft["id"]]


def test_an_upload_racing_a_removal_is_refused(room: Room, monkeypatch: pytest.MonkeyPatch) -> None:
    cid = room.chat("ann", "bob")["conversation_id"]
    store = room.store
    put = room.tenant.app.blobs.put

    def removed_meanwhile(key: str, data: bytes, media_type: str, sha256: str) -> None:
        put(key, data, media_type, sha256)
        # Between the membership read and the record: the manager removes the uploader.
        version = room.call("get_conversation", "ann", id=cid)["version"]
        room.call(
            "change_chat_membership",
            "ann",
            conversation_id=cid,
            version=version,
            operation="remove",
            members=[room.ids["bob"]],
        )

    monkeypatch.setattr(room.tenant.app.blobs, "put", removed_meanwhile)
    refused = room.refused(
        "upload_attachment",
        "bob",
        conversation_id=cid,
        base64="eA==",
        file_name="x",
        media_type="text/plain",
    )
    assert refused.code is ErrorCode.VERSION_CONFLICT
    monkeypatch.undo()
    assert all(a.owner != room.ids["bob"] for a in store.attachments.values())


def test_a_participant_revoked_since_is_skipped_and_the_others_still_receive(room: Room) -> None:
    chat = room.chat("ann", "bob", "cat")
    room.inbox("bob")
    room.inbox("cat")
    bob = room.call("whoami", "bob")["principal"]
    room.call("revoke_principal", "operator", principal_id=bob["id"], version=bob["version"])

    room.call("send", "ann", conversation_id=chat["conversation_id"], body="after")

    assert [d["payload"]["body"] for d in room.inbox("cat")] == ["after"]
    assert room.history("cat", chat["conversation_id"])[-1] == "after"
    assert not any(bob["id"].lower() in name.lower() for name in room.queues.queues)
