"""The one path every tool call takes, whatever the transport: authenticate, validate,
authorize, claim the idempotency key, run, record the result."""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any

from pydantic import BaseModel, ValidationError

from vigil.catalog import BY_NAME, Tool
from vigil.clock import Clock
from vigil.domain.identity import Caller, parse_secret, secret_matches
from vigil.errors import VigilError, forbidden, invalid, unauthenticated, unavailable
from vigil.observability import get_logger, log_event
from vigil.ports.mailboxes import MailboxQueues
from vigil.store import Store
from vigil.timers import Alarms
from vigil.tools.common import Context, claim_key, idempotency_field

log = get_logger("vigil.app")

# Arguments that never take part in an idempotency fingerprint: the key itself (whatever the
# tool's field for it is called), and a credential that may legitimately change (rotation)
# between a call and its retry.
_NOT_FINGERPRINTED = {"idempotency_key", "agent_key"}


class UnknownTool(Exception):
    """The transport reports this as a protocol error, not as a tool result."""


class App:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        queues: MailboxQueues | None = None,
        alarms: Alarms | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.queues = queues
        self.alarms = alarms

    def authenticate(self, bearer: str | None, agent_key: str | None) -> Caller:
        if bearer and agent_key and bearer != agent_key:
            raise unauthenticated()
        secret = bearer or agent_key
        parsed = parse_secret(secret) if isinstance(secret, str) else None
        if secret is None or parsed is None:
            raise unauthenticated()
        namespace, principal_id = parsed
        principal = self.store.get_principal(namespace, principal_id)
        if (
            principal is None
            or principal.status != "active"
            or not secret_matches(secret, principal.secret_hash)
        ):
            raise unauthenticated()
        return Caller(namespace, principal.id, principal.kind, principal.role, principal)

    def call(self, name: str, arguments: Any, bearer: str | None) -> dict[str, Any]:
        tool = BY_NAME.get(name)
        if tool is None:
            raise UnknownTool(name)
        started = time.perf_counter()
        caller: Caller | None = None
        try:
            if not isinstance(arguments, dict):
                raise invalid("arguments must be a JSON object")
            agent_key = arguments.get("agent_key") if tool.takes_agent_key else None
            caller = self.authenticate(bearer, agent_key if isinstance(agent_key, str) else None)
            args = parse_arguments(tool, arguments)
            if caller.role not in tool.roles:
                raise forbidden()
            result = self._run(tool, caller, args)
        except VigilError as error:
            _log_call(tool.name, caller, started, error.code.value)
            raise
        except Exception:
            # Whatever went wrong stays in our logs; the caller gets a retryable, typed error.
            log.exception("unexpected failure", extra={"fields": {"tool": tool.name}})
            raise unavailable() from None
        _log_call(tool.name, caller, started, "ok")
        return result

    def _run(self, tool: Tool, caller: Caller, args: BaseModel) -> dict[str, Any]:
        ctx = Context(
            store=self.store,
            clock=self.clock,
            caller=caller,
            queues=self.queues,
            alarms=self.alarms,
        )
        key_field = idempotency_field(type(args))
        key = getattr(args, key_field, None)
        if key is not None:
            excluded = {*_NOT_FINGERPRINTED, key_field}
            fingerprinted = args.model_dump(mode="json", exclude=excluded)
            replay = claim_key(ctx, tool.name, key, fingerprinted)
            if replay is not None:
                return replay
        try:
            result = tool.run(ctx, args)
        except BaseException:
            if ctx.claim is not None:
                # Conditional on our token and on still being pending: if the write did commit
                # before the failure, the completed record stays and a retry replays it. If the
                # release itself fails, the claim's lock lapses and a retry takes it over.
                with contextlib.suppress(VigilError):
                    self.store.release_idempotency(ctx.claim)
            raise
        if ctx.claim is not None and not ctx.claim_used:
            completion = ctx.completion(result)
            assert completion is not None
            self.store.complete_idempotency(completion)
        return result.model_dump(mode="json")


def parse_arguments(tool: Tool, arguments: dict[str, Any]) -> BaseModel:
    try:
        return tool.input_model.model_validate(arguments)
    except ValidationError as error:
        found = error.errors(include_input=False, include_url=False)
        # Bounded, because unknown property names come from the caller: a refusal must stay
        # small however many (or however long) they are.
        problems = [
            {
                "field": _shorten(".".join(str(part) for part in e["loc"]) or "(arguments)"),
                "problem": e["msg"],
            }
            for e in found[:_MAX_PROBLEMS]
        ]
        details: dict[str, Any] = {"problems": problems}
        if len(found) > _MAX_PROBLEMS:
            details["more_problems"] = len(found) - _MAX_PROBLEMS
        raise invalid("the arguments do not match the tool's input schema", **details) from None


_MAX_PROBLEMS = 20
_MAX_FIELD = 100


def _shorten(text: str) -> str:
    return text if len(text) <= _MAX_FIELD else text[: _MAX_FIELD - 1] + "…"


def _log_call(tool: str, caller: Caller | None, started: float, outcome: str) -> None:
    log_event(
        log,
        "tool call",
        logging.INFO if outcome == "ok" else logging.WARNING,
        tool=tool,
        outcome=outcome,
        namespace=caller.namespace if caller else None,
        principal_id=caller.principal_id if caller else None,
        duration_ms=round((time.perf_counter() - started) * 1000, 2),
    )
