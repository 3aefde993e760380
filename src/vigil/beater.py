"""Keeping dead-man switches beaten from a background thread: ``Beater``.

    from vigil.beater import Beater

    with Beater("http://127.0.0.1:8080", secret, scopes=["nightly-report"], window=120):
        do_the_work()

Each scope is beaten at a third of its window, in batches of up to 100 (``heartbeat_batch``,
one request for all the scopes due together). A beat refused as retryable (throttled,
unavailable) or not answered at all is tried again with jittered, growing waits until that
beat's deadline; after it, the switch has fired and the next beat (at the usual pace) learns
of the death and arms a new generation. A beat refused for good (forbidden, invalid, a quota)
stops beating that scope and is kept in ``failures``. Leaving the ``with`` block (or the
decorated function) normally disarms every switch; leaving it with an exception stops beating
and leaves them armed, so that they fire and tell whoever watches them that the work did not
finish (``disarm_on_error=True`` disarms then too).

Only the standard library: an agent's process carries nothing more to use it.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal

from vigil.people.client import (
    TIMEOUT_SECONDS,
    Endpoint,
    Failure,
    Refused,
    RestClient,
    Unreachable,
    rest_base,
)

log = logging.getLogger("vigil.beater")

Action = Literal["release_leases", "mark_failed", "queue_alert"]
# What one call carries: heartbeat_batch's limit.
BATCH = 100
# Waits between retries of a refused or unanswered batch: from FIRST_RETRY, doubling, at most
# LONGEST_RETRY, each a random part of that (full jitter), never past the beat's deadline.
FIRST_RETRY_SECONDS = 0.5
LONGEST_RETRY_SECONDS = 8.0
# Scopes due within this share of their window are beaten with the ones due now: fewer calls,
# each beat at most this much early.
GATHER = 1 / 6
# How long stopping waits for the disarms to be answered.
DISARM_SECONDS = 10.0

Call = Callable[[str, dict[str, Any]], dict[str, Any]]


@dataclass
class _Scope:
    name: str
    window: int
    on_expiry: list[Action]
    notify_address: str | None
    agent_id: str | None
    due: float  # when to beat next, on the beater's clock
    deadline: float | None = None  # when the switch fires unless beaten, once beaten
    retries: int = 0

    def beat(self, disarm: bool = False) -> dict[str, Any]:
        beat: dict[str, Any] = {
            "scope": self.name,
            "expect_within_seconds": self.window,
            "on_expiry": list(self.on_expiry),
        }
        if self.notify_address is not None:
            beat["notify_address"] = self.notify_address
        if self.agent_id is not None:
            beat["agent_id"] = self.agent_id
        if disarm:
            beat["disarm"] = True
        return beat


@dataclass(frozen=True)
class BeatFailure:
    """Why a scope stopped being beaten: the service's typed error."""

    scope: str
    code: str
    message: str


