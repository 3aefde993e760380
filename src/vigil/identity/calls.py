"""A call as every capability's tools see it: who makes it, at what time, the unit of work
its writes commit in, and the store ports it may use, of a type each capability names.

A capability's context protocol (``LeaseContext``, ``SwitchContext``...) is this with its own
ports, and whatever else its tools read; ``vigil.context.Context`` gives every one of them.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from vigil.clock import Clock
from vigil.identity.records import Caller
from vigil.kit.uow import UnitOfWork

Ports = TypeVar("Ports", covariant=True)


class Call(Protocol[Ports]):
    @property
    def store(self) -> Ports: ...

    @property
    def caller(self) -> Caller: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def uow(self) -> UnitOfWork: ...
