"""Sessions with human instructions at the service layer: beats, redelivery until
acknowledgment, paging while people keep posting (posts injected between pages and inside a
beat), retries, and who may do what."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import Tenant, app_on, error_of
from vigil import catalog
from vigil.clock import ManualClock, parse_iso
from vigil.errors import ErrorCode
from vigil.identity.tools import RegisterInput
from vigil.kit.uow import Write
from vigil.sessions.records import (
    PAGE_SIZE,
    STALE_AFTER_SECONDS,
    Instruction,
    Session,
    new_instruction_id,
)
from vigil.sessions.tools import SessionHeartbeatInput
from vigil.store import Store
from vigil.stores.dynamo import DynamoStore
from vigil.stores.memory import MemoryStore


class Interleaving(MemoryStore):
    """Runs the actions queued for a point of the next beat when that beat reaches it: after
    it read the session and before it reads the instructions, or just before it writes."""

    def __init__(self) -> None:
        super().__init__()
        self.before_page: list[Callable[[], None]] = []
        self.before_write: list[Callable[[], None]] = []
        self.writes = 0

    @staticmethod
    def _run(queued: list[Callable[[], None]]) -> None:
        while queued:
            queued.pop(0)()

    def open_instructions(
        self, namespace: str, session_id: str, after: int, through: int, limit: int
    ) -> list[Instruction]:
        self._run(self.before_page)
        return super().open_instructions(namespace, session_id, after, through, limit)

    def save_beat(
        self, session: Session, delivered: list[Instruction], acknowledged: list[Instruction]
    ) -> Write:
        self._run(self.before_write)
        self.writes += 1
        return super().save_beat(session, delivered, acknowledged)


@dataclass
class Desk:
    """One namespace: an agent working a session, a person steering it, and the rest."""

    tenant: Tenant
    agent: str
    agent_id: str
    person: str
    person_id: str
    keys: Iterator[int] = field(default_factory=lambda: iter(range(1, 1_000_000)))

    @property
    def store(self) -> Store:
        return self.tenant.app.store

    def beat(self, secret: str | None = None, **arguments: Any) -> dict[str, Any]:
        arguments.setdefault("sessionId", "s-1")
        arguments.setdefault("idempotencyKey", f"beat-{next(self.keys)}")
        return self.tenant.call("session_heartbeat", secret or self.agent, **arguments)

    def post(self, body: str = "look again", secret: str | None = None, **arguments: Any) -> str:
        arguments.setdefault("sessionId", "s-1")
        posted = self.tenant.call("post_instruction", secret or self.person, body=body, **arguments)
        instruction_id: str = posted["id"]
        return instruction_id

    def instructions(self, secret: str | None = None, session_id: str = "s-1") -> list[Any]:
        found: list[Any] = []
        cursor: dict[str, str] = {}
        while True:
            page = self.tenant.call(
                "list_instructions", secret or self.person, sessionId=session_id, **cursor
            )
            found += page["instructions"]
            if page["nextCursor"] is None:
                return found
            cursor = {"cursor": page["nextCursor"]}

    def session(self, session_id: str = "s-1") -> Session | None:
        return self.store.get_session(self.tenant.namespace, session_id)


def make_desk(tenant: Tenant) -> Desk:
    agent_id, agent = tenant.register(name="agent")
    person_id, person = tenant.register(kind="person", name="person")
    return Desk(tenant, agent, agent_id, person, person_id)


@pytest.fixture
def store() -> Interleaving:
    return Interleaving()


@pytest.fixture
def desk(store: Interleaving, clock: ManualClock) -> Desk:
    return make_desk(Tenant(app_on(store, clock), clock, "acme"))


def ids(beat: dict[str, Any]) -> list[str]:
    return [i["id"] for i in beat["instructions"]]


def walk(desk: Desk, **arguments: Any) -> list[list[str]]:
    """Beats until the walk is complete; the ids of each page."""
    pages = []
    beat = desk.beat(**arguments)
    pages.append(ids(beat))
    while beat["nextInstructionCursor"] is not None:
        beat = desk.beat(instructionCursor=beat["nextInstructionCursor"])
        pages.append(ids(beat))
    return pages


# -- beats --------------------------------------------------------------------------------
def test_the_first_beat_creates_the_session_for_its_caller(desk: Desk, clock: ManualClock) -> None:
    beat = desk.beat(progressPercent=5, currentStep="reading the brief")
    assert beat == {
        "sessionId": "s-1",
        "status": "active",
        "progressPercent": 5.0,
        "currentStep": "reading the brief",
        "stepIndex": None,
        "stepCount": None,
        "lastBeatAt": "2026-01-01T00:00:00Z",
        "instructions": [],
        "nextInstructionCursor": None,
        "acknowledged": [],
        "unknownInstructionIds": [],
    }
    stored = desk.session()
    assert stored is not None
    assert (stored.owner, stored.beats, stored.created_at) == (desk.agent_id, 1, clock.now())


def test_what_a_beat_leaves_out_keeps_its_last_value(desk: Desk, clock: ManualClock) -> None:
    desk.beat(status="waiting", progressPercent=10, currentStep="one", stepIndex=1, stepCount=4)
    clock.advance(30)
    beat = desk.beat(progressPercent=55.5)
    assert (beat["status"], beat["progressPercent"], beat["currentStep"]) == (
        "waiting",
        55.5,
        "one",
    )
    assert (beat["stepIndex"], beat["stepCount"]) == (1, 4)
    assert parse_iso(beat["lastBeatAt"]) == clock.now()
    beat = desk.beat(status="blocked", stepIndex=4, stepCount=4)
    assert (beat["status"], beat["stepIndex"], beat["progressPercent"]) == ("blocked", 4, 55.5)


def test_the_current_step_is_any_text_kept_as_written(desk: Desk) -> None:
    # The seed types currentStep as a string and bounds it nowhere: a plan's step may span
    # lines, carry tabs or any script, or be empty; it is kept as sent, up to 8 KiB of UTF-8.
    for step in ("read\nthe brief", "\tindented\r\n", "", "🚀 日本語 \u202e\x00", "é" * 4096):
        assert desk.beat(currentStep=step)["currentStep"] == step
        stored = desk.session()
        assert stored is not None
        assert stored.current_step == step


@pytest.mark.parametrize(
    "arguments",
    [
        {"stepIndex": 2},
        {"stepCount": 2},
        {"stepIndex": 3, "stepCount": 2},
        {"stepIndex": 0, "stepCount": 2},
        {"stepIndex": 1, "stepCount": 1001},
        {"stepIndex": 1.0, "stepCount": 2},
        {"progressPercent": 100.5},
        {"progressPercent": -1},
        {"progressPercent": True},
        {"progressPercent": "50"},
        {"status": "done"},
        {"status": None},
        {"currentStep": None},
        {"currentStep": "x" * (8 * 1024 + 1)},
        {"currentStep": "é" * (4 * 1024 + 1)},
        {"currentStep": "\ud800"},
        {"sessionId": "zero\u200bwidth"},
        {"sessionId": "x" * 129},
        {"sessionId": ""},
        {"idempotencyKey": "tab\tkey"},
        {"idempotencyKey": None},
        {"acknowledgedInstructionIds": [""]},
        {"acknowledgedInstructionIds": ["x" * 65]},
        {"acknowledgedInstructionIds": [new_instruction_id(n) for n in range(1, 102)]},
        {"instructionCursor": "c" * 513},
        {"session_id": "s-1"},
        {"idempotency_key": "k"},
    ],
)
def test_malformed_beats_are_refused_and_record_nothing(
    desk: Desk, arguments: dict[str, Any]
) -> None:
    desk.beat(stepIndex=1, stepCount=3)
    before = desk.session()
    error = error_of(desk.beat, **arguments)
    assert error.code is ErrorCode.INVALID_ARGUMENT
    assert desk.session() == before


def test_the_steps_accept_their_bounds(desk: Desk) -> None:
    beat = desk.beat(stepIndex=1000, stepCount=1000, progressPercent=100)
    assert (beat["stepIndex"], beat["stepCount"], beat["progressPercent"]) == (1000, 1000, 100)
    assert desk.beat(stepIndex=1, stepCount=1, progressPercent=0)["stepIndex"] == 1


def test_a_missing_idempotency_key_is_refused(desk: Desk) -> None:
    error = error_of(desk.tenant.call, "session_heartbeat", desk.agent, sessionId="s-1")
    assert error.code is ErrorCode.INVALID_ARGUMENT
    assert desk.session() is None


def test_only_the_owner_beats_a_session(desk: Desk) -> None:
    desk.beat(status="active")
    _, other_agent = desk.tenant.register(name="other")
    before = desk.session()
    for secret in (other_agent, desk.person, desk.tenant.operator_secret):
        error = error_of(desk.beat, secret, status="blocked")
        assert error.code is ErrorCode.NOT_FOUND
    assert desk.session() == before


# -- delivery and acknowledgment ----------------------------------------------------------
def test_instructions_come_back_until_acknowledged(desk: Desk) -> None:
    desk.beat()
    first, second = desk.post("stop the deploy"), desk.post("use the staging bucket")
    beat = desk.beat()
    assert [(i["id"], i["body"], i["deliveryCount"]) for i in beat["instructions"]] == [
        (first, "stop the deploy", 1),
        (second, "use the staging bucket", 1),
    ]
    assert {i["postedBy"] for i in beat["instructions"]} == {desk.person_id}
    assert [i["deliveryCount"] for i in desk.beat()["instructions"]] == [2, 2]

    beat = desk.beat(acknowledgedInstructionIds=[first])
    assert beat["acknowledged"] == [first]
    assert [(i["id"], i["deliveryCount"]) for i in beat["instructions"]] == [(second, 3)]
    states = {i["id"]: (i["state"], i["deliveryCount"]) for i in desk.instructions()}
    assert states == {first: ("acknowledged", 2), second: ("delivered", 3)}


def test_an_acknowledged_instruction_never_returns(desk: Desk) -> None:
    desk.beat()
    posted = [desk.post(f"note {n}") for n in range(15)]
    pages = walk(desk)
    assert pages == [posted[:10], posted[10:]]
    desk.beat(acknowledgedInstructionIds=posted[:10:2] + posted[11:])
    for _ in range(3):
        assert walk(desk) == [[*posted[1:10:2], posted[10]]]
    # Acknowledging again is harmless and changes nothing.
    again = desk.beat(acknowledgedInstructionIds=[posted[0], posted[0]])
    assert again["acknowledged"] == [posted[0]]
    (first,) = [i for i in desk.instructions() if i["id"] == posted[0]]
    assert (first["state"], first["deliveryCount"]) == ("acknowledged", 1)


def test_an_acknowledgment_in_the_same_beat_keeps_it_out_of_the_page(desk: Desk) -> None:
    desk.beat()
    posted = [desk.post(f"note {n}") for n in range(12)]
    assert walk(desk) == [posted[:10], posted[10:]]
    beat = desk.beat(acknowledgedInstructionIds=posted[:3])
    assert ids(beat) == posted[3:12][:PAGE_SIZE]
    assert beat["nextInstructionCursor"] is None


def test_an_unknown_acknowledgment_is_reported_and_the_beat_stands(
    desk: Desk, clock: ManualClock
) -> None:
    desk.beat(status="active", progressPercent=10)
    delivered = desk.post("handed out")
    desk.beat()
    never_handed = desk.post("posted after the last beat")
    desk.beat(sessionId="s-2")
    desk.post("elsewhere", sessionId="s-2")
    elsewhere = ids(desk.beat(sessionId="s-2"))[0]
    forged = delivered[:12] + ("a" * 8 if not delivered.endswith("a" * 8) else "b" * 8)
    wrong = [new_instruction_id(99), never_handed, elsewhere, forged, "opaque id/+="]
    clock.advance(10)
    beat = desk.beat(
        status="blocked", progressPercent=40, acknowledgedInstructionIds=[delivered, *wrong]
    )
    assert beat["acknowledged"] == [delivered]
    assert beat["unknownInstructionIds"] == wrong
    # The rest of the beat stands: its progress and status are recorded, the known id is
    # acknowledged, and the instruction never handed out is handed out now, not acknowledged.
    assert (beat["status"], beat["progressPercent"]) == ("blocked", 40)
    assert ids(beat) == [never_handed]
    states = {i["id"]: i["state"] for i in desk.instructions()}
    assert states[delivered] == "acknowledged"
    assert states[never_handed] == "delivered"


def test_a_new_session_has_nothing_to_acknowledge(desk: Desk) -> None:
    unknown = new_instruction_id(1)
    beat = desk.beat(acknowledgedInstructionIds=[unknown])
    assert beat["unknownInstructionIds"] == [unknown]
    assert beat["acknowledged"] == []
    assert desk.session() is not None


# -- paging -------------------------------------------------------------------------------
def test_a_walk_goes_ten_at_a_time_and_a_new_walk_starts_over(desk: Desk) -> None:
    desk.beat()
    posted = [desk.post(f"note {n}") for n in range(25)]
    assert walk(desk) == [posted[:10], posted[10:20], posted[20:]]
    beat = desk.beat()
    assert ids(beat) == posted[:10]
    assert {i["deliveryCount"] for i in beat["instructions"]} == {2}


def test_exactly_one_full_page_ends_the_walk(desk: Desk) -> None:
    desk.beat()
    posted = [desk.post() for _ in range(PAGE_SIZE)]
    assert walk(desk) == [posted]


def test_posts_between_pages_are_neither_skipped_nor_repeated(desk: Desk) -> None:
    desk.beat()
    posted = [desk.post(f"note {n}") for n in range(15)]
    first = desk.beat()
    assert ids(first) == posted[:10]
    posted += [desk.post(f"late {n}") for n in range(3)]
    second = desk.beat(instructionCursor=first["nextInstructionCursor"])
    assert ids(second) == posted[10:18]
    assert second["nextInstructionCursor"] is None


def test_an_empty_cursor_starts_a_walk_as_no_cursor_does(desk: Desk) -> None:
    # The seed's instructionCursor is a plain string: a client that keeps "" until a beat hands
    # it a cursor starts its walk from the oldest instruction not acknowledged.
    desk.beat()
    posted = [desk.post(f"note {n}") for n in range(3)]
    assert ids(desk.beat(instructionCursor="")) == posted


def test_a_post_inside_a_beat_shows_on_a_later_page_and_never_twice(
    desk: Desk, store: Interleaving
) -> None:
    desk.beat()
    posted = [desk.post(f"note {n}") for n in range(12)]
    late: list[str] = []
    # After the beat read the session, before it reads the instructions; then just before it
    # writes. Neither post may appear in the page being built, nor be lost.
    store.before_page.append(lambda: late.append(desk.post("while reading")))
    store.before_write.append(lambda: late.append(desk.post("while writing")))
    first = desk.beat()
    assert ids(first) == posted[:10]
    store.before_page.append(lambda: late.append(desk.post("while reading page 2")))
    store.before_write.append(lambda: late.append(desk.post("while writing page 2")))
    second = desk.beat(instructionCursor=first["nextInstructionCursor"])
    assert ids(second) == posted[10:] + late[:2]
    assert second["nextInstructionCursor"] is None
    # The ones posted during the last page come in the next walk, after the rest.
    assert [p for page in walk(desk) for p in page] == posted + late
    assert store.writes == 1 + 2 + 2  # no beat had to start over: posting never conflicts


def test_a_concurrent_beat_of_the_same_session_makes_one_start_over(
    desk: Desk, store: Interleaving
) -> None:
    desk.beat()
    posted = [desk.post() for _ in range(3)]
    store.before_write.append(lambda: desk.beat(status="waiting"))
    beat = desk.beat(progressPercent=50)
    assert ids(beat) == posted
    # The other beat delivered them first; this one read again and delivered them again.
    assert [i["deliveryCount"] for i in beat["instructions"]] == [2, 2, 2]
    assert (beat["status"], beat["progressPercent"]) == ("waiting", 50)
    stored = desk.session()
    assert stored is not None
    assert stored.beats == 3


def test_a_cursor_belongs_to_its_session_and_tool(desk: Desk) -> None:
    desk.beat(sessionId="s-2")
    for _ in range(11):
        desk.post(sessionId="s-2")
    cursor = desk.beat(sessionId="s-2")["nextInstructionCursor"]
    assert cursor is not None
    desk.beat()
    for wrong in (cursor, "not-a-cursor", "e30", "eyJrIjoiYmVhdCIsInMiOiJzLTEiLCJhIjotMX0"):
        error = error_of(desk.beat, instructionCursor=wrong)
        assert error.code is ErrorCode.INVALID_ARGUMENT
    listing = desk.tenant.call("list_instructions", desk.person, sessionId="s-2")
    assert listing["nextCursor"] is None
    error = error_of(
        desk.tenant.call, "list_instructions", desk.person, sessionId="s-2", cursor=cursor
    )
    assert error.code is ErrorCode.INVALID_ARGUMENT


# -- retries ------------------------------------------------------------------------------
def test_a_retry_returns_the_first_result_even_after_more_posts(desk: Desk) -> None:
    desk.beat()
    desk.post("one")
    arguments = {"status": "blocked", "idempotencyKey": "beat-once"}
    first = desk.beat(**arguments)
    desk.post("two")
    desk.post("three")
    assert desk.beat(**arguments) == first
    assert [i["deliveryCount"] for i in desk.instructions()] == [1, 0, 0]
    stored = desk.session()
    assert stored is not None
    assert stored.beats == 2
    error = error_of(desk.beat, status="active", idempotencyKey="beat-once")
    assert error.code is ErrorCode.IDEMPOTENCY_MISMATCH


def test_a_post_retried_with_its_key_is_posted_once(desk: Desk) -> None:
    desk.beat()
    first = desk.post("once", idempotencyKey="post-1")
    assert desk.post("once", idempotencyKey="post-1") == first
    assert [i["id"] for i in desk.instructions()] == [first]


def test_the_model_names_its_idempotency_field() -> None:
    assert SessionHeartbeatInput.idempotency_field == "idempotencyKey"
    assert RegisterInput.idempotency_field == "idempotency_key"
    assert catalog.tool("session_heartbeat").takes_idempotency_key
    assert catalog.tool("register").takes_idempotency_key
    assert not catalog.tool("whoami").takes_idempotency_key
    assert not catalog.tool("list_sessions").takes_idempotency_key


def test_the_key_is_no_part_of_the_fingerprint(desk: Desk) -> None:
    # Two keys, same arguments: two beats. A key reused with the same arguments: a replay.
    first = desk.beat(status="waiting", idempotencyKey="a")
    desk.beat(status="waiting", idempotencyKey="b")
    assert desk.beat(status="waiting", idempotencyKey="a") == first
    stored = desk.session()
    assert stored is not None
    assert stored.beats == 2


# -- people -------------------------------------------------------------------------------
def test_only_people_and_operators_post(desk: Desk) -> None:
    desk.beat()
    _, service = desk.tenant.register(kind="service", name="svc")
    _, agent_operator = desk.tenant.register(name="lead", role="operator")
    for secret in (desk.agent, service):
        error = error_of(desk.post, "do it", secret)
        assert error.code is ErrorCode.FORBIDDEN
    for secret in (desk.person, agent_operator, desk.tenant.operator_secret):
        desk.post("do it", secret)
    posted = desk.tenant.call("post_instruction", desk.person, sessionId="s-1", body="x")
    assert {k: v for k, v in posted.items() if k not in ("id", "postedAt")} == {
        "sessionId": "s-1",
        "body": "x",
        "state": "pending",
        "postedBy": desk.person_id,
        "deliveryCount": 0,
        "lastDeliveredAt": None,
        "acknowledgedAt": None,
    }
    assert error_of(desk.post, "x", sessionId="nobody").code is ErrorCode.NOT_FOUND


def test_a_body_is_bounded_in_utf8_bytes(desk: Desk) -> None:
    desk.beat()
    desk.post("a" * 8192)
    desk.post("\U0001d518" * 2048)
    for body in ("a" * 8193, "\U0001d518" * 2049, ""):
        assert error_of(desk.post, body).code is ErrorCode.INVALID_ARGUMENT
    assert len(desk.instructions()) == 2


def test_list_instructions_is_for_people_operators_and_the_owner(desk: Desk) -> None:
    desk.beat()
    posted = [desk.post(f"note {n}") for n in range(30)]
    _, other_agent = desk.tenant.register(name="other")
    first = desk.tenant.call("list_instructions", desk.person, sessionId="s-1")
    assert [i["id"] for i in first["instructions"]] == posted[:25]
    assert [i["id"] for i in desk.instructions(desk.agent)] == posted
    assert [i["id"] for i in desk.instructions(desk.tenant.operator_secret)] == posted
    error = error_of(desk.tenant.call, "list_instructions", other_agent, sessionId="s-1")
    assert error.code is ErrorCode.NOT_FOUND
    error = error_of(desk.tenant.call, "list_instructions", desk.person, sessionId="s-9")
    assert error.code is ErrorCode.NOT_FOUND


def test_list_sessions_shows_staleness_by_the_clock(desk: Desk, clock: ManualClock) -> None:
    desk.beat(sessionId="quiet", currentStep="waiting on review", stepIndex=2, stepCount=3)
    clock.advance(60)
    desk.beat(sessionId="busy", progressPercent=80)
    clock.advance(STALE_AFTER_SECONDS)

    def listed(**arguments: Any) -> dict[str, Any]:
        page = desk.tenant.call("list_sessions", desk.person, **arguments)
        return {s["sessionId"]: s for s in page["sessions"]}

    sessions = listed()
    assert {name: s["stale"] for name, s in sessions.items()} == {"busy": False, "quiet": True}
    assert sessions["quiet"] == {
        "sessionId": "quiet",
        "owner": desk.agent_id,
        "status": "active",
        "progressPercent": None,
        "progressHistory": [],
        "currentStep": "waiting on review",
        "stepIndex": 2,
        "stepCount": 3,
        "createdAt": "2026-01-01T00:00:00Z",
        "lastBeatAt": "2026-01-01T00:00:00Z",
        "stale": True,
        "endedAt": None,
        "outcome": None,
    }
    assert sessions["busy"]["progressHistory"] == [{"at": "2026-01-01T00:01:00Z", "percent": 80.0}]
    assert list(listed(staleOnly=True)) == ["quiet"]
    clock.advance(1)
    assert list(listed(staleOnly=True)) == ["busy", "quiet"]
    desk.beat(sessionId="quiet")
    assert list(listed(staleOnly=True)) == ["busy"]


# -- the end of a session -----------------------------------------------------------------
def test_an_ended_session_is_never_stale_and_shows_its_end(desk: Desk, clock: ManualClock) -> None:
    desk.beat(progressPercent=100, currentStep="done", stepIndex=5, stepCount=5)
    clock.advance(30)
    ended = desk.tenant.call(
        "end_session", desk.agent, sessionId="s-1", outcome="completed", idempotencyKey="end"
    )["session"]
    assert (ended["endedAt"], ended["outcome"], ended["stale"]) == (
        "2026-01-01T00:00:30Z",
        "completed",
        False,
    )
    assert ended["status"] == "active"  # the last status beaten stays as it was reported
    clock.advance(STALE_AFTER_SECONDS * 10)
    [listed] = desk.tenant.call("list_sessions", desk.person)["sessions"]
    assert (listed["stale"], listed["outcome"]) == (False, "completed")
    assert desk.tenant.call("list_sessions", desk.person, staleOnly=True)["sessions"] == []
    stored = desk.session()
    assert stored is not None
    assert (stored.version, stored.watch_due) == (2, None)


def test_an_ended_session_refuses_beats_and_instructions_and_changes_nothing(
    desk: Desk,
) -> None:
    desk.beat(status="waiting")
    desk.tenant.call("end_session", desk.agent, sessionId="s-1", outcome="failed")
    before = desk.session()
    for call in (
        lambda: desk.beat(status="active"),
        lambda: desk.post("one more thing"),
        lambda: desk.tenant.call("end_session", desk.agent, sessionId="s-1", outcome="completed"),
    ):
        error = error_of(call)
        assert error.code is ErrorCode.VERSION_CONFLICT
        assert (error.details["outcome"], error.details["ended_at"]) == (
            "failed",
            "2026-01-01T00:00:00.000Z",
        )
        assert "ended" in error.message
    assert desk.session() == before
    assert desk.instructions() == []


def test_only_the_sessions_agent_ends_it(desk: Desk) -> None:
    desk.beat()
    _, other_agent = desk.tenant.register(name="other")
    for secret in (other_agent, desk.person):
        error = error_of(
            desk.tenant.call, "end_session", secret, sessionId="s-1", outcome="completed"
        )
        assert error.code is ErrorCode.NOT_FOUND
    error = error_of(
        desk.tenant.call, "end_session", desk.agent, sessionId="s-9", outcome="completed"
    )
    assert error.code is ErrorCode.NOT_FOUND
    stored = desk.session()
    assert stored is not None
    assert stored.ended_at is None


def test_an_end_loses_to_a_beat_that_lands_first_and_is_decided_again(
    desk: Desk, store: Interleaving
) -> None:
    desk.beat(status="active")
    store.before_write.append(lambda: desk.beat(status="blocked", progressPercent=40))
    desk.tenant.call("end_session", desk.agent, sessionId="s-1", outcome="cancelled")
    stored = desk.session()
    assert stored is not None
    assert (stored.status, stored.progress_percent, stored.outcome) == ("blocked", 40, "cancelled")
    assert stored.version == 3


def test_list_sessions_is_for_people_and_operators(desk: Desk) -> None:
    desk.beat()
    _, service = desk.tenant.register(kind="service", name="svc")
    for secret in (desk.agent, service):
        error = error_of(desk.tenant.call, "list_sessions", secret)
        assert error.code is ErrorCode.FORBIDDEN
    assert len(desk.tenant.call("list_sessions")["sessions"]) == 1


def test_list_sessions_pages_and_keeps_its_query(desk: Desk, clock: ManualClock) -> None:
    names = sorted(f"s-{n:03d}" for n in range(120))
    for name in names:
        desk.beat(sessionId=name)
    clock.advance(STALE_AFTER_SECONDS + 1)
    for name in names[::2]:
        desk.beat(sessionId=name)

    def every(stale_only: bool) -> list[str]:
        found: list[str] = []
        cursor: dict[str, str] = {}
        while True:
            page = desk.tenant.call("list_sessions", staleOnly=stale_only, **cursor)
            found += [s["sessionId"] for s in page["sessions"]]
            if page["nextCursor"] is None:
                return found
            cursor = {"cursor": page["nextCursor"]}

    assert every(False) == names
    assert every(True) == names[1::2]
    cursor = desk.tenant.call("list_sessions")["nextCursor"]
    error = error_of(desk.tenant.call, "list_sessions", staleOnly=True, cursor=cursor)
    assert error.code is ErrorCode.INVALID_ARGUMENT


def test_namespaces_are_isolated(desk: Desk, clock: ManualClock) -> None:
    desk.beat()
    delivered = desk.post("acme only")
    desk.beat()
    other = make_desk(Tenant(desk.tenant.app, clock, "globex"))
    assert error_of(other.post, "hello").code is ErrorCode.NOT_FOUND
    error = error_of(other.tenant.call, "list_instructions", other.person, sessionId="s-1")
    assert error.code is ErrorCode.NOT_FOUND
    # The same session id is another session there, with nothing of acme's in it.
    beat = other.beat()
    assert beat["instructions"] == []
    beat = other.beat(acknowledgedInstructionIds=[delivered])
    assert (beat["acknowledged"], beat["unknownInstructionIds"]) == ([], [delivered])
    assert [s["owner"] for s in other.tenant.call("list_sessions")["sessions"]] == [other.agent_id]
    assert [s["owner"] for s in desk.tenant.call("list_sessions")["sessions"]] == [desk.agent_id]


# -- random interleavings -----------------------------------------------------------------
POST = st.tuples(st.just("post"), st.sampled_from(["alone", "before_page", "before_write"]))
BEAT = st.tuples(st.just("beat"), st.booleans(), st.integers(0, 4))
OPERATIONS = st.lists(st.one_of(POST, BEAT), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations=OPERATIONS)
def test_every_walk_shows_each_open_instruction_once(operations: list[Any]) -> None:
    """Whatever the order of posts (alone, or inside a beat at either point) and beats (that
    continue the walk or start a new one, acknowledging some of what the walk showed): a walk
    never shows an instruction twice or out of order, never shows an acknowledged one, and
    once complete has shown every instruction that was open when it began."""
    clock = ManualClock()
    store = Interleaving()
    desk = make_desk(Tenant(app_on(store, clock), clock, "acme"))
    desk.beat()
    posted: list[str] = []
    acked: set[str] = set()
    shown_count: dict[str, int] = {}
    cursor: str | None = None
    shown: list[str] = []  # by the current walk
    required: set[str] = set()  # open when the current walk began

    def post() -> None:
        posted.append(desk.post())

    for operation in operations:
        if operation[0] == "post":
            where = operation[1]
            if where == "alone":
                post()
            else:
                getattr(store, where).append(post)
            continue
        _, carry_on, ack_count = operation
        if not carry_on or cursor is None:
            cursor, shown, required = None, [], set(posted) - acked
        to_ack = [i for i in shown if i not in acked][:ack_count]
        beat = desk.beat(
            acknowledgedInstructionIds=to_ack,
            **({"instructionCursor": cursor} if cursor else {}),
        )
        acked.update(to_ack)
        page = ids(beat)
        assert not set(page) & acked
        assert not set(page) & set(shown)
        order = [posted.index(i) for i in shown + page]
        assert order == sorted(order)
        shown += page
        for i in page:
            shown_count[i] = shown_count.get(i, 0) + 1
        assert [i["deliveryCount"] for i in beat["instructions"]] == [shown_count[i] for i in page]
        cursor = beat["nextInstructionCursor"]
        if cursor is None:
            assert required <= set(shown)
        store.before_page.clear()
        store.before_write.clear()


# -- end to end on DynamoDB ---------------------------------------------------------------
def test_a_walk_with_posts_and_acknowledgments_on_dynamodb(
    dynamo_store: DynamoStore, clock: ManualClock
) -> None:
    desk = make_desk(Tenant(app_on(dynamo_store, clock), clock, "acme"))
    desk.beat(status="active", stepIndex=1, stepCount=3)
    posted = [desk.post(f"note {n}") for n in range(14)]
    first = desk.beat()
    assert ids(first) == posted[:10]
    posted.append(desk.post("late"))
    second = desk.beat(
        instructionCursor=first["nextInstructionCursor"],
        acknowledgedInstructionIds=posted[:10],
        idempotencyKey="page-2",
    )
    assert ids(second) == posted[10:]
    assert second["acknowledged"] == posted[:10]
    assert second["nextInstructionCursor"] is None
    replay = desk.beat(
        instructionCursor=first["nextInstructionCursor"],
        acknowledgedInstructionIds=posted[:10],
        idempotencyKey="page-2",
    )
    assert replay == second
    assert walk(desk) == [posted[10:]]
    states = [(i["state"], i["deliveryCount"]) for i in desk.instructions()]
    assert states == [("acknowledged", 1)] * 10 + [("delivered", 2)] * 5
    unknown = new_instruction_id(99)
    assert desk.beat(acknowledgedInstructionIds=[unknown])["unknownInstructionIds"] == [unknown]
    stored = desk.session()
    assert stored is not None
    assert (stored.acked_through, stored.last_seq) == (10, 15)
    assert [s["stale"] for s in desk.tenant.call("list_sessions")["sessions"]] == [False]
    desk.tenant.call("end_session", desk.agent, sessionId="s-1", outcome="completed")
    clock.advance(STALE_AFTER_SECONDS + 1)
    [ended] = desk.tenant.call("list_sessions")["sessions"]
    assert (ended["stale"], ended["outcome"]) == (False, "completed")
    assert error_of(desk.beat).code is ErrorCode.VERSION_CONFLICT


def test_a_session_keeps_each_change_of_its_progress_the_latest_twenty(
    desk: Desk, clock: ManualClock
) -> None:
    desk.beat(progressPercent=0)
    for percent in [0, 1, 1, *range(2, 30)]:
        clock.advance(10)
        desk.beat(progressPercent=percent)
    clock.advance(10)
    desk.beat(currentStep="no percentage this time")
    (session,) = desk.tenant.call("list_sessions", desk.person)["sessions"]
    history = session["progressHistory"]
    assert [point["percent"] for point in history] == list(range(10, 30))
    # Each point is when the percentage changed, not the beats that repeated it.
    assert history[0]["at"] == "2026-01-01T00:02:00Z"
