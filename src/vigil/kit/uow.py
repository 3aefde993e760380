"""The unit of work: what a call writes, staged and committed in one atomic step.

A store's port methods that change something do not write: they return a ``Write`` that a
unit of work commits. One commit is one ``TransactWriteItems`` (or one conditional write when
it holds a single item) that carries, when the call gave an idempotency key, the completion of
that key with the call's result. So a write never lands without its replayable result, nor a
result without its write, and no port needs to know about idempotency.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel

if TYPE_CHECKING:
    from vigil.kit.idempotency import IdempotencyRecord


class ConditionFailed(Exception):
    """A conditional write lost: the record exists, or changed since it was read."""


class Write:
    """One staged change, in the form its backend applies: DynamoDB transaction items, or a
    check and an apply step run under the in-memory store's lock."""


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
    ``credential`` is the secret the call was made with, which a ``Retirement`` seals under.
    """

    def __init__(
        self,
        committer: Committer,
        claim: IdempotencyRecord | None = None,
        credential: str | None = None,
    ) -> None:
        self._committer = committer
        self._claim = claim
        self._credential = credential

    def commit(
        self,
        *writes: Write,
        result: BaseModel | None = None,
        retirement: Retirement | None = None,
    ) -> None:
        """Commits ``writes`` and completes the claim with ``result``, the result a replay
        returns. A call that replaces its own credential gives the ``retirement`` too: its full
        result is kept with the completion, sealed under that credential (a handover)."""
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
            completion = self._claim.completed(result.model_dump(mode="json"), handover)
        self._committer.commit(writes, completion)
        if completion is not None:
            self._claim = None

    def finish(self, result: BaseModel) -> None:
        """Completes the claim with ``result`` unless a commit already did."""
        if self._claim is not None:
            self.commit(result=result)
