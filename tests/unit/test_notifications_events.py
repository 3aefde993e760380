"""The notification events: built from the records, identified stably, linked to the console,
and described by the JSON Schemas committed under docs/events/."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import jsonschema
import pytest
from pydantic import ValidationError

from tests.notifications_support import (
    CONSOLE,
    NAMESPACE,
    PERSON,
    T0,
    approval,
    death,
    sample,
    samples,
    session,
)
from vigil.kit.events import EVENT_ID_PATTERN, event_id
from vigil.notifications.events import EVENT_TYPES, Event, event_schemas, make_event, parse_event
from vigil.requests.events import MAX_BODY, RequestData
from vigil.sessions.events import SessionStale
from vigil.switches.events import SwitchFired

DOCS = Path(__file__).resolve().parents[2] / "docs" / "events"
REGENERATE = "PYTHONPATH=src .venv/bin/python scripts/event_schemas.py"


def committed(event_type: str) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((DOCS / f"{event_type}.schema.json").read_text())
    return loaded


def test_the_committed_schemas_are_the_generated_ones() -> None:
    generated = event_schemas()
    agents_own = ["delivery.waiting", "instruction.posted"]
    following = [
        "request.withdrawn",
        "switch.recovered",
        "switch.flapping",
        "switch.settled",
        "switch.ran_short",
    ]
    on_call = ["alert.acknowledged"]
    expected = [*EVENT_TYPES, "channel.test", *agents_own, *following, *on_call]
    assert sorted(generated) == sorted(expected)
    on_disk = sorted(path.name for path in DOCS.glob("*.schema.json"))
    assert on_disk == sorted(f"{t}.schema.json" for t in generated), f"regenerate: {REGENERATE}"
    for event_type, schema in generated.items():
        assert committed(event_type) == schema, f"{event_type} differs; regenerate: {REGENERATE}"


@pytest.mark.parametrize("event", samples(), ids=lambda event: event.type)
def test_each_event_is_valid_against_its_committed_schema_and_parses_back(event: Event) -> None:
    body = event.model_dump_json()
    document = json.loads(body)
    schema = committed(document["type"])
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(document, schema, cls=jsonschema.Draft202012Validator)
    assert parse_event(body) == event

    extra = {**document, "data": {**document["data"], "unexpected": 1}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(extra, schema, cls=jsonschema.Draft202012Validator)
    with pytest.raises(ValidationError):
        parse_event(json.dumps(extra))


def test_the_schemas_tell_the_types_apart() -> None:
    switch = json.loads(sample("switch.fired").model_dump_json())
    session_schema = committed("session.stale")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(switch, session_schema, cls=jsonschema.Draft202012Validator)
    relabelled = {**switch, "type": "session.stale"}
    with pytest.raises(ValidationError):
        parse_event(json.dumps(relabelled))


def test_a_switch_fired_event_says_what_the_death_released() -> None:
    data = SwitchFired.of(death(released=7))
    assert data.scope == "deploy <prod> & co"
    assert (data.generation, data.holder, data.agent_id) == (3, death().holder, "worker-3")
    assert data.deadline == T0
    assert data.lateness_seconds == 1.25
    assert data.actions == ["release_leases", "mark_failed", "queue_alert"]
    assert data.released_count == 7
    assert [(lease.resource, lease.generation) for lease in data.released][:2] == [
        ("db/1", 1),
        ("db/2", 2),
    ]
    assert len(data.released) == 5
    assert data.released_pages == 1


def test_a_switch_without_release_leases_says_null_counts_and_no_leases() -> None:
    quiet = death().model_copy(update={"actions": ["queue_alert"]})
    data = SwitchFired.of(quiet)
    assert (data.released_count, data.released, data.released_pages) == (None, [], None)


def test_a_long_request_body_is_cut_to_the_limit_with_an_ellipsis() -> None:
    long = "x" * (MAX_BODY + 500)
    data = RequestData.of(approval(body=long))
    assert len(data.body) == MAX_BODY
    assert data.body == "x" * (MAX_BODY - 1) + "…"

    exact = "y" * MAX_BODY
    assert RequestData.of(approval(body=exact)).body == exact


def test_a_request_event_says_who_decided_only_once_it_is_answered() -> None:
    request = approval()
    opened = RequestData.of(request)
    assert (opened.state, opened.outcome, opened.answered_by) == ("open", None, None)
    assert opened.action == {"tool": "deploy", "args": {"target": "<prod>", "note": "a & b"}}
    assert opened.expires_at == T0 + timedelta(hours=1)
    assert opened.audience == [PERSON]

    answered = RequestData.of(request.replied(PERSON, "denied", None, 1, T0))
    assert (answered.state, answered.outcome, answered.answered_by) == ("denied", "denied", PERSON)

    expired = RequestData.of(request.expired(request.expires_at))
    assert (expired.state, expired.outcome, expired.answered_by) == ("expired", None, None)


def test_a_stale_session_event_carries_its_last_beat() -> None:
    data = SessionStale.of(session())
    assert (data.session_id, data.status, data.last_beat_at) == ("ses <1> & more", "active", T0)
    assert data.stale_after_seconds == 120


def test_an_event_built_again_has_the_same_id_and_another_event_another_id() -> None:
    ids = {event.type: event.id for event in samples()}
    assert {event.type: event.id for event in samples()} == ids
    assert len(set(ids.values())) == len(ids)  # opened and expiring differ too
    for value in ids.values():
        assert jsonschema.Draft202012Validator({"pattern": EVENT_ID_PATTERN}).is_valid(value)

    later = SwitchFired.of(death().model_copy(update={"generation": 4}))
    again = make_event(
        "switch.fired", later, namespace=NAMESPACE, occurred_at=T0, console_base=None
    )
    assert again.id != ids["switch.fired"]
    elsewhere = make_event(
        "switch.fired",
        SwitchFired.of(death()),
        namespace="other",
        occurred_at=T0,
        console_base=None,
    )
    assert elsewhere.id != ids["switch.fired"]
    assert event_id("a", "b") != event_id("a\x1fb")


def test_only_a_switch_event_has_a_scope() -> None:
    scopes = {event.type: event.scope for event in samples()}
    assert scopes.pop("switch.fired") == "deploy <prod> & co"
    for switch_event in (
        "switch.recovered",
        "switch.flapping",
        "switch.settled",
        "switch.ran_short",
    ):
        assert scopes.pop(switch_event) == "deploy <prod> & co"
    assert set(scopes.values()) == {None}


def test_console_links_point_at_the_subjects_page_with_the_query_encoded() -> None:
    links = {event.type: event.console_url for event in samples()}
    assert links["switch.fired"] == f"{CONSOLE}/console/switch?scope=deploy+%3Cprod%3E+%26+co"
    assert links["request.opened"] == f"{CONSOLE}/console/request?id=req_cccccccccccccccc"
    assert links["session.stale"] == f"{CONSOLE}/console/session?id=ses+%3C1%3E+%26+more"
    assert links["delivery.dead_lettered"] is None
    assert sample("switch.fired", CONSOLE + "/").console_url == links["switch.fired"]
    assert {event.console_url for event in samples(console_base=None)} == {None}


def test_data_of_another_type_is_refused() -> None:
    with pytest.raises(ValidationError):
        make_event(
            "switch.fired",
            SessionStale.of(session()),
            namespace=NAMESPACE,
            occurred_at=T0,
            console_base=None,
        )


def test_a_naive_time_is_refused() -> None:
    with pytest.raises(ValidationError):
        make_event(
            "session.stale",
            SessionStale.of(session()),
            namespace=NAMESPACE,
            occurred_at=T0.replace(tzinfo=None),
            console_base=None,
        )
