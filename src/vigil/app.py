"""The one path every tool call takes, whatever the transport: authenticate, validate,
authorize, claim the idempotency key, run, record the result."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from vigil import catalog
from vigil.alarms.timers import Alarms
from vigil.attachments.blobs import Blobs
from vigil.clock import Clock
from vigil.context import Context
from vigil.errors import (
    ErrorCode,
    VigilError,
    forbidden,
    insufficient_scope,
    invalid,
    unauthenticated,
    unavailable,
)
from vigil.grants.access import looks_like_access_token
from vigil.identity.records import Caller, Principal, parse_secret, secret_matches
from vigil.kit.idempotency import claim, fingerprint, mismatch
from vigil.kit.keys import Keys
from vigil.kit.principals import Surface
from vigil.kit.tooling import Tool
from vigil.kit.uow import UnitOfWork
from vigil.kit.validation import validated
from vigil.mailboxes.queues import MailboxQueues
from vigil.oauth.scopes import covers, step_up
from vigil.observability import get_logger, log_event, metrics
from vigil.quotas.records import Quotas
from vigil.store import Store

if TYPE_CHECKING:
    from vigil.notifications.sending import Sender
    from vigil.oauth.external import ExternalIssuer

log = get_logger("vigil.app")

T = TypeVar("T")

# Arguments that never take part in an idempotency fingerprint: the key itself (whatever the
# tool's field for it is called), and a credential that may legitimately change (rotation)
# between a call and its retry.
_NOT_FINGERPRINTED = {"idempotency_key", "agent_key"}


class App:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        queues: MailboxQueues,
        alarms: Alarms,
        blobs: Blobs,
        quotas: Quotas | None = None,
        keys: Keys,
        sender: Sender,
        external: ExternalIssuer | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.queues = queues
        self.alarms = alarms
        self.blobs = blobs
        self.quotas = quotas or Quotas()
        self.keys = keys
        self.sender = sender
        # The identity provider whose tokens are taken beside Vigil's own, if the operator
        # named one (vigil.oauth.external).
        self.external = external

    def _principal_of(self, secret: str) -> Principal | None:
        """The active principal a secret names, whether or not it is that principal's secret:
        one keyed read, or none for a secret that names nobody.

        The read is eventually consistent (half a read unit, on every call). A secret it does
        not confirm (its principal not yet seen, its digest not yet the stored one) is read
        again strongly, so a new principal or a new secret works at once; a revoked or
        replaced secret stops when the revocation reaches the read, typically within a second.
        """
        parsed = parse_secret(secret)
        if parsed is None:
            return None
        principal = self.store.get_principal(*parsed, consistent=False)
        if principal is None or not secret_matches(secret, principal.secret_hash):
            principal = self.store.get_principal(*parsed)
        return principal if principal is not None and principal.status == "active" else None

    def authenticate(self, secret: str) -> Principal:
        """The active principal whose secret this is; unauthenticated for any other text."""
        principal = self._principal_of(secret)
        if principal is None or not secret_matches(secret, principal.secret_hash):
            raise unauthenticated()
        return principal

    def authority(
        self, bearer: str, resource: str | None
    ) -> tuple[Principal, frozenset[str] | None]:
        """Whom ``bearer`` stands for, and, for an OAuth access token, its scopes (None for a
        secret): unauthenticated for anything else. A token is taken only for ``resource``,
        the endpoint it was issued for; where there is none (REST), none is."""
        if looks_like_access_token(bearer):
            return self._token_holder(bearer, resource)
        return self.authenticate(bearer), None

    def _token_holder(self, token: str, resource: str | None) -> tuple[Principal, frozenset[str]]:
        """The principal of a live grant a token of this deployment's was issued for: its
        signature, audience and expiry, then the read of its principal that a secret costs
        (read strongly where the eventual read does not show the grant: a new grant holds at
        once)."""
        from vigil.grants.access import verify

        if resource is not None and self.external is not None and self.external.issued(token):
            return self._external_holder(token)
        claims = verify(self.keys, token, resource, self.clock.now())
        if claims is None:
            raise unauthenticated()
        principal = self.store.get_principal(
            claims.namespace, claims.principal_id, consistent=False
        )
        if principal is None or claims.grant_id not in principal.grants:
            principal = self.store.get_principal(claims.namespace, claims.principal_id)
        if (
            principal is None
            or principal.status != "active"
            or claims.grant_id not in principal.grants
        ):
            raise unauthenticated()
        return principal, claims.scopes

    def _external_holder(self, token: str) -> tuple[Principal, frozenset[str]]:
        """The active principal an external issuer's token maps to, and its scopes: those it
        names that Vigil knows, or, if it names none, all that the principal may hold."""
        from vigil.oauth.scopes import SUPPORTED, fitting

        assert self.external is not None
        claims = self.external.claims(token, self.clock.now())
        if claims is None:
            raise unauthenticated()
        principal = self.store.get_principal(
            claims.namespace, claims.principal_id, consistent=False
        ) or self.store.get_principal(claims.namespace, claims.principal_id)
        if principal is None or principal.status != "active":
            raise unauthenticated()
        named = claims.scopes & frozenset(SUPPORTED)
        return principal, named or frozenset(fitting((), principal.kind, principal.role))

    def call(
        self,
        name: str,
        arguments: Any,
        bearer: str | None,
        *,
        via: Surface,
        resource: str | None = None,
    ) -> dict[str, Any]:
        """The tool call ``bearer`` makes; ``resource`` is the endpoint it came to, for an
        OAuth access token (issued for the MCP endpoint alone)."""
        return self._call(name, arguments, via, bearer=bearer, resource=resource)

    def call_as(
        self, name: str, arguments: Any, principal: Principal, *, via: Surface
    ) -> dict[str, Any]:
        """The call ``principal`` makes, whose credential the caller has already checked (the
        console's session, signed over that principal's current secret): the same validation,
        authorization and idempotency as any call, with no secret to hand over."""
        return self._call(name, arguments, via, principal=principal)

    def act_as(self, principal: Principal, act: Callable[[Context], T], *, via: Surface) -> T:
        """``act`` for ``principal``, whose credential the caller has already checked, with a
        call's context but outside any tool: what the MCP Tasks extension's methods do to a
        request (transports/tasks.py). Its unit of work claims no idempotency key, so ``act``
        reads, or makes one conditional change that is safe to repeat."""
        caller = Caller(
            principal.namespace, principal.id, principal.kind, principal.role, principal, via
        )
        try:
            return act(self._context(caller, UnitOfWork(self.store)))
        except VigilError:
            raise
        except Exception:
            log.exception("unexpected failure")
            raise unavailable() from None

    def _call(
        self,
        name: str,
        arguments: Any,
        via: Surface,
        *,
        bearer: str | None = None,
        principal: Principal | None = None,
        resource: str | None = None,
    ) -> dict[str, Any]:
        tool = catalog.tool(name)
        started = time.perf_counter()
        caller: Caller | None = None
        try:
            if not isinstance(arguments, dict):
                raise invalid("arguments must be a JSON object")
            secret: str | None = None
            scopes: frozenset[str] | None = None
            if principal is None:
                agent_key = arguments.get("agent_key") if tool.takes_agent_key else None
                secret = credential(bearer, agent_key if isinstance(agent_key, str) else None)
                if secret == bearer and looks_like_access_token(secret):
                    principal, scopes = self._token_holder(secret, resource)
                    secret = None
                else:
                    principal = self._principal_of(secret)
                    if principal is None or not secret_matches(secret, principal.secret_hash):
                        result = self._handed_over(tool, principal, secret, arguments)
                        _log_call(tool.name, via, caller, started, "ok")
                        return result
            caller = Caller(
                principal.namespace,
                principal.id,
                principal.kind,
                principal.role,
                principal,
                via,
                scopes,
            )
            args = parse_arguments(tool, arguments)
            if not tool.admits(caller.kind, caller.role):
                raise forbidden()
            if scopes is not None and not covers(scopes, tool.name):
                raise insufficient_scope(tool.name, step_up(scopes, tool.name))
            result = self._run(tool, caller, args, secret)
        except VigilError as error:
            _log_call(tool.name, via, caller, started, error.code.value)
            raise
        except Exception:
            # Whatever went wrong stays in our logs; the caller gets a retryable, typed error.
            log.exception("unexpected failure", extra={"fields": {"tool": tool.name}})
            failure = unavailable()
            _log_call(tool.name, via, caller, started, failure.code.value)
            raise failure from None
        _log_call(tool.name, via, caller, started, "ok")
        return result

    def _handed_over(
        self,
        tool: Tool[Context],
        principal: Principal | None,
        secret: str,
        arguments: dict[str, Any],
    ) -> dict[str, Any]:
        """A retry, made with the secret a call replaced (a rotation of one's own secret), of
        that very call, whose answer was lost: its full result, from the handover its
        completion keeps for HANDOVER_SECONDS. Anything else made with a secret that is not
        its principal's is unauthenticated: a replaced secret opens that one replay, no other
        call, and nothing once the window has passed or the principal has moved on."""
        if principal is None:
            raise unauthenticated()
        try:
            args = parse_arguments(tool, arguments)
        except VigilError:
            raise unauthenticated() from None
        key = getattr(args, tool.idempotency_field, None)
        if key is None:
            raise unauthenticated()
        record = self.store.read_idempotency(principal.namespace, principal.id, tool.name, key)
        now = self.clock.now()
        result = record.handed_over(secret, principal.secret_hash, now) if record else None
        if record is None or result is None:
            raise unauthenticated()
        # The caller holds the replaced secret: it may learn that its arguments differ.
        if fingerprint(tool.name, _fingerprinted(tool, args)) != record.fingerprint:
            raise mismatch()
        return result

    def _run(
        self, tool: Tool[Context], caller: Caller, args: BaseModel, secret: str | None
    ) -> dict[str, Any]:
        pending = None
        key = getattr(args, tool.idempotency_field, None)
        if key is not None:
            pending, replay = claim(
                self.store,
                caller.namespace,
                caller.principal_id,
                tool.name,
                key,
                _fingerprinted(tool, args),
                self.clock.now(),
            )
            if replay is not None:
                ctx = self._context(caller, UnitOfWork(self.store))
                if tool.replay is not None:
                    replay = tool.replay.rebuilt(ctx, replay)
                if tool.resume is not None:
                    tool.resume(ctx, replay)
                return replay
        kept = tool.replay.kept if tool.replay is not None else None
        uow = UnitOfWork(self.store, pending, secret, kept)
        ctx = self._context(caller, uow)
        try:
            result = tool.run(ctx, args)
            uow.finish(result)
        except BaseException:
            if pending is not None:
                # Conditional on our token and on still being pending: if the write did commit
                # before the failure, the completed record stays and a retry replays it. If the
                # release itself fails, the claim's lock lapses and a retry takes it over.
                with contextlib.suppress(VigilError):
                    self.store.release_idempotency(pending)
            raise
        return result.model_dump(mode="json")

    def _context(self, caller: Caller, uow: UnitOfWork) -> Context:
        return Context(
            self.store,
            self.clock,
            caller,
            self.queues,
            self.alarms,
            uow,
            self.quotas,
            self.blobs,
            self.keys,
            self.sender,
        )


def credential(bearer: str | None, agent_key: str | None) -> str:
    """The secret a call is made with: the header's, or the agent_key argument where a tool
    takes one; both given, they must agree."""
    if bearer and agent_key and bearer != agent_key:
        raise unauthenticated()
    secret = bearer or agent_key
    if not secret:
        raise unauthenticated()
    return secret


def _fingerprinted(tool: Tool[Context], args: BaseModel) -> dict[str, Any]:
    """The arguments an idempotency key is bound to."""
    excluded = {*_NOT_FINGERPRINTED, tool.idempotency_field}
    return args.model_dump(mode="json", exclude=excluded)


def parse_arguments(tool: Tool[Context], arguments: dict[str, Any]) -> BaseModel:
    return validated(
        tool.input_model, arguments, "the arguments do not match the tool's input schema"
    )


def _log_call(tool: str, via: Surface, caller: Caller | None, started: float, outcome: str) -> None:
    """The call's log line; for an error (``outcome`` is its code), its metric too. A refusal
    the caller caused or may retry (bad input, a lost race, a quota) is the service working
    as designed, so it is INFO like a success; only ``unavailable``, which the service owes,
    is a WARNING (its cause was logged as an ERROR where it happened)."""
    if outcome != "ok":
        metrics.error(tool, outcome)
    log_event(
        log,
        "tool call",
        logging.WARNING if outcome == ErrorCode.UNAVAILABLE.value else logging.INFO,
        tool=tool,
        via=via,
        outcome=outcome,
        namespace=caller.namespace if caller else None,
        principal_id=caller.principal_id if caller else None,
        duration_ms=round((time.perf_counter() - started) * 1000, 2),
    )
