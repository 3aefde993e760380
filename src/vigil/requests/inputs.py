"""What the request tools take: their inputs, each checked as it comes in, and start_chat's,
whose first message may ask a request."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, WithJsonSchema, model_validator

from vigil.conversations.tools import (
    AttachmentIds,
    Body,
    ConversationId,
    Mentions,
    TargetInput,
    Title,
    check_mentions,
)
from vigil.kit.names import PRINTABLE, normalised
from vigil.kit.principals import id_pattern
from vigil.kit.tooling import Cursor, IdempotencyKey, StrictInput
from vigil.requests.policy import MAX_QUORUM
from vigil.requests.records import (
    ACTION_BOUNDS,
    ANSWER_BOUNDS,
    DEFAULT_EXPIRES_SECONDS,
    MAX_CHOICE,
    MAX_CHOICES,
    MAX_CLAIM_SECONDS,
    MAX_EXPIRES_SECONDS,
    MIN_EXPIRES_SECONDS,
    RESULT_BOUNDS,
    Outcome,
    ReportedState,
    RequestKind,
    RequestState,
)
from vigil.requests.routing import DEFAULT_CLAIM_MINUTES, MAX_PEOPLE, MAX_RULES, Rule
from vigil.requests.standing_input import StandingInput

MAX_TARGETS = 100

RequestId = Annotated[str, Field(pattern=id_pattern("req"))]
ActionDocument = Annotated[
    dict[str, Any],
    AfterValidator(ACTION_BOUNDS.checked_whole),
    WithJsonSchema(
        {
            **ACTION_BOUNDS.json_schema(),
            "description": "The exact action, a JSON object "
            f"({ACTION_BOUNDS.describe()}), compared canonically.",
        }
    ),
]
Answer = Annotated[
    Any,
    AfterValidator(ANSWER_BOUNDS.checked_value),
    WithJsonSchema(
        {
            **ANSWER_BOUNDS.value_schema(),
            "description": f"Any JSON value ({ANSWER_BOUNDS.describe()}); with choices, one "
            "of them exactly.",
        }
    ),
]
ResultValue = Annotated[
    Any,
    AfterValidator(RESULT_BOUNDS.checked_value),
    WithJsonSchema(
        {
            **RESULT_BOUNDS.value_schema(),
            "description": f"What you observed, any JSON value ({RESULT_BOUNDS.describe()}).",
        }
    ),
]
SharedKey = Annotated[
    str,
    Field(
        min_length=1,
        max_length=128,
        pattern=PRINTABLE,
        description="Reuse the last answer to this question under this key.",
    ),
    normalised(128),
]
Version = Annotated[int, Field(ge=1, description="The request's version; a stale one conflicts.")]
Choices = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=MAX_CHOICE)]],
    Field(
        min_length=1,
        max_length=MAX_CHOICES,
        description="The answers a reply may give, each once.",
    ),
]


class PolicyInput(StrictInput):
    quorum: Annotated[int, Field(ge=1, le=MAX_QUORUM)] | Literal["all"] = Field(
        default=1, description="Approvals needed, or all."
    )
    denials: int = Field(default=1, ge=1, le=MAX_QUORUM, description="Denials that deny.")
    deny_on_timeout: bool = Field(default=False, description="Deny at the deadline.")
    reason_on_deny: bool = Field(default=False, description="A denial's answer must say why.")
    escalate_after_seconds: int | None = Field(
        default=None,
        ge=MIN_EXPIRES_SECONDS,
        le=MAX_EXPIRES_SECONDS,
        description="Still open then: tell escalate_to.",
    )
    escalate_to: str | None = Field(
        default=None, pattern=id_pattern("chn"), description="A channel's id."
    )


class AskInput(StrictInput):
    action: ActionDocument | None = None
    attachment_ids: AttachmentIds | None = None
    blocking: bool = Field(
        default=False,
        description="You cannot go on until the one agent deciding this answers.",
    )
    body: Body = ""
    choices: Choices | None = None
    conversation_id: ConversationId | None = Field(
        default=None, description="An existing conversation of yours to ask in; or target."
    )
    editable: Editable | None = None
    expires_in_seconds: int = Field(
        default=DEFAULT_EXPIRES_SECONDS,
        ge=MIN_EXPIRES_SECONDS,
        le=MAX_EXPIRES_SECONDS,
        description="Seconds until it expires.",
    )
    idempotency_key: IdempotencyKey | None = None
    kind: RequestKind = Field(
        default="question",
        description="question (answered), approval (approved or denied; the default with "
        "action) or task.",
    )
    mentions: Mentions | None = None
    policy: PolicyInput | None = Field(
        default=None, description="How it is decided, and escalated."
    )
    reuse_direct: bool = Field(
        default=False,
        description="With target: ask in your one direct conversation with it.",
    )
    shared_key: SharedKey | None = None
    target: TargetInput | None = Field(
        default=None, description="Whom to ask, in a new direct conversation; or conversation_id."
    )
    title: Title | None = Field(
        default=None, description="With target: the new conversation's label."
    )

    @model_validator(mode="after")
    def _consistent(self) -> AskInput:
        if (self.target is None) == (self.conversation_id is None):
            raise ValueError("give either target or conversation_id, exactly one of the two")
        if self.conversation_id is not None and (self.title is not None or self.reuse_direct):
            raise ValueError("title and reuse_direct go with a target, not a conversation_id")
        if self.action is not None and "kind" not in self.model_fields_set:
            self.kind = "approval"  # an action is bound by an approval, and only by one
        if self.action is not None and self.kind != "approval":
            raise ValueError("action goes with kind approval")
        if self.editable is not None and self.action is None:
            raise ValueError("editable names members of action: give action too")
        check_mentions(self.body, self.mentions)
        return self


class GetRequestInput(StrictInput):
    id: RequestId


# An approval's changes to its action: members the asker made editable, given new values.
def _few_members(edits: dict[str, Any]) -> dict[str, Any]:
    if len(edits) > ACTION_BOUNDS.max_keys:
        raise ValueError(f"at most {ACTION_BOUNDS.max_keys} members")
    return edits


Edits = Annotated[
    dict[str, Any],
    AfterValidator(_few_members),
    WithJsonSchema(
        {
            "type": "object",
            "maxProperties": ACTION_BOUNDS.max_keys,
            # Any member's name, any JSON value: the edited action is checked whole.
            "additionalProperties": True,
            "description": "With approved: new values for members the asker made editable.",
        }
    ),
]
# A request keeps its editable members' names, and each edit their values before and after:
# few and short, so that a request's item stays within DynamoDB's 400 KB.
MAX_EDITABLE = 20
EDITABLE_NAME = 100
Editable = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=EDITABLE_NAME)]],
    Field(
        min_length=1,
        max_length=MAX_EDITABLE,
        description="Members of action an approver may change before approving.",
    ),
]


class ReplyInput(StrictInput):
    answer: Answer = None
    edits: Edits | None = None
    id: RequestId
    outcome: Outcome = Field(
        description="answered; approved or denied; completed, failed or rejected (a task)."
    )
    standing: StandingInput | None = Field(
        default=None, description="People, with approved: approve the same again for a while."
    )
    version: Version


class RequestStatusInput(StrictInput):
    blocking: bool | None = Field(default=None, description="Only blocking ones, or only not.")
    cursor: Cursor | None = Field(default=None, description="The next_cursor of the previous page.")
    everyone: bool | None = Field(default=None, description="People: all of the namespace's.")
    state: RequestState | None = Field(default=None, description="Only requests in this state.")
    waiting: bool | None = Field(default=None, description="Only those awaiting your decision.")


class WithdrawRequestInput(StrictInput):
    id: RequestId


class SetBlockingInput(StrictInput):
    blocking: bool = Field(
        description="true: you cannot go on until its one agent answers; false: clear it."
    )
    id: RequestId


class ReplaceRequestInput(StrictInput):
    body: Body
    id: RequestId
    idempotency_key: IdempotencyKey
    mentions: Mentions | None = None
    version: Version

    @model_validator(mode="after")
    def _spans(self) -> ReplaceRequestInput:
        check_mentions(self.body, self.mentions)
        return self


class RedeemApprovalInput(StrictInput):
    action: ActionDocument
    id: RequestId


class ReportExecutionInput(StrictInput):
    id: Annotated[
        str,
        Field(
            min_length=1,
            max_length=64,
            description="The execution's id (exe_…), as redeem_approval returned it.",
        ),
    ]
    result: ResultValue = None
    state: ReportedState = Field(description="started, then succeeded, failed or unknown (final).")


class StartChatInput(StrictInput):
    approval: bool = Field(
        default=False,
        description="The first message asks for an approval without an action.",
    )
    attachment_ids: AttachmentIds | None = None
    body: Body
    choices: Choices | None = None
    idempotency_key: IdempotencyKey | None = None
    mentions: Mentions | None = None
    targets: list[TargetInput] = Field(
        max_length=MAX_TARGETS,
        description=f"Who shares the chat with you, up to {MAX_TARGETS}, each once.",
    )
    title: Title | None = None

    @model_validator(mode="after")
    def _spans(self) -> StartChatInput:
        check_mentions(self.body, self.mentions)
        return self


class ListStandingInput(StrictInput):
    cursor: Cursor | None = Field(default=None, description="The next_cursor of the previous page.")
    everyone: bool | None = Field(default=None, description="Operators: everyone's.")


class RevokeStandingInput(StrictInput):
    id: Annotated[str, Field(pattern=id_pattern("sta"))]


class ClaimRequestInput(StrictInput):
    id: RequestId
    minutes: int = Field(default=30, ge=1, le=MAX_CLAIM_SECONDS // 60)
    release: bool = Field(default=False, description="Put it back instead.")


class RuleInput(StrictInput):
    asker: Annotated[str, Field(pattern=id_pattern("agt"))] | None = None
    kind: RequestKind | None = None
    op: Annotated[str, Field(min_length=1, max_length=100)] | None = Field(
        default=None, description="The action's op member."
    )
    to: list[Annotated[str, Field(pattern=id_pattern("per"))]] = Field(
        min_length=1, max_length=MAX_PEOPLE
    )
    least_recent: bool = Field(default=False, description="Else the first of to.")
    minutes: int = Field(default=DEFAULT_CLAIM_MINUTES, ge=1, le=MAX_CLAIM_SECONDS // 60)

    def rule(self) -> Rule:
        return Rule(**self.model_dump())


class RoutingRulesInput(StrictInput):
    rules: list[RuleInput] | None = Field(default=None, max_length=MAX_RULES)
    version: int | None = Field(default=None, ge=0, description="With rules: the current one.")

    @model_validator(mode="after")
    def _together(self) -> RoutingRulesInput:
        if (self.rules is None) != (self.version is None):
            raise ValueError("rules and version go together")
        return self