@dataclass
class Beater(contextlib.ContextDecorator):
    """Beats ``scopes`` (each with ``window`` seconds, ``on_expiry``, ``notify_address`` and
    ``agent_id``; ``add`` takes others with their own) while it runs: a context manager and a
    decorator. ``url`` is the REST base (or the MCP URL); ``secret`` the credential, used only
    in the Authorization header of requests to ``url``."""

    url: str
    secret: str = field(repr=False)
    scopes: Iterable[str] = ()
    window: int = 60
    on_expiry: list[Action] = field(default_factory=lambda: ["mark_failed"])
    notify_address: str | None = None
    agent_id: str | None = None
    disarm_on_error: bool = False
    # Injected by tests: the call, the clock and the random draw of each wait.
    call: Call | None = field(default=None, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    jitter: Callable[[], float] = field(default=random.random, repr=False)

    def __post_init__(self) -> None:
        self._client: RestClient | None = None
        if self.call is None:
            self._client = RestClient(Endpoint(rest_base(self.url), self.secret, "Beater"))
            self.call = self._client.once
        self._call: Call = self.call
        self._scopes: dict[str, _Scope] = {}
        # _lock guards the scopes and failures; _sending is held around every call, so that
        # one call at a time changes a scope's switch (the thread's round, add, remove, stop)
        # and a scope's timing fields, and none re-arms a switch another has just disarmed.
        self._lock = threading.Lock()
        self._sending = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.failures: dict[str, BeatFailure] = {}
        for scope in self.scopes:
            self.add(scope)

    # -- which scopes ----------------------------------------------------------------------
    def add(
        self,
        scope: str,
        *,
        window: int | None = None,
        on_expiry: list[Action] | None = None,
        notify_address: str | None = None,
        agent_id: str | None = None,
    ) -> None:
        """Beats ``scope`` too: at once, here, if the beater runs (its switch is armed when
        this returns, or its refusal is in ``failures``, or it is retried as any beat is);
        else with the others when it starts."""
        added = _Scope(
            scope,
            window or self.window,
            list(on_expiry or self.on_expiry),
            notify_address or self.notify_address,
            agent_id or self.agent_id,
            due=self.clock(),
        )
        with self._lock:
            self._scopes[scope] = added
            self.failures.pop(scope, None)
        if self._thread is not None:
            with self._sending:
                # Not once stopping: stop's disarm may already have run without this scope.
                if not self._stop.is_set() and self._current([added]):
                    self._send([added], strict=False)
            self._wake.set()  # the thread looks again at when the next beat is due

    def remove(self, scope: str, *, disarm: bool = True) -> None:
        """Stops beating ``scope``; disarms its switch unless ``disarm`` is False."""
        with self._sending:
            with self._lock:
                gone = self._scopes.pop(scope, None)
            if gone is not None and disarm:
                self._disarm([gone])

    @property
    def beating(self) -> list[str]:
        with self._lock:
            return sorted(self._scopes)

    # -- running ---------------------------------------------------------------------------
    def start(self) -> Beater:
        """Beats every scope once, here, then goes on in a background thread. A first round
        with a call not answered, or refused as a whole (a wrong URL or secret), raises its
        ``Failure`` here, once what that round armed is disarmed again."""
        if self._thread is not None:
            raise RuntimeError("this Beater is running already")
        try:
            self.beat_due(strict=True)
        except BaseException:
            with self._lock:
                armed = [s for s in self._scopes.values() if s.deadline is not None]
            with self._sending:
                self._disarm(armed)
            raise
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="vigil-beater", daemon=True)
        self._thread.start()
        return self

    def stop(self, *, disarm: bool = True) -> None:
        """Stops the thread; disarms every switch unless ``disarm`` is False."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if disarm:
            with self._sending:
                with self._lock:
                    scopes = list(self._scopes.values())
                self._disarm(scopes)

    def __enter__(self) -> Beater:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop(disarm=error is None or self.disarm_on_error)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                pause = self.beat_due()
            except Exception:
                log.exception("the beater's round failed; trying again")
                pause = FIRST_RETRY_SECONDS
            self._wake.wait(pause)
            self._wake.clear()

    # -- one round -------------------------------------------------------------------------
    def beat_due(self, *, strict: bool = False) -> float:
        """Beats every scope that is due (and those due soon with them), in batches; returns
        how many seconds until the next is due. What the thread does each time it wakes.
        ``strict``: a call not answered or refused as a whole raises instead of waiting."""
        now = self.clock()
        with self._lock:
            # A scope waiting for a retry waits its turn; the others may go a little early.
            due = [
                s
                for s in self._scopes.values()
                if s.due <= now + (0.0 if s.retries else s.window * GATHER)
            ]
        for start in range(0, len(due), BATCH):
            with self._sending:
                batch = self._current(due[start : start + BATCH])
                if batch:
                    self._send(batch, strict)
        with self._lock:
            if not self._scopes:
                return 3600.0
            return max(0.0, min(s.due for s in self._scopes.values()) - self.clock())

    def _current(self, scopes: list[_Scope]) -> list[_Scope]:
        """Those of ``scopes`` still beaten (not removed, nor replaced by a later ``add``)."""
        with self._lock:
            return [s for s in scopes if self._scopes.get(s.name) is s]

    def _batch(self, scopes: list[_Scope], disarm: bool = False) -> list[dict[str, Any]]:
        """One heartbeat_batch call's answers, one per scope, in order; ``Unreachable`` for
        an answer that is not that. Called with ``_sending`` held."""
        if self._client is not None:
            # A call that hangs must not spend the shortest window's time to retry in.
            shortest = min(scope.window for scope in scopes)
            self._client.timeout = max(1.0, min(TIMEOUT_SECONDS, shortest / 6))
        answer = self._call("heartbeat_batch", {"beats": [scope.beat(disarm) for scope in scopes]})
        results = answer.get("results") if isinstance(answer, dict) else None
        if not isinstance(results, list) or len(results) != len(scopes):
            raise Unreachable("the endpoint answered, but not with a result for each beat")
        return results

    def _send(self, scopes: list[_Scope], strict: bool) -> None:
        try:
            results = self._batch(scopes)
        except Refused as refused:
            if strict:
                raise
            if refused.retryable:
                self._retry_later(scopes)
            else:
                for scope in scopes:
                    self._give_up(scope, refused.code, str(refused))
            return
        except Failure:  # unreachable: no answer, or not Vigil's
            if strict:
                raise
            self._retry_later(scopes)
            return
        for scope, outcome in zip(scopes, results, strict=True):
            error = outcome.get("error")
            if error is None:
                now = self.clock()
                scope.retries = 0
                scope.deadline = now + scope.window
                scope.due = now + scope.window / 3
            elif error.get("retryable"):
                self._retry_later([scope])
            else:
                self._give_up(scope, error["code"], error.get("message", ""))

    def _retry_later(self, scopes: list[_Scope]) -> None:
        now = self.clock()
        for scope in scopes:
            cap = min(LONGEST_RETRY_SECONDS, FIRST_RETRY_SECONDS * 2.0**scope.retries)
            wait = self.jitter() * cap
            scope.retries += 1
            if scope.deadline is not None and now < scope.deadline:
                # Retried until the deadline, never beyond it: past it, the usual pace.
                wait = min(wait, max(0.0, scope.deadline - now))
            elif scope.deadline is not None:
                wait = max(wait, scope.window / 3)
            scope.due = now + wait

    def _give_up(self, scope: _Scope, code: str, message: str) -> None:
        with self._lock:
            self._scopes.pop(scope.name, None)
            self.failures[scope.name] = BeatFailure(scope.name, code, message)
        log.warning("stopped beating %s: %s", scope.name, code)

    def _disarm(self, scopes: list[_Scope]) -> None:
        """Disarms ``scopes``' switches, retrying what may pass, with jittered growing waits,
        for up to DISARM_SECONDS. Called with ``_sending`` held."""
        until = self.clock() + DISARM_SECONDS
        waiting = list(scopes)
        retries = 0
        while waiting:
            if retries and self.clock() > until:
                log.warning("could not disarm %d switch(es) in time", len(waiting))
                return
            batch, waiting = waiting[:BATCH], waiting[BATCH:]
            again: list[_Scope] = []
            try:
                results = self._batch(batch, disarm=True)
            except Failure as failed:
                if isinstance(failed, Refused) and not failed.retryable:
                    log.warning("could not disarm %d switch(es): %s", len(batch), failed.code)
                    continue
                again = batch
            else:
                for scope, outcome in zip(batch, results, strict=True):
                    error = outcome.get("error")
                    # Not found: never armed, or already stopped; nothing to disarm.
                    if error is None or error["code"] == "not_found":
                        continue
                    if error.get("retryable"):
                        again.append(scope)
                    else:
                        log.warning("could not disarm %s: %s", scope.name, error["code"])
            if again:
                retries += 1
                self.sleep(self.jitter() * min(2.0, FIRST_RETRY_SECONDS * 2.0**retries))
                waiting = again + waiting
