"""Crashes injected around the idempotent write: a retry with the same key converges to one
outcome, whatever step the first attempt died after."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import Tenant, app_on
from vigil.clock import ManualClock
from vigil.errors import ErrorCode, VigilError
from vigil.kit.idempotency import LOCK_SECONDS
from vigil.stores.memory import MemoryStore


class Crash(Exception):
    """The process died here (the Lambda timed out, the connection dropped)."""


class FaultyStore(MemoryStore):
    """Crashes once, before or after the named operation takes effect."""

    def __init__(self) -> None:
        super().__init__()
        self.faults: set[tuple[str, str]] = set()

    def _maybe_crash(self, operation: str, moment: str) -> None:
        if (operation, moment) in self.faults:
            self.faults.discard((operation, moment))
            raise Crash(f"{moment} {operation}")

    def claim_idempotency(self, record: Any, now: Any) -> Any:
        self._maybe_crash("claim", "before")
        result = super().claim_idempotency(record, now)
        self._maybe_crash("claim", "after")
        return result

    def commit(self, writes: Any, completion: Any = None) -> None:
        self._maybe_crash("write", "before")
        super().commit(writes, completion)
        self._maybe_crash("write", "after")

    def release_idempotency(self, record: Any) -> None:
        self._maybe_crash("release", "before")
        super().release_idempotency(record)


@pytest.fixture
def faulty(clock: ManualClock) -> tuple[FaultyStore, Tenant]:
    store = FaultyStore()
    return store, Tenant(app_on(store, clock), clock, "acme")


ARGS = {"kind": "agent", "name": "w", "idempotency_key": "once"}


def agents(tenant: Tenant) -> list[dict[str, Any]]:
    return list(tenant.call("list_agents")["agents"])


@pytest.mark.parametrize(
    ("fault", "retry_waits_for_the_lock", "retry_replays"),
    [
        (("claim", "before"), False, False),  # nothing was stored
        (("claim", "after"), True, False),  # a pending claim, locked, with no write
        (("write", "before"), False, False),  # the claim was released after the crash
        (("write", "after"), False, True),  # the write and its result committed together
    ],
)
def test_a_crash_at_any_step_then_a_retry_gives_exactly_one_agent(
    faulty: tuple[FaultyStore, Tenant],
    clock: ManualClock,
    fault: tuple[str, str],
    retry_waits_for_the_lock: bool,
    retry_replays: bool,
) -> None:
    store, tenant = faulty
    store.faults = {fault}
    with pytest.raises(VigilError) as crashed:
        tenant.call("register", **ARGS)
    assert crashed.value.code is ErrorCode.UNAVAILABLE

    if retry_waits_for_the_lock:
        with pytest.raises(VigilError) as busy:
            tenant.call("register", **ARGS)
        assert busy.value.code is ErrorCode.UNAVAILABLE
        clock.advance(LOCK_SECONDS + 1)
    result = tenant.call("register", **ARGS)

    found = agents(tenant)
    assert len(found) == 1
    assert result["principal"]["id"] == found[0]["id"]
    assert (result["secret"] is None) is retry_replays
    # Retrying again replays the same outcome and creates nothing.
    assert tenant.call("register", **ARGS)["principal"]["id"] == found[0]["id"]
    assert len(agents(tenant)) == 1


def test_a_crash_of_the_release_too_only_delays_the_retry(
    faulty: tuple[FaultyStore, Tenant], clock: ManualClock
) -> None:
    store, tenant = faulty
    store.faults = {("write", "before"), ("release", "before")}
    with pytest.raises(VigilError):
        tenant.call("register", **ARGS)
    with pytest.raises(VigilError) as busy:
        tenant.call("register", **ARGS)
    assert busy.value.code is ErrorCode.UNAVAILABLE
    clock.advance(LOCK_SECONDS + 1)
    assert tenant.call("register", **ARGS)["secret"] is not None
    assert len(agents(tenant)) == 1


def test_business_errors_release_the_key_for_a_corrected_retry(tenant: Tenant) -> None:
    _, worker = tenant.register()
    with pytest.raises(VigilError):
        tenant.call("rotate_secret", worker, version=7, idempotency_key="r1")
    rotated = tenant.call("rotate_secret", worker, version=1, idempotency_key="r1")
    assert rotated["principal"]["version"] == 2


def test_concurrent_first_attempt_is_reported_as_in_progress(
    faulty: tuple[FaultyStore, Tenant], clock: ManualClock
) -> None:
    store, tenant = faulty
    store.faults = {("claim", "after")}
    with pytest.raises(VigilError):
        tenant.call("register", **ARGS)
    with pytest.raises(VigilError) as busy:
        tenant.call("register", **ARGS)
    assert busy.value.code is ErrorCode.UNAVAILABLE
    assert busy.value.to_dict()["retryable"] is True
