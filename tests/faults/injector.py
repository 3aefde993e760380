"""Faults injected into the real boto3 clients at the botocore layer, chosen by AWS call index.

Every call sent by a hooked client is counted, across clients, in the order it is sent. One
fault is planned at one index and fires there:

- ``throttle``: the request is refused before it reaches AWS, as a throttled request is
  (DynamoDB ``ProvisionedThroughputExceededException`` / ``ThrottlingException``, the others
  ``ThrottlingException``; the code alternates with the variant);
- ``server_error``: a 5xx (``InternalServerError`` 500 / ``ServiceUnavailable`` 503). At an even
  variant the request never took effect; at an odd one it did and only the answer was an error,
  as DynamoDB warns a 500 on a write may mean;
- ``timeout``: ``botocore.exceptions.ReadTimeoutError``. At an even variant the request reached
  AWS and took effect before the read timed out (the ambiguous case); at an odd one it was lost;
- ``crash``: the request took effect and the process died before it saw the answer. That call
  and every later call of the same attempt fail, so no clean-up code of ours can write anything
  more, until ``restart`` (a fresh sandbox).
- ``conflict`` (DynamoDB writes only, and not among ``KINDS``: ``test_conflicts`` plans it): the
  write is refused as DynamoDB refuses one that meets another transaction on an item, a
  ``TransactionCanceledException`` whose reasons say ``TransactionConflict`` for a transaction,
  ``TransactionConflictException`` for a single-item write; its variant is how many sends in a
  row are refused (the first and the resends of the same request that follow it).

A refused request is stopped in ``before-send``, ahead of moto's own ``before-send`` handler,
by raising: botocore turns the raise into the call's error, and moto never sees the request.
A fault after the request is raised from ``after-call``, once moto has applied it.

The clients are built with botocore's retries off (``NO_RETRIES``) so that a fault reaches
Vigil's code, as it does in production once the client's own retries are spent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from botocore.config import Config
from botocore.exceptions import ReadTimeoutError

FaultKind = Literal["throttle", "server_error", "timeout", "crash", "conflict"]
KINDS: tuple[FaultKind, ...] = ("throttle", "server_error", "timeout", "crash")
# How many distinct variants each kind has; the full run tries every one at every index.
VARIANTS: dict[FaultKind, int] = {"throttle": 2, "server_error": 4, "timeout": 2, "crash": 1}

NO_RETRIES = Config(retries={"mode": "standard", "total_max_attempts": 1})

_THROTTLE_CODES = {
    "dynamodb": ("ProvisionedThroughputExceededException", "ThrottlingException"),
    "sqs": ("ThrottlingException", "RequestThrottled"),
}
_SERVER_ERRORS = (("InternalServerError", 500), ("ServiceUnavailable", 503))


class Crash(Exception):
    """The process died here: the Lambda timed out or was killed mid-call."""


@dataclass(frozen=True)
class Fault:
    kind: FaultKind
    variant: int = 0

    @property
    def after_the_request(self) -> bool:
        """Whether the request takes effect at AWS before the fault."""
        if self.kind in ("throttle", "conflict"):
            return False
        if self.kind == "server_error":
            return self.variant % 2 == 1
        if self.kind == "timeout":
            return self.variant % 2 == 0
        return True

    @property
    def sends(self) -> int:
        """How many sends in a row the fault refuses."""
        return max(1, self.variant) if self.kind == "conflict" else 1

    def error_code(self, service: str) -> tuple[str, int] | None:
        if self.kind == "conflict":
            return "TransactionConflictException", 400
        if self.kind == "throttle":
            codes = _THROTTLE_CODES.get(service, ("ThrottlingException",))
            return codes[self.variant % len(codes)], 400
        if self.kind == "server_error":
            return _SERVER_ERRORS[(self.variant // 2) % len(_SERVER_ERRORS)]
        return None

    def describe(self, service: str) -> str:
        code = self.error_code(service)
        when = "after the request took effect" if self.after_the_request else "request refused"
        if self.kind == "crash":
            return "crash after the request took effect"
        if self.kind == "conflict":
            return f"conflict on {self.sends} send(s) in a row"
        name = code[0] if code else "ReadTimeoutError"
        return f"{self.kind} {name} ({when})"


def faults_at(kind: FaultKind, index: int, full: bool) -> list[Fault]:
    """The faults of ``kind`` tried at call ``index``.

    Full: every variant of every kind at every index. Default, to keep the run short: a crash
    at every index (the harshest fault: the call took effect and nothing after it ran), and
    one of the other three kinds, taking turns by index, its variant alternating too."""
    if full:
        return [Fault(kind, variant) for variant in range(VARIANTS[kind])]
    if kind == "crash":
        return [Fault(kind)]
    turns = [k for k in KINDS if k != "crash"]
    return [Fault(kind, index // len(turns))] if turns[index % len(turns)] == kind else []


class FaultInjector:
    """Counts the calls of the clients it hooks and fires the one planned fault."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.fired: str | None = None
        self.dead = False
        self._plan: tuple[int, Fault] | None = None
        self._current: int | None = None

    # -- wiring -------------------------------------------------------------------------------
    def hook(self, client: Any) -> Any:
        service = client.meta.service_model.service_name

        def before_send(event_name: str, request: Any = None, **_: Any) -> None:
            self._before_send(client, service, event_name.rsplit(".", 1)[-1], request)

        def after_call(event_name: str, http_response: Any, **_: Any) -> None:
            self._after_call(client, service, event_name.rsplit(".", 1)[-1], http_response)

        # First, so that a refused request never reaches moto's own before-send handler.
        client.meta.events.register_first("before-send", before_send)
        client.meta.events.register("after-call", after_call)
        return client

    # -- control ------------------------------------------------------------------------------
    def plan(self, index: int, fault: Fault) -> None:
        self.reset()
        self._plan = (index, fault)

    def reset(self) -> None:
        """Forgets the counts and any fault: a fresh sandbox, nothing planned."""
        self.calls = []
        self.fired = None
        self.dead = False
        self._plan = None
        self._current = None

    # -- the hooks ----------------------------------------------------------------------------
    def _planned_here(self) -> Fault | None:
        if self._plan is None or self._current is None:
            return None
        index, fault = self._plan
        if not index <= self._current < index + fault.sends:
            return None
        if self._current > index and self.calls[self._current] != self.calls[index]:
            return None  # the refused request was not sent again: the run of refusals ends
        return fault

    def _before_send(self, client: Any, service: str, operation: str, request: Any) -> None:
        if self.dead:
            raise Crash("the process is gone")
        self._current = len(self.calls)
        self.calls.append(f"{service}.{operation}")
        fault = self._planned_here()
        if fault is None or fault.after_the_request:
            return
        if self.fired is None:
            self._fire(fault, service, operation)
        if fault.kind == "conflict" and operation == "TransactWriteItems":
            raise self._cancelled(client, request)
        raise self._error(client, fault, service, operation, url=None)

    def _after_call(self, client: Any, service: str, operation: str, http_response: Any) -> None:
        fault = self._planned_here()
        if fault is None or not fault.after_the_request or self.fired is not None:
            return
        self._fire(fault, service, operation)
        if fault.kind == "crash":
            self.dead = True
            raise Crash(f"crashed after {service}.{operation}")
        raise self._error(client, fault, service, operation, url=getattr(http_response, "url", ""))

    def _fire(self, fault: Fault, service: str, operation: str) -> None:
        self.fired = f"{fault.describe(service)} at call {self._current} ({service}.{operation})"

    @staticmethod
    def _cancelled(client: Any, request: Any) -> Exception:
        """A transaction cancelled as DynamoDB cancels one that met another on its first item:
        one reason per item, in order."""
        items = json.loads(request.body)["TransactItems"]
        reasons = [
            {"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}
        ]
        reasons += [{"Code": "None"}] * (len(items) - 1)
        codes = ", ".join(reason["Code"] for reason in reasons)
        response = {
            "Error": {
                "Code": "TransactionCanceledException",
                "Message": (
                    "Transaction cancelled, please refer cancellation reasons for specific"
                    f" reasons [{codes}]"
                ),
            },
            "CancellationReasons": reasons,
            "ResponseMetadata": {"HTTPStatusCode": 400, "RequestId": "injected"},
        }
        error: Exception = client.exceptions.TransactionCanceledException(
            response, "TransactWriteItems"
        )
        return error

    @staticmethod
    def _error(
        client: Any, fault: Fault, service: str, operation: str, url: str | None
    ) -> Exception:
        code = fault.error_code(service)
        if code is None:
            return ReadTimeoutError(endpoint_url=url or "https://injected.invalid")
        name, status = code
        response = {
            "Error": {"Code": name, "Message": "injected fault"},
            "ResponseMetadata": {"HTTPStatusCode": status, "RequestId": "injected"},
        }
        error: Exception = client.exceptions.from_code(name)(response, operation)
        return error
