"""Request tools: ``ask``, ``get_request``, ``reply``, ``request_status``, ``set_blocking``,
``replace_request``, ``redeem_approval`` and ``report_execution``; ``start_chat``, whose first
message may ask a request. What they read of a call is in vigil.requests.calls, what they take
in vigil.requests.inputs, what they return in vigil.requests.views; the rules are in
vigil.requests.records, the use cases in vigil.requests.service and vigil.requests.asking."""

from __future__ import annotations

from typing import Any

from vigil.conversations.service import Post
from vigil.conversations.tools import (
    SendResult,
    conversations,
    mentions_of,
    resume_delivery,
    sent,
)
from vigil.kit.cursor import cursor_position, encode_cursor
from vigil.kit.tooling import OPERATORS, PEOPLE, Replay, Tool
from vigil.requests import calls
from vigil.requests.asking import Ask, Asking, Replace
from vigil.requests.calls import RequestContext, presenter, requests_of
from vigil.requests.inputs import (
    AskInput,
    ClaimRequestInput,
    GetRequestInput,
    ListStandingInput,
    RedeemApprovalInput,
    ReplaceRequestInput,
    ReplyInput,
    ReportExecutionInput,
    RequestStatusInput,
    RevokeStandingInput,
    RoutingRulesInput,
    SetBlockingInput,
    StartChatInput,
    WithdrawRequestInput,
)
from vigil.requests.policy import Terms
from vigil.requests.records import OUTCOMES, Request
from vigil.requests.service import Reply, StatusQuery
from vigil.requests.views import (
    Claimed,
    ExecutionView,
    ReplaceResult,
    RequestDetail,
    RequestStatusResult,
    RequestView,
    RoutingView,
    StandingList,
    StandingRevoked,
    Withdrawn,
    claimed,
    detail,
    execution_view,
    routing_view,
    standing_view,
    view,
)


def _asking(ctx: RequestContext) -> Asking:
    return Asking(
        requests=requests_of(ctx),
        conversations=conversations(ctx),
        channels=ctx.escalation_channels,
    )


# What the completion of ask and replace_request leaves out of a request: every part that
# never changes once it is asked (its body, up to 32 KiB, its action, choices and audience
# among them), which a replay reads back from the request. What a later change moves (state,
# version, blocking, response, replaced_by, history) is kept as it was then.
_FIXED = (
    "kind",
    "requester",
    "audience",
    "conversation_id",
    "message_id",
    "body",
    "choices",
    "action",
    "asked_at",
    "expires_at",
    "replaces",
)


def _view_kept(view: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in view.items() if name not in _FIXED}


def _view_rebuilt(ctx: RequestContext, kept: dict[str, Any], stored: Request) -> dict[str, Any]:
    fixed = view(stored, ctx.clock.now()).model_dump(mode="json", include=set(_FIXED))
    return RequestView.model_validate({**kept, **fixed}).model_dump(mode="json")


def _views_rebuilt(ctx: RequestContext, views: dict[str, Any]) -> dict[str, Any]:
    """Each of ``views``, kept views by name, rebuilt from its request (one batch read)."""
    ids = [view["id"] for view in views.values()]
    stored = {r.id: r for r in ctx.store.get_requests(ctx.caller.namespace, ids)}
    return {name: _view_rebuilt(ctx, view, stored[view["id"]]) for name, view in views.items()}


def _ask_rebuilt(ctx: RequestContext, kept: dict[str, Any]) -> dict[str, Any]:
    rebuilt: dict[str, Any] = _views_rebuilt(ctx, {"asked": kept})["asked"]
    return rebuilt


