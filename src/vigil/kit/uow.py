"""The unit of work: what a call writes, staged and committed in one atomic step.

A store's port methods that change something do not write: they return a ``Write`` that a
unit of work commits. One commit is one ``TransactWriteItems`` (or one conditional write when
it holds a single item) that carries, when the call gave an idempotency key, the completion of
that key with the call's result. So a write never lands without its replayable result, nor a
result without its write, and no port needs to know about idempotency.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

if TYPE_CHECKING:
    from vigil.kit.idempotency import IdempotencyRecord


class ConditionFailed(Exception):
    """A conditional write lost: the record exists, or changed since it was read."""


class Write:
    """One staged change, in the form its backend applies: DynamoDB transaction items, or a
    check and an apply step run under the in-memory store's lock."""


@dataclass(frozen=True)
class Count:
    """A change of a counter, the number ``name`` of the item ``pk``/``sk``. An increase holds
    only while the counter stays at or under ``limit`` (if one is given)."""

    pk: str
    sk: str
    name: str
    delta: int
    limit: int | None = None


@dataclass(frozen=True)
class Tally:
    """Every change of one counter in one commit, as one: a transaction may touch an item
    once, so the counts of a commit (forty leases leaving one scope, say) are summed first."""

    pk: str
    sk: str
    name: str
    delta: int
    limit: int | None


def tallies(counts: Iterable[Count]) -> dict[tuple[str, str], list[Tally]]:
    """``counts`` summed per counter and grouped per item; counters that sum to zero drop."""
    sums: dict[tuple[str, str, str], tuple[int, int | None]] = {}
    for count in counts:
        delta, limit = sums.get((count.pk, count.sk, count.name), (0, None))
        if count.limit is not None:
            limit = count.limit if limit is None else min(limit, count.limit)
        sums[(count.pk, count.sk, count.name)] = (delta + count.delta, limit)
    grouped: dict[tuple[str, str], list[Tally]] = {}
    for (pk, sk, name), (delta, limit) in sums.items():
        if delta:
            grouped.setdefault((pk, sk), []).append(Tally(pk, sk, name, delta, limit))
    return grouped


class Committer(ABC):
    """What a backend offers a unit of work: applying writes atomically."""

    @abstractmethod
    def commit(self, writes: Sequence[Write], completion: IdempotencyRecord | None = None) -> None:
        """Applies every write and ``completion`` (a pending claim of ours, completed) in one
        atomic step, or none of them: ConditionFailed if any condition does not hold."""


@dataclass(frozen=True)
class Retirement:
    """What a call that replaces the credential it was made with (a rotation of one's own
    secret) leaves for a retry that can only be made with that credential: its full result,
    the digest of the credential that replaces it, and until when."""

    result: BaseModel
    successor_hash: str
    until: datetime


class UnitOfWork:
    """The writes of one call, and the idempotency claim they complete.

    The claim is completed by the first commit that carries a result; a call that ends
    without one (it found nothing to change) has it completed alone by ``finish``.
    ``credential`` is the secret the call was made with, which a ``Retirement`` seals under;
    ``kept`` the part of a result that the completion stores (``Replay.kept``), all of it if
    None.
    """

    def __init__(
        self,
        committer: Committer,
        claim: IdempotencyRecord | None = None,
        credential: str | None = None,
        kept: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self._committer = committer
        self._claim = claim
        self._credential = credential
        self._kept = kept
        # The call's stable name, the same on each retry with its idempotency key; None for a
        # call without a key, which is a new operation every time.
        self.operation = None if claim is None else f"{claim.tool}/{claim.principal_id}/{claim.key}"

    def commit(
        self,
        *writes: Write,
        result: BaseModel | None = None,
        retirement: Retirement | None = None,
    ) -> None:
        """Commits ``writes`` and completes the claim with ``result``, the result a replay
        returns (what ``kept`` keeps of it, which the replay rebuilds). A call that replaces its
        own credential gives the ``retirement`` too: its full result is kept with the
        completion, sealed under that credential (a handover)."""
        completion = None
        if self._claim is not None and result is not None:
            handover = None
            if retirement is not None and self._credential is not None:
                handover = self._claim.handing_over(
                    self._credential,
                    retirement.result.model_dump(mode="json"),
                    retirement.successor_hash,
                    retirement.until,
                )
            stored = result.model_dump(mode="json")
            if self._kept is not None:
                stored = self._kept(stored)
            completion = self._claim.completed(stored, handover)
        self._committer.commit(writes, completion)
        if completion is not None:
            self._claim = None

    def finish(self, result: BaseModel) -> None:
        """Completes the claim with ``result`` unless a commit already did."""
        if self._claim is not None:
            self.commit(result=result)
