"""Where dead-man switches and their deaths are kept.

Beats, firing, alarm moves and graces are single conditional writes of their own (no unit of
work: none carries an idempotency key); arming, disarming, the death's steps and pauses go
through one.

Armed switches are also kept in ``SWEEP_SHARDS`` shards across every namespace, for the sweep
(vigil.switches.sweep) that finds the ones whose alarm was lost: a switch is in its shard
exactly while it is armed, and its shard never changes.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from datetime import datetime
from typing import NamedTuple

from vigil.audit.store import AuditStore
from vigil.identity.store import IdentityStore
from vigil.kit.uow import Committer, Write
from vigil.leases.store import LeaseStore
from vigil.mailboxes.store import MailboxStore
from vigil.progress.store import ProgressStore, ScopeHolders
from vigil.quotas.store import QuotaStore
from vigil.switches.records import Beat, Death, Pause, ReleasedPage, Switch

# The sweep's shards: each is one partition of the sweep index, read by its own query, so that no
# query reads a namespace's switches whole and a run can read several at once.
SWEEP_SHARDS = 32


def sweep_shard(namespace: str, scope: str) -> int:
    """The shard of a scope's switch: a hash of its namespace and scope, the same on every
    machine and in every generation."""
    digest = hashlib.sha256(f"{namespace}\x00{scope}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % SWEEP_SHARDS


class ArmedAlarm(NamedTuple):
    """An armed switch as the sweep sees it: which alarm it waits for."""

    namespace: str
    scope: str
    generation: int
    alarm_due: datetime


class ArmedPage(NamedTuple):
    alarms: list[ArmedAlarm]
    after: str | None  # where the shard's next page starts; None: the shard is read whole


class SwitchStore(ScopeHolders, ABC):
    @abstractmethod
    def get_switch(self, namespace: str, scope: str) -> Switch | None: ...

    @abstractmethod
    def get_switches(self, keys: list[tuple[str, str]]) -> dict[tuple[str, str], Switch]:
        """The switches at ``keys`` (namespace, scope), read consistently and together; those
        that exist."""

    def scope_holder(self, namespace: str, scope: str) -> str | None:
        switch = self.get_switch(namespace, scope)
        return switch.holder if switch is not None and switch.state != "fired" else None

    @abstractmethod
    def beat_switch(self, namespace: str, scope: str, holder: str, beat: Beat) -> Switch | None:
        """The steady-state beat, one conditional write: applies ``beat`` if the switch is
        armed by ``holder`` with the same notify address, a deadline still ahead of the beat,
        and an alarm due no later than the new deadline (a shorter window needs an earlier
        alarm). Returns the new switch, or None when any of that does not hold (the caller
        then reads the switch and takes the slow path)."""

    @abstractmethod
    def save_switch(self, switch: Switch, expected_version: int | None) -> Write:
        """Stores ``switch`` if the stored version is ``expected_version`` (None: absent). A
        switch stored for the first time also gets its row in the namespace's switch index."""

    @abstractmethod
    def list_switches(
        self, namespace: str, prefix: str, after: str | None, limit: int
    ) -> list[Switch]:
        """Up to ``limit`` of the namespace's indexed switches whose scope begins with
        ``prefix``, in scope order, beginning after the scope ``after``."""

    @abstractmethod
    def armed_alarms(self, shard: int, after: str | None, limit: int) -> ArmedPage:
        """Up to ``limit`` of the switches armed in ``shard`` (of every namespace), from where
        ``after`` (a page's own ``after``) says, each with the alarm it waits for. Read without
        a lock on the switches: one may have changed since, so whoever acts on it reads it
        again."""

    @abstractmethod
    def fire_switch(self, switch: Switch, death: Death, now: datetime, *also: Write) -> None:
        """The expiry, atomically: the switch goes from armed at its generation with a
        deadline at or before ``now`` to fired, and ``death`` is created with its row in the
        namespace's death index, with ``also`` (the event of a death that has nothing else to
        do). Raises ConditionFailed if anything else happened first (a beat, a disarm, another
        firing)."""

    @abstractmethod
    def move_alarm(self, switch: Switch, previous_due: datetime) -> bool:
        """Records ``switch.alarm_due`` if the recorded one is still ``previous_due`` (same
        generation, still armed). Returns whether this caller won."""

    @abstractmethod
    def grant_grace(self, switch: Switch, missed: datetime, previous_due: datetime) -> bool:
        """Records ``switch.deadline`` and ``switch.alarm_due`` (its grace after a pause) if
        it is still armed at its generation with the deadline ``missed`` and the alarm due
        at ``previous_due``: no beat came in between. Returns whether this caller won."""

    @abstractmethod
    def pauses(self, namespace: str) -> list[Pause]:
        """Every pause kept for ``namespace`` (in force, or ended and not yet dropped), in
        prefix order: one query of its pause partition."""

    @abstractmethod
    def save_pause(self, pause: Pause, expected_version: int | None) -> Write:
        """Stores ``pause`` in its prefix's place if the pause stored there is at
        ``expected_version`` (None: none is)."""

    @abstractmethod
    def get_death(self, namespace: str, scope: str, generation: int) -> Death | None: ...

    @abstractmethod
    def latest_death(self, namespace: str, scope: str) -> Death | None: ...

    @abstractmethod
    def recent_deaths(self, namespace: str, before: str | None, limit: int) -> list[Death]:
        """Up to ``limit`` of the namespace's indexed deaths, newest first, beginning after
        the position ``before`` (in that order)."""

    @abstractmethod
    def save_death(self, death: Death, expected_version: int) -> Write:
        """Stores ``death`` if the stored one is still at ``expected_version``."""

    @abstractmethod
    def add_released_page(self, page: ReleasedPage) -> Write:
        """Stores ``page`` if no page of that number is stored for its death."""

    @abstractmethod
    def get_released_page(
        self, namespace: str, scope: str, generation: int, number: int
    ) -> ReleasedPage | None: ...

    # -- dependencies ------------------------------------------------------------------------
    @abstractmethod
    def depends_on_is(self, namespace: str, scope: str, found: Switch | None) -> Write:
        """A check, written with a change of dependency, that the switch of ``scope`` depends
        on what ``found`` (as read; None: no switch) says it does: a concurrent change of the
        chain fails the commit, so no two changes can close a cycle between them."""

    @abstractmethod
    def add_dependant(self, namespace: str, parent: str, dependant: str) -> Write:
        """Records that the switch of ``dependant`` depends on the one of ``parent``."""

    @abstractmethod
    def remove_dependant(self, namespace: str, parent: str, dependant: str) -> Write:
        """Forgets that record, if there is one."""

    @abstractmethod
    def dependants(self, namespace: str, parent: str, limit: int) -> tuple[list[str], int]:
        """The first ``limit`` scopes (in scope order) of the switches that depend on the one
        of ``parent``, and how many there are."""


class SwitchPorts(
    Committer,
    AuditStore,
    IdentityStore,
    LeaseStore,
    MailboxStore,
    ProgressStore,
    QuotaStore,
    SwitchStore,
    ABC,
):
    """The store ports of the switches' engine, pauses and listings."""
