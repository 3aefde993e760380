"""Identity and access at the service layer, on the in-memory store."""

from __future__ import annotations

import json
import logging

import pytest

from tests.support import Tenant, app_on, error_of
from vigil.app import App
from vigil.clock import ManualClock
from vigil.errors import ErrorCode, VigilError
from vigil.identity.records import Principal
from vigil.kit.idempotency import HANDOVER_SECONDS
from vigil.stores.memory import MemoryStore


def test_register_shows_the_secret_once_and_stores_only_its_hash(tenant: Tenant) -> None:
    result = tenant.call("register", kind="agent", name="worker-1")
    secret = result["secret"]
    agent = result["principal"]
    assert agent["address"] == f"agent:{agent['id']}"
    assert agent["role"] == "worker"
    store = tenant.app.store
    assert isinstance(store, MemoryStore)
    stored = store.principals[("acme", agent["id"])]
    assert secret not in stored.model_dump_json()
    assert tenant.app.call("whoami", {}, secret, via="rest")["principal"]["id"] == agent["id"]


def test_only_operators_register(tenant: Tenant) -> None:
    _, worker_secret = tenant.register()
    before = len(tenant.app.store.principals)  # type: ignore[attr-defined]
    error = error_of(tenant.call, "register", worker_secret, kind="agent", name="x")
    assert error.code is ErrorCode.FORBIDDEN
    assert len(tenant.app.store.principals) == before  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "secret",
    [
        None,
        "",
        "Bearer",
        "vgl.acme.agt_aaaaaaaaaaaaaaaa.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "garbage",
    ],
)
def test_bad_credentials_are_unauthenticated(
    memory_app: App, tenant: Tenant, secret: str | None
) -> None:
    assert (
        error_of(memory_app.call, "whoami", {}, secret, via="rest").code
        is ErrorCode.UNAUTHENTICATED
    )


def test_a_forged_secret_for_a_real_principal_is_refused(tenant: Tenant) -> None:
    _agent_id, secret = tenant.register()
    forged = secret[:-4] + ("AAAA" if not secret.endswith("AAAA") else "BBBB")
    assert (
        error_of(tenant.app.call, "whoami", {}, forged, via="rest").code
        is ErrorCode.UNAUTHENTICATED
    )


def test_namespaces_do_not_see_each_other(tenant: Tenant, other_tenant: Tenant) -> None:
    mine, _ = tenant.register(name="mine")
    theirs, _ = other_tenant.register(name="theirs")
    listed = [a["id"] for a in tenant.call("list_agents")["agents"]]
    assert listed == [mine]
    # An operator of another namespace cannot touch this namespace's principal.
    error = error_of(other_tenant.call, "revoke_principal", principal_id=mine, version=1)
    assert error.code is ErrorCode.NOT_FOUND
    assert tenant.call("whoami")["principal"]["namespace"] == "acme"
    assert theirs not in listed


def test_idempotent_register_replays_without_the_secret(tenant: Tenant) -> None:
    first = tenant.call("register", kind="agent", name="a", idempotency_key="k1")
    again = tenant.call("register", kind="agent", name="a", idempotency_key="k1")
    assert first["secret"] is not None
    assert again["principal"] == first["principal"]
    assert again["secret"] is None
    assert len(tenant.call("list_agents")["agents"]) == 1
    error = error_of(tenant.call, "register", kind="agent", name="b", idempotency_key="k1")
    assert error.code is ErrorCode.IDEMPOTENCY_MISMATCH
    assert len(tenant.call("list_agents")["agents"]) == 1


def test_idempotency_keys_are_per_caller(tenant: Tenant) -> None:
    _, other_operator = tenant.register(kind="person", role="operator", name="op2")
    tenant.call("register", kind="agent", name="a", idempotency_key="same")
    tenant.call("register", other_operator, kind="agent", name="a", idempotency_key="same")
    assert len(tenant.call("list_agents")["agents"]) == 2


def test_rotation_invalidates_the_old_secret(tenant: Tenant) -> None:
    agent_id, old = tenant.register()
    rotated = tenant.call("rotate_secret", old, version=1)
    new = rotated["secret"]
    assert rotated["principal"]["version"] == 2
    assert (
        error_of(tenant.app.call, "whoami", {}, old, via="rest").code is ErrorCode.UNAUTHENTICATED
    )
    assert tenant.app.call("whoami", {}, new, via="rest")["principal"]["id"] == agent_id
    stale = error_of(tenant.call, "rotate_secret", principal_id=agent_id, version=1)
    assert stale.code is ErrorCode.VERSION_CONFLICT