# -- ask ------------------------------------------------------------------------------------
def ask(ctx: RequestContext, args: AskInput) -> RequestView:
    post = Post(
        caller=ctx.caller,
        body=args.body,
        mentions=mentions_of(args.mentions),
        attachment_ids=args.attachment_ids or [],
        conversation_id=args.conversation_id,
        target=None if args.target is None else (args.target.id, args.target.kind),
        title=args.title,
        reuse_direct=args.reuse_direct,
    )
    command = Ask(
        post=post,
        kind=args.kind,
        choices=args.choices,
        action=args.action,
        blocking=args.blocking,
        lifetime_seconds=args.expires_in_seconds,
        shared_key=args.shared_key,
        policy=Terms() if args.policy is None else Terms(**args.policy.model_dump()),
        editable=args.editable,
    )
    return _asking(ctx).ask(
        ctx.uow, command, lambda request, posting: view(request, ctx.clock.now())
    )


def resume_ask(ctx: RequestContext, result: dict[str, Any]) -> None:
    """A replay of ask first delivers what its message still owes, and the response of a
    request answered at once (a shared answer, standing approvals), if it may not have gone."""
    asked = RequestView.model_validate(result)
    conversations(ctx).finish(ctx.caller.namespace, asked.conversation_id, asked.message_id)
    requests_of(ctx).finish_reply(ctx.caller.namespace, asked.id)


# -- start_chat -----------------------------------------------------------------------------
def start_chat(ctx: RequestContext, args: StartChatInput) -> SendResult:
    post = Post(
        caller=ctx.caller,
        body=args.body,
        mentions=mentions_of(args.mentions),
        attachment_ids=args.attachment_ids or [],
        chat_with=[(t.id, t.kind) for t in args.targets],
        title=args.title,
    )
    if args.approval or args.choices is not None:
        # The first message asks a request of the chat's other participants.
        command = Ask(
            post=post,
            kind="approval" if args.approval else "question",
            choices=args.choices,
        )
        return _asking(ctx).ask(ctx.uow, command, lambda request, posting: sent(posting))
    return conversations(ctx).send(ctx.uow, post, sent)


# -- get_request ----------------------------------------------------------------------------
def get_request(ctx: RequestContext, args: GetRequestInput) -> RequestDetail:
    requests = requests_of(ctx)
    request = requests.watched(ctx.caller, args.id)
    return detail(request, requests.execution_of(request), ctx.clock.now())


# -- reply ----------------------------------------------------------------------------------
def reply(ctx: RequestContext, args: ReplyInput) -> RequestView:
    command = Reply(
        caller=ctx.caller,
        request_id=args.id,
        version=args.version,
        outcome=args.outcome,
        answer=args.answer,
        edits=args.edits,
        standing=None if args.standing is None else args.standing.terms(),
    )
    return requests_of(ctx).reply(ctx.uow, command, presenter(ctx))


def resume_reply(ctx: RequestContext, result: dict[str, Any]) -> None:
    """A replay of reply first queues the requester's response, if it may not have gone."""
    requests_of(ctx).finish_reply(ctx.caller.namespace, RequestView.model_validate(result).id)


# -- request_status -------------------------------------------------------------------------
def request_status(ctx: RequestContext, args: RequestStatusInput) -> RequestStatusResult:
    status = StatusQuery(args.state, args.blocking, bool(args.everyone), bool(args.waiting))
    query = {"s": args.state, "b": args.blocking, "e": status.everyone, "w": status.waiting}
    after = None if args.cursor is None else cursor_position(args.cursor, "requests", str, **query)
    found, last = requests_of(ctx).status(ctx.caller, status, after)
    now = ctx.clock.now()
    return RequestStatusResult(
        requests=[view(r, now) for r in found],
        next_cursor=None if last is None else encode_cursor("requests", a=last, **query),
    )


# -- set_blocking ---------------------------------------------------------------------------
def set_blocking(ctx: RequestContext, args: SetBlockingInput) -> RequestView:
    return requests_of(ctx).set_blocking(
        ctx.uow, ctx.caller, args.id, args.blocking, presenter(ctx)
    )


# -- withdraw_request -----------------------------------------------------------------------
def withdraw_request(ctx: RequestContext, args: WithdrawRequestInput) -> Withdrawn:
    withdrawn = calls.withdraw_request(ctx, args.id)
    return Withdrawn(id=withdrawn.id, state=withdrawn.state, version=withdrawn.version)


