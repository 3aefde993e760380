"""What the request tools read of a call, the requests' use cases on it, and what an MCP task
reads and does to its asker's request (vigil.transports.tasks), which loads this module and
not the tools'."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from vigil.alarms.timers import Alarms
from vigil.attachments.blobs import Blobs
from vigil.audit.store import AuditStore
from vigil.identity.calls import Call
from vigil.kit.publish import Publish
from vigil.mailboxes.queues import MailboxQueues
from vigil.quotas.records import Quotas
from vigil.requests.records import Request
from vigil.requests.service import Requests
from vigil.requests.store import EscalationChannels, RequestPorts
from vigil.requests.views import RequestView, view


class RequestContext(Call[RequestPorts], Protocol):
    """What the request tools read of a call."""

    @property
    def queues(self) -> MailboxQueues: ...
    @property
    def alarms(self) -> Alarms: ...
    @property
    def blobs(self) -> Blobs: ...
    @property
    def quotas(self) -> Quotas: ...
    @property
    def publish(self) -> Publish: ...
    @property
    def audit_trail(self) -> AuditStore: ...
    @property
    def escalation_channels(self) -> EscalationChannels: ...


def requests_of(ctx: RequestContext) -> Requests:
    return Requests(
        ctx.store,
        queues=ctx.queues,
        clock=ctx.clock,
        alarms=ctx.alarms,
        publish=ctx.publish,
        audit=ctx.audit_trail,
        quotas=ctx.quotas,
    )


def presenter(ctx: RequestContext) -> Callable[[Request], RequestView]:
    return lambda request: view(request, ctx.clock.now())


def own_request(ctx: RequestContext, request_id: str) -> RequestView:
    """The caller's own request as it stands; not_found for anyone else's."""
    return view(requests_of(ctx).own(ctx.caller, request_id), ctx.clock.now())


def withdraw_request(ctx: RequestContext, request_id: str) -> RequestView:
    """The caller's own open request, withdrawn, and the withdrawal audited."""
    return requests_of(ctx).withdraw(ctx.uow, ctx.caller, request_id, presenter(ctx))