def test_workers_cannot_rotate_or_revoke_others(tenant: Tenant) -> None:
    _a, a_secret = tenant.register(name="a")
    b, b_secret = tenant.register(name="b")
    assert (
        error_of(tenant.call, "rotate_secret", a_secret, principal_id=b, version=1).code
        is ErrorCode.NOT_FOUND
    )
    assert (
        error_of(tenant.call, "revoke_principal", a_secret, principal_id=b, version=1).code
        is ErrorCode.NOT_FOUND
    )
    assert tenant.app.call("whoami", {}, b_secret, via="rest")["principal"]["status"] == "active"


def test_revocation_stops_the_secret(tenant: Tenant) -> None:
    agent_id, secret = tenant.register()
    revoked = tenant.call("revoke_principal", principal_id=agent_id, version=1)
    assert revoked["principal"]["status"] == "revoked"
    assert (
        error_of(tenant.app.call, "whoami", {}, secret, via="rest").code
        is ErrorCode.UNAUTHENTICATED
    )


@pytest.mark.parametrize(
    "arguments",
    [
        {"kind": "robot", "name": "x"},
        {"kind": "agent"},
        {"kind": "agent", "name": ""},
        {"kind": "agent", "name": "x" * 101},
        {"kind": "agent", "name": "x", "extra": 1},
        {"kind": "agent", "name": 5},
        {"kind": "agent", "name": "x", "role": "root"},
        {"kind": "agent", "name": "x", "idempotency_key": "tab\there"},
        {"kind": "agent", "name": "zero\u200bwidth"},
        {"kind": "agent", "name": "\u202eevil"},
        {"kind": "agent", "name": "line\nbreak"},
    ],
)
def test_bad_arguments_are_typed_errors_that_change_nothing(
    tenant: Tenant, arguments: dict
) -> None:  # type: ignore[type-arg]
    before = len(tenant.app.store.principals)  # type: ignore[attr-defined]
    error = error_of(tenant.app.call, "register", arguments, tenant.operator_secret, via="rest")
    assert error.code is ErrorCode.INVALID_ARGUMENT
    assert len(tenant.app.store.principals) == before  # type: ignore[attr-defined]


def test_validation_errors_never_echo_the_input(tenant: Tenant) -> None:
    error = error_of(tenant.call, "rotate_secret", version="SECRET-LOOKING-VALUE")
    assert "SECRET-LOOKING-VALUE" not in json.dumps(error.to_dict())