# -- replace_request ------------------------------------------------------------------------
def replace_request(ctx: RequestContext, args: ReplaceRequestInput) -> ReplaceResult:
    now = ctx.clock.now()
    command = Replace(
        caller=ctx.caller,
        request_id=args.id,
        version=args.version,
        body=args.body,
        mentions=mentions_of(args.mentions),
    )
    return _asking(ctx).replace(
        ctx.uow,
        command,
        lambda previous, replacement: ReplaceResult(
            previous=view(previous, now), replacement=view(replacement, now)
        ),
    )


def _replace_kept(result: dict[str, Any]) -> dict[str, Any]:
    return {name: _view_kept(view) for name, view in result.items()}


def resume_replace(ctx: RequestContext, result: dict[str, Any]) -> None:
    """A replay of replace_request first delivers what its message still owes."""
    replacement = ReplaceResult.model_validate(result).replacement
    conversations(ctx).finish(
        ctx.caller.namespace, replacement.conversation_id, replacement.message_id
    )


# -- claims and routing ---------------------------------------------------------------------
def claim_request(ctx: RequestContext, args: ClaimRequestInput) -> Claimed:
    seconds = None if args.release else args.minutes * 60
    now = ctx.clock.now()
    return requests_of(ctx).claim(
        ctx.uow, ctx.caller, args.id, seconds, lambda request: claimed(request, now)
    )


def routing_rules(ctx: RequestContext, args: RoutingRulesInput) -> RoutingView:
    requests = requests_of(ctx)
    if args.rules is None or args.version is None:
        return routing_view(requests.routing(ctx.caller))
    rules = [rule.rule() for rule in args.rules]
    return requests.set_routing(ctx.uow, ctx.caller, rules, args.version, routing_view)


# -- standing approvals ---------------------------------------------------------------------
def list_standing_approvals(ctx: RequestContext, args: ListStandingInput) -> StandingList:
    everyone = bool(args.everyone)
    after = (
        None if args.cursor is None else cursor_position(args.cursor, "standing", str, e=everyone)
    )
    found, last = requests_of(ctx).standing(ctx.caller, everyone, after)
    now = ctx.clock.now()
    return StandingList(
        standing=[standing_view(s, now) for s in found],
        next_cursor=None if last is None else encode_cursor("standing", a=last, e=everyone),
    )


def revoke_standing_approval(ctx: RequestContext, args: RevokeStandingInput) -> StandingRevoked:
    now = ctx.clock.now()
    return requests_of(ctx).revoke_standing(
        ctx.uow,
        ctx.caller,
        args.id,
        lambda standing: StandingRevoked(id=standing.id, state=standing.state_at(now)),
    )


# -- executions -----------------------------------------------------------------------------
def redeem_approval(ctx: RequestContext, args: RedeemApprovalInput) -> ExecutionView:
    return requests_of(ctx).redeem(ctx.uow, ctx.caller, args.id, args.action, execution_view)


def report_execution(ctx: RequestContext, args: ReportExecutionInput) -> ExecutionView:
    return requests_of(ctx).report(
        ctx.uow, ctx.caller, args.id, args.state, args.result, execution_view
    )


_KINDS = "; ".join(f"{kind}: {', '.join(outcomes)}" for kind, outcomes in OUTCOMES.items())

