"""Handovers: a result sealed under the credential a call replaced, opened only with that
credential, in its own context and within its window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from vigil.kit.idempotency import IdempotencyRecord

NOW = datetime(2026, 1, 1, tzinfo=UTC)
RESULT = {"principal": {"version": 2}, "secret": "vgl.acme.agt_x.new"}


def record(**changes: object) -> IdempotencyRecord:
    fields: dict[str, object] = {
        "namespace": "acme",
        "principal_id": "agt_aaaaaaaaaaaaaaaa",
        "tool": "rotate_secret",
        "key": "k",
        "fingerprint": "f",
        "status": "completed",
        "token": "t",
        "locked_until": NOW,
        "expires_at": NOW + timedelta(days=1),
    }
    return IdempotencyRecord.model_validate({**fields, **changes})


def test_only_the_replaced_credential_opens_a_handover_in_its_window() -> None:
    first = record()
    handover = first.handing_over("old", RESULT, "successor", NOW + timedelta(minutes=10))
    done = first.completed({"secret": None}, handover)
    assert "vgl.acme" not in handover.model_dump_json()
    assert done.handed_over("old", "successor", NOW) == RESULT
    assert done.handed_over("old", "successor", NOW + timedelta(minutes=10)) is None
    assert done.handed_over("older", "successor", NOW) is None
    assert done.handed_over("old", "another successor", NOW) is None
    # Moved to another key, principal or call, the sealed result opens for nobody.
    for moved in ({"key": "k2"}, {"principal_id": "agt_b"}, {"fingerprint": "g"}):
        assert record(**moved).completed({}, handover).handed_over("old", "successor", NOW) is None
    assert first.completed({"secret": None}).handed_over("old", "successor", NOW) is None


def test_two_seals_of_one_result_differ() -> None:
    until = NOW + timedelta(minutes=10)
    one = record().handing_over("old", RESULT, "successor", until)
    two = record().handing_over("old", RESULT, "successor", until)
    assert one.sealed != two.sealed