def test_list_directory_pages_searches_and_checks_cursors(tenant: Tenant) -> None:
    for i in range(7):
        tenant.register(name=f"builder-{i}")
    tenant.register(name="reviewer")
    seen: list[str] = []
    cursor = None
    while True:
        args = {"kind": "agent", "search": "BUILDER", "limit": 3}
        if cursor:
            args["cursor"] = cursor
        page = tenant.call("list_directory", **args)
        seen += [item["name"] for item in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == [f"builder-{i}" for i in range(7)]
    assert len(set(seen)) == 7
    first = tenant.call("list_directory", kind="agent", limit=2)
    mismatch = error_of(tenant.call, "list_directory", kind="person", cursor=first["next_cursor"])
    assert mismatch.code is ErrorCode.INVALID_ARGUMENT
    junk = error_of(tenant.call, "list_directory", kind="agent", cursor="%%%")
    assert junk.code is ErrorCode.INVALID_ARGUMENT


def test_unexpected_failures_become_unavailable_and_are_logged(
    tenant: Tenant, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tenant.app.store

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("internal detail")

    monkeypatch.setattr(store, "list_principals", broken)
    error = error_of(tenant.call, "list_agents")
    assert error.code is ErrorCode.UNAVAILABLE
    assert "internal detail" not in json.dumps(error.to_dict())


def test_logs_carry_no_secrets(tenant: Tenant, capsys: pytest.CaptureFixture[str]) -> None:
    logging.getLogger("vigil").handlers[0].stream = __import__("sys").stderr
    _, secret = tenant.register()
    tenant.app.call("whoami", {}, secret, via="rest")
    with pytest.raises(VigilError):
        tenant.app.call("whoami", {}, secret + "x", via="rest")
    captured = capsys.readouterr()
    assert "tool call" in captured.err
    assert secret not in captured.err
    assert tenant.operator_secret not in captured.err


def test_an_operator_cannot_take_over_or_lock_out_another_operator(tenant: Tenant) -> None:
    other, other_secret = tenant.register(kind="person", role="operator", name="op2")
    for tool in ("rotate_secret", "revoke_principal"):
        error = error_of(tenant.call, tool, principal_id=other, version=1)
        assert error.code is ErrorCode.FORBIDDEN
    # The other operator is untouched: its secret works, at the version it had.
    seen = tenant.app.call("whoami", {}, other_secret, via="rest")["principal"]
    assert (seen["status"], seen["version"]) == ("active", 1)
    # Nor can that operator turn on the first one.
    error = error_of(
        tenant.call, "rotate_secret", other_secret, principal_id=tenant.operator.id, version=1
    )
    assert error.code is ErrorCode.FORBIDDEN
    assert tenant.call("whoami")["principal"]["version"] == 1


def test_an_operator_rotates_and_revokes_workers_and_itself(tenant: Tenant) -> None:
    agent_id, old = tenant.register()
    new = tenant.call("rotate_secret", principal_id=agent_id, version=1)["secret"]
    assert (
        error_of(tenant.app.call, "whoami", {}, old, via="rest").code is ErrorCode.UNAUTHENTICATED
    )
    assert tenant.app.call("whoami", {}, new, via="rest")["principal"]["version"] == 2
    tenant.call("revoke_principal", principal_id=agent_id, version=2)
    assert (
        error_of(tenant.app.call, "whoami", {}, new, via="rest").code is ErrorCode.UNAUTHENTICATED
    )
    other, other_secret = tenant.register(kind="person", role="operator", name="op2")
    own = tenant.call("rotate_secret", other_secret, principal_id=other, version=1)["secret"]
    revoked = tenant.call("revoke_principal", own, principal_id=other, version=2)
    assert revoked["principal"]["status"] == "revoked"


def test_a_lost_rotation_of_ones_own_secret_is_replayed_with_the_old_one(tenant: Tenant) -> None:
    agent_id, old = tenant.register()
    first = tenant.call("rotate_secret", old, version=1, idempotency_key="r1")
    again = tenant.call("rotate_secret", old, version=1, idempotency_key="r1")
    assert again == first
    assert tenant.app.call("whoami", {}, first["secret"], via="rest")["principal"]["id"] == agent_id
    # The holder of the new secret replays the stored result, which never holds the secret.
    replayed = tenant.call("rotate_secret", first["secret"], version=1, idempotency_key="r1")
    assert replayed == {**first, "secret": None}
    # Nothing in the store holds the new secret in the clear.
    store = tenant.app.store
    assert isinstance(store, MemoryStore)
    assert first["secret"] not in repr(store.__dict__)


def test_the_old_secret_opens_that_replay_and_nothing_else(tenant: Tenant) -> None:
    agent_id, old = tenant.register()
    tenant.call("rotate_secret", old, version=1, idempotency_key="r1")
    refused = [
        ("whoami", {}),
        ("rotate_secret", {"version": 2}),
        ("rotate_secret", {"version": 1, "idempotency_key": "r2"}),
        ("revoke_principal", {"principal_id": agent_id, "version": 2, "idempotency_key": "r1"}),
        ("create_mailbox", {"box": "b", "idempotency_key": "r1"}),
        ("rotate_secret", {"version": 1, "idempotency_key": "r1", "principal_id": "x"}),
    ]
    before = repr(tenant.app.store.__dict__)
    for tool, arguments in refused:
        error = error_of(tenant.app.call, tool, arguments, old, via="rest")
        assert error.code is ErrorCode.UNAUTHENTICATED, tool
    assert repr(tenant.app.store.__dict__) == before
    # A forged secret for the same principal opens nothing either.
    forged = old[:-4] + ("AAAA" if not old.endswith("AAAA") else "BBBB")
    error = error_of(tenant.call, "rotate_secret", forged, version=1, idempotency_key="r1")
    assert error.code is ErrorCode.UNAUTHENTICATED


def test_the_same_key_with_other_arguments_is_a_mismatch_for_the_old_secret(
    tenant: Tenant,
) -> None:
    agent_id, old = tenant.register()
    tenant.call("rotate_secret", old, version=1, idempotency_key="r1")
    for arguments in ({"version": 2}, {"version": 1, "principal_id": agent_id}):
        error = error_of(tenant.call, "rotate_secret", old, idempotency_key="r1", **arguments)
        assert error.code is ErrorCode.IDEMPOTENCY_MISMATCH


def test_the_old_secret_is_refused_after_the_replay_window(
    tenant: Tenant, clock: ManualClock
) -> None:
    _, old = tenant.register()
    tenant.call("rotate_secret", old, version=1, idempotency_key="r1")
    clock.advance(HANDOVER_SECONDS - 1)
    assert tenant.call("rotate_secret", old, version=1, idempotency_key="r1")["secret"]
    clock.advance(1)
    error = error_of(tenant.call, "rotate_secret", old, version=1, idempotency_key="r1")
    assert error.code is ErrorCode.UNAUTHENTICATED


def test_no_replay_once_the_principal_has_moved_on(tenant: Tenant) -> None:
    _, old = tenant.register()
    new = tenant.call("rotate_secret", old, version=1, idempotency_key="r1")["secret"]
    tenant.call("rotate_secret", new, version=2)
    error = error_of(tenant.call, "rotate_secret", old, version=1, idempotency_key="r1")
    assert error.code is ErrorCode.UNAUTHENTICATED

    revoked, old = tenant.register()
    tenant.call("rotate_secret", old, version=1, idempotency_key="r1")
    tenant.call("revoke_principal", principal_id=revoked, version=2)
    error = error_of(tenant.call, "rotate_secret", old, version=1, idempotency_key="r1")
    assert error.code is ErrorCode.UNAUTHENTICATED


def test_only_a_rotation_of_ones_own_secret_leaves_a_replay(tenant: Tenant) -> None:
    agent_id, old = tenant.register()
    arguments = {"principal_id": agent_id, "version": 1, "idempotency_key": "r1"}
    tenant.call("rotate_secret", **arguments)
    error = error_of(tenant.call, "rotate_secret", old, **arguments)
    assert error.code is ErrorCode.UNAUTHENTICATED


def test_a_refusal_the_caller_caused_is_not_a_warning(
    tenant: Tenant, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The terminal and a WARNING-level deployment show what the service owes, not every
    caller's bad input: a refused call is logged at INFO, an unavailable one at WARNING."""
    _, secret = tenant.register()
    with caplog.at_level(logging.INFO, logger="vigil"):
        with pytest.raises(VigilError):
            tenant.app.call(
                "heartbeat", {"scope": "s", "expect_within_seconds": "x"}, secret, via="rest"
            )
        with pytest.raises(VigilError):
            tenant.app.call("whoami", {}, secret + "x", via="rest")

        def broken(*args: object, **kwargs: object) -> None:
            raise RuntimeError("internal detail")

        monkeypatch.setattr(tenant.app.store, "list_principals", broken)
        with pytest.raises(VigilError):
            tenant.app.call("list_agents", {}, secret, via="rest")
    calls = [
        (r.levelno, r.__dict__["fields"]["outcome"]) for r in caplog.records if r.msg == "tool call"
    ][-3:]
    assert calls == [
        (logging.INFO, "invalid_argument"),
        (logging.INFO, "unauthenticated"),
        (logging.WARNING, "unavailable"),
    ]


class LaggingStore(MemoryStore):
    """A store whose eventually consistent reads of principals answer from a replica that has
    not yet seen the writes made since ``freeze``; strongly consistent reads see everything."""

    def __init__(self) -> None:
        super().__init__()
        self.replica: dict[tuple[str, str], Principal] | None = None
        self.reads: list[bool] = []

    def freeze(self) -> None:
        self.replica = dict(self.principals)

    def get_principal(
        self, namespace: str, principal_id: str, *, consistent: bool = True
    ) -> Principal | None:
        self.reads.append(consistent)
        if consistent or self.replica is None:
            return super().get_principal(namespace, principal_id)
        found = self.replica.get((namespace, principal_id))
        return found.model_copy() if found else None


@pytest.fixture
def lagging(clock: ManualClock) -> tuple[Tenant, LaggingStore]:
    store = LaggingStore()
    return Tenant(app_on(store, clock), clock, "acme"), store


def test_a_steady_call_reads_its_credential_once_eventually_consistent(
    lagging: tuple[Tenant, LaggingStore],
) -> None:
    tenant, store = lagging
    _, secret = tenant.register()
    store.reads.clear()
    tenant.app.call("whoami", {}, secret, via="rest")
    assert store.reads == [False]


def test_a_new_principal_and_a_new_secret_work_at_once_though_the_replica_lags(
    lagging: tuple[Tenant, LaggingStore],
) -> None:
    tenant, store = lagging
    store.freeze()
    agent_id, old = tenant.register()
    # The replica has not seen the principal: its first call is confirmed by a strong read.
    store.reads.clear()
    assert tenant.app.call("whoami", {}, old, via="rest")["principal"]["id"] == agent_id
    assert store.reads == [False, True]
    store.freeze()
    new = tenant.call("rotate_secret", old, version=1)["secret"]
    assert tenant.app.call("whoami", {}, new, via="rest")["principal"]["version"] == 2


def test_a_revoked_secret_stops_once_the_replica_has_the_revocation(
    lagging: tuple[Tenant, LaggingStore],
) -> None:
    """The window the design accepts: a revocation is seen by the eventually consistent read
    within DynamoDB's propagation (typically well under a second), not at once."""
    tenant, store = lagging
    agent_id, secret = tenant.register()
    store.freeze()
    tenant.call("revoke_principal", principal_id=agent_id, version=1)
    assert tenant.app.call("whoami", {}, secret, via="rest")["principal"]["id"] == agent_id
    store.freeze()
    error = error_of(tenant.app.call, "whoami", {}, secret, via="rest")
    assert error.code is ErrorCode.UNAUTHENTICATED
