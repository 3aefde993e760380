"""The MCP Events extension (``io.modelcontextprotocol/events``) on the MCP endpoint: an agent's
own events by poll and by webhook, for a host of the 2026-07-28 revision, which the extension
is defined for. The server offers it in ``server/discover``; a request of the handshake era
knows no ``events/*`` method, as before.

Params are read strictly: an unknown member, a wrong type or an event of no type offered is
``-32602`` with the path at fault, and changes nothing. A typed refusal of the use case (a
quota, a bad cursor) is a JSON-RPC error carrying it as ``data``, as the endpoint's 401 does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from vigil.errors import ErrorCode, VigilError
from vigil.transports.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS

if TYPE_CHECKING:
    from vigil.app import App
    from vigil.identity.records import Principal

EXTENSION = "io.modelcontextprotocol/events"
METHODS = frozenset({"events/list", "events/poll", "events/subscribe", "events/unsubscribe"})
# What a caller asked wrongly; anything else is the service's.
_ASKED_WRONGLY = frozenset(
    {ErrorCode.INVALID_ARGUMENT, ErrorCode.LIMIT_EXCEEDED, ErrorCode.NOT_FOUND}
)


class Refusal(Exception):
    """An ``events/*`` request refused: its JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def answer(app: App, method: str, params: dict[str, Any], caller: Principal) -> dict[str, Any]:
    """The result of the ``events/*`` request ``method`` of ``caller``; Refusal if refused."""
    from vigil.notifications import subscribing

    asked = {name: value for name, value in params.items() if name != "_meta"}
    if method == "events/list":
        return {"events": subscribing.catalog()}
    service = subscribing.Subscribing(app.store, app.clock, app.keys, app.quotas)
    namespace, principal = caller.namespace, caller.id
    try:
        if method == "events/poll":
            return service.poll(namespace, principal, _read(subscribing.Poll, asked))
        if method == "events/subscribe":
            return service.subscribe(namespace, principal, _read(subscribing.Subscribe, asked))
        service.unsubscribe(namespace, principal, _read(subscribing.Unsubscribe, asked))
        return {}
    except VigilError as refused:
        code = INVALID_PARAMS if refused.code in _ASKED_WRONGLY else INTERNAL_ERROR
        raise Refusal(code, refused.message, refused.to_dict()) from None


P = TypeVar("P", bound=BaseModel)


def _read(model: type[P], params: dict[str, Any]) -> P:
    try:
        return model.model_validate(params)
    except ValidationError as wrong:
        first = wrong.errors()[0]
        path = ".".join(str(part) for part in first["loc"]) or "params"
        raise Refusal(INVALID_PARAMS, f"params.{path}: {first['msg']}") from None