TOOLS: tuple[Tool[RequestContext], ...] = (
    Tool(
        name="ask",
        title="Ask a question, an approval or a task",
        description=(
            "Ask a conversation's other participants (conversation_id) or someone new "
            "(target) for a typed reply: a question, an approval (which may bind an exact "
            "action for redeem_approval) or a task. Rules: docs/TOOLS.md#ask."
        ),
        input_model=AskInput,
        output_model=RequestView,
        run=ask,
        resume=resume_ask,
        replay=Replay(_view_kept, _ask_rebuilt),
    ),
    Tool(
        name="request_status",
        title="List requests",
        description=(
            "The requests you asked and those you decide, oldest first, filtered by state and "
            "blocking if given."
        ),
        input_model=RequestStatusInput,
        output_model=RequestStatusResult,
        run=request_status,
        read_only=True,
    ),
    Tool(
        name="get_request",
        title="Read a request",
        description=(
            "A request you asked or decide: its state, version, response and history, and "
            "once redeemed its execution."
        ),
        input_model=GetRequestInput,
        output_model=RequestDetail,
        run=get_request,
        read_only=True,
    ),
    Tool(
        name="reply",
        title="Resolve a request",
        description=(
            "Resolve an open request you decide, at its current version, with a typed outcome; "
            "the first final outcome stands."
        ),
        input_model=ReplyInput,
        output_model=RequestView,
        run=reply,
        resume=resume_reply,
    ),
    Tool(
        name="list_standing_approvals",
        title="List standing approvals",
        description="Your live standing approvals (operators: everyone's, with everyone).",
        input_model=ListStandingInput,
        output_model=StandingList,
        run=list_standing_approvals,
        roles=OPERATORS,
        kinds=PEOPLE,
        read_only=True,
    ),
    Tool(
        name="revoke_standing_approval",
        title="Revoke a standing approval",
        description=(
            "Revoke a standing approval you granted (operators: any); no ask uses it again."
        ),
        input_model=RevokeStandingInput,
        output_model=StandingRevoked,
        run=revoke_standing_approval,
        roles=OPERATORS,
        kinds=PEOPLE,
    ),
    Tool(
        name="claim_request",
        title="Claim a request",
        description=(
            "Take an open request you decide in hand for a while (others see it; it leaves "
            "their waiting queue), or release it."
        ),
        input_model=ClaimRequestInput,
        output_model=Claimed,
        run=claim_request,
        roles=OPERATORS,
        kinds=PEOPLE,
    ),
    Tool(
        name="routing_rules",
        title="Read or set routing rules",
        description=(
            "Rules assigning new requests (by asker, kind, op) to the first person of their "
            "audience in to, or the least recent; with rules and version, replace them."
        ),
        input_model=RoutingRulesInput,
        output_model=RoutingView,
        run=routing_rules,
        roles=OPERATORS,
    ),
    Tool(
        name="set_blocking",
        title="Declare a blocking dependency",
        description=(
            "Declare (or clear) that you cannot go on until the one agent deciding your open "
            "request answers; refused if it would close a cycle of waiting agents."
        ),
        input_model=SetBlockingInput,
        output_model=RequestView,
        run=set_blocking,
    ),
    Tool(
        name="withdraw_request",
        title="Withdraw a request",
        description="Withdraw your own open request: nobody decides it any more.",
        input_model=WithdrawRequestInput,
        output_model=Withdrawn,
        run=withdraw_request,
    ),
    Tool(
        name="replace_request",
        title="Replace a request",
        description=(
            "Edit and resend your own open request: it becomes replaced, and a new request "
            "with the new body keeps its audience and settings."
        ),
        input_model=ReplaceRequestInput,
        output_model=ReplaceResult,
        run=replace_request,
        resume=resume_replace,
        replay=Replay(_replace_kept, _views_rebuilt),
    ),
    Tool(
        name="redeem_approval",
        title="Redeem an approval",
        description=(
            "Before acting on an approval, check it against the exact action you are about to "
            "take and get its one execution intent; refused unless approved for exactly that "
            "action. It executes nothing. Then report_execution."
        ),
        input_model=RedeemApprovalInput,
        output_model=ExecutionView,
        run=redeem_approval,
    ),
    Tool(
        name="report_execution",
        title="Report an execution",
        description=(
            "Record what you observed executing a redeemed approval: started, then succeeded, "
            "failed or unknown, with an optional result. A report is your word, not proof."
        ),
        input_model=ReportExecutionInput,
        output_model=ExecutionView,
        run=report_execution,
    ),
    Tool(
        name="start_chat",
        title="Start a shared chat",
        description=(
            "Start a shared chat that you manage with a first message to its targets; with "
            "approval or choices, that message asks a request of them."
        ),
        input_model=StartChatInput,
        output_model=SendResult,
        run=start_chat,
        resume=resume_delivery,
    ),
)
