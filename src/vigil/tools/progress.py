"""Progress: ``report_progress`` records what a worker says about its work; ``get_progress``
and ``resume_packet`` show it to whoever watches or takes over.

A report is the reporter's data. It is bounded, stored as given with the principal whose
credential sent it, and never interpreted. Only the latest report is kept: per reporter, and
per scope when the report names one. ``ok`` is returned only once the write has succeeded.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, WithJsonSchema

from vigil.clock import to_ms
from vigil.domain.identity import PRINCIPAL_ID_PATTERN
from vigil.domain.progress import PROGRESS_BOUNDS, ProgressReport
from vigil.errors import ErrorCode, VigilError, conflict, not_found
from vigil.store import ConditionFailed
from vigil.tools.common import Context, IdempotencyKey, Output, Scope, StrictInput
from vigil.tools.switches import ProgressSummary

_ATTEMPTS = 3
PROGRESS_LIMITS = (
    f"at most {PROGRESS_BOUNDS.max_bytes // 1024} KiB as compact UTF-8 JSON, "
    f"{PROGRESS_BOUNDS.max_keys} keys per object, {PROGRESS_BOUNDS.max_depth} levels of "
    f"nesting, strings of up to {PROGRESS_BOUNDS.max_string} characters"
)
ProgressDocument = Annotated[
    dict[str, Any],
    AfterValidator(PROGRESS_BOUNDS.checked),
    WithJsonSchema(PROGRESS_BOUNDS.json_schema()),
]


class ReportProgressInput(StrictInput):
    progress: ProgressDocument = Field(
        default_factory=dict,
        description=(
            "What you want watchers and a successor to know about your work, as a JSON object "
            f"of your own design: {PROGRESS_LIMITS}. Omitted: an empty object."
        ),
    )
    scope: Scope | None = Field(
        default=None,
        description=(
            "The dead-man switch scope the work belongs to: resume_packet for that scope "
            "then shows this report."
        ),
    )
    idempotency_key: IdempotencyKey | None = None


class ReportProgressResult(Output):
    ok: Literal[True] = Field(description="Always true: the report is stored.")
    recorded_at: datetime = Field(description="The time stored with the report.")


class ProgressView(ProgressSummary):
    scope: str | None = Field(description="The scope the report named, if any.")

    @classmethod
    def of(cls, report: ProgressReport) -> ProgressView:
        return cls(
            progress=report.progress,
            reported_by=report.reported_by,
            reported_at=report.reported_at,
            scope=report.scope,
        )


class GetProgressInput(StrictInput):
    principal_id: str | None = Field(
        default=None,
        pattern=PRINCIPAL_ID_PATTERN,
        description="Whose latest report to read; your own if omitted.",
    )


class PrincipalProgress(Output):
    principal_id: str
    last_progress: ProgressView | None = Field(
        description="The principal's latest report; null if it has reported none."
    )


def report_progress(ctx: Context, args: ReportProgressInput) -> ReportProgressResult:
    if PROGRESS_BOUNDS.size(args.progress) > PROGRESS_BOUNDS.max_bytes:
        raise VigilError(
            ErrorCode.LIMIT_EXCEEDED,
            f"the progress is larger than {PROGRESS_BOUNDS.max_bytes} bytes as compact UTF-8 JSON",
            limit_bytes=PROGRESS_BOUNDS.max_bytes,
        )
    for _ in range(_ATTEMPTS):
        # The time is taken afresh on each attempt: a write refused because a later report
        # landed first (another instance, another clock) is retried with a later time.
        now = to_ms(ctx.clock.now())
        report = ProgressReport(
            namespace=ctx.caller.namespace,
            reported_by=ctx.caller.principal_id,
            scope=args.scope,
            progress=args.progress,
            reported_at=now,
        )
        result = ReportProgressResult(ok=True, recorded_at=now)
        try:
            ctx.store.record_progress(report, completes=ctx.completion(result))
        except ConditionFailed:
            continue
        return result
    raise conflict("later progress kept arriving while this report was written; retry")


def get_progress(ctx: Context, args: GetProgressInput) -> PrincipalProgress:
    namespace = ctx.caller.namespace
    principal_id = args.principal_id or ctx.caller.principal_id
    report = ctx.store.latest_progress(namespace, principal_id)
    # Only an authenticated principal can have reported, so the directory is read only when
    # there is no report: to tell "nothing reported yet" from "no such principal".
    if (
        report is None
        and principal_id != ctx.caller.principal_id
        and ctx.store.get_principal(namespace, principal_id) is None
    ):
        raise not_found("principal")
    return PrincipalProgress(
        principal_id=principal_id,
        last_progress=ProgressView.of(report) if report is not None else None,
    )
