"""What a request tells people of: it opened, expires soon, was answered or expired."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AwareDatetime, BeforeValidator, Field

from vigil.kit.events import EventData, cut
from vigil.requests.records import Outcome, Request, RequestKind, RequestState

# A request's body as an event carries it: enough to decide from a phone, small enough for
# every channel's limits.
MAX_BODY = 2000

Body = Annotated[
    str,
    BeforeValidator(lambda text: cut(text, MAX_BODY) if isinstance(text, str) else text),
    Field(max_length=MAX_BODY, description=f"The request's text, cut to {MAX_BODY} with '…'."),
]


class RequestData(EventData):
    """A question, an approval or a task put to people and agents: every request event's data."""

    request_id: str
    kind: RequestKind
    state: RequestState
    requester: str = Field(description="Principal id of who asked.")
    audience: list[str] = Field(description="Principal ids of who may decide it.")
    body: Body
    choices: list[str] | None
    action: dict[str, Any] | None = Field(
        description="The exact action an approval binds, as it will be redeemed; else null."
    )
    asked_action: dict[str, Any] | None = Field(
        default=None,
        description="The action as asked, if an approver edited it before approving: action "
        "is the edited one.",
    )
    expires_at: AwareDatetime
    outcome: Outcome | None = Field(description="How it was decided; null unless answered.")
    answered_by: str | None = Field(description="Principal id of who decided; null unless so.")

    @classmethod
    def of(cls, request: Request) -> RequestData:
        outcome: Outcome | None = None
        answered_by: str | None = None
        if request.response is not None and request.response.outcome != "expired":
            outcome, answered_by = request.response.outcome, request.response.by
        return cls(
            request_id=request.id,
            kind=request.kind,
            state=request.state,
            requester=request.requester,
            audience=request.audience,
            body=request.body,
            choices=request.choices,
            action=request.action,
            asked_action=request.asked_action,
            expires_at=request.expires_at,
            outcome=outcome,
            answered_by=answered_by,
        )

    def identity(self) -> tuple[str, ...]:
        return (self.request_id,)

    def readers(self) -> tuple[str, ...]:
        # Who asked may read the whole request (get_request), decided or not.
        return (self.requester,)
