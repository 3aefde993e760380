"""The audit trail: what operators changed with their powers, what the deployer changed with
AWS credentials, and every vote and decision on a request, with the surface it came from. Each
event is written in the same transaction as the change it records, so an event is never missing
for a change that landed, nor recorded for one that did not."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from vigil.clock import to_ms
from vigil.kit.principals import Surface, new_id
from vigil.kit.records import Record

# register, rotate_secret and revoke_principal of another principal, create_mailbox for another
# agent, disarm of another's switch, pause and resume of switches (the target: the pause's
# scope prefix), every change to a channel and every test sent to one are operators' powers;
# bootstrap and rotate_operator are the deployer's (the `vigil` command, with AWS credentials).
# withdraw_request is no power but is recorded too: a request's audience stops being asked.
# Every vote and decision on a request (reply) is audited too, with the surface it came from,
# and every account linked to a person (link_account: a Slack user or an address that then
# decides as them). An operator who sends a namespace's dead-lettered timers back from the
# console is recorded too (redrive: the target, the dead-letter queue). Every OAuth grant a
# person or agent gives a client, and its end, are recorded (grant_access, revoke_grant; a
# grant that the server ended, a refresh token used twice, has no actor). A person's standing
# approval is recorded when granted and revoked (grant_standing, revoke_standing), and each vote
# it casts as the person's reply, via "standing". A person's claim of a request and its release
# are recorded (claim, release), every change of a namespace's routing rules (route), and each
# request a rule assigned (assign, with no actor: the rules did).
AuditAction = Literal[
    "register",
    "rotate_secret",
    "revoke_principal",
    "disarm",
    "create_mailbox",
    "pause",
    "resume",
    "bootstrap",
    "rotate_operator",
    "create_channel",
    "rotate_channel_secret",
    "disable_channel",
    "enable_channel",
    "delete_channel",
    "replay_delivery",
    "test_channel",
    "withdraw_request",
    "reply",
    "link_account",
    "unlink_account",
    "redrive",
    "grant_access",
    "revoke_grant",
    "grant_standing",
    "revoke_standing",
    "claim",
    "release",
    "route",
    "assign",
]
TargetKind = Literal[
    "principal",
    "switch",
    "mailbox",
    "channel",
    "pause",
    "request",
    "account",
    "queue",
    "grant",
    "standing",
    "routing",
]


class AuditEvent(Record):
    """One change, bounded in size: every field is an id, a name from a closed list, a scope
    (at most 200 characters) or an address (at most 100)."""

    namespace: str
    id: str
    at: datetime
    actor: str | None  # the operator's (or the voter's) principal id; None for the deployer
    action: AuditAction
    target_kind: TargetKind
    target: str = Field(max_length=200)
    # The target's version before and after the change; None where it did not exist before
    # or does not exist after (a deleted channel), or for a mailbox, which is created once and
    # never changed, so has no version.
    before_version: int | None
    after_version: int | None
    via: Surface | None = None  # where a reply came from; None for the other actions

    @classmethod
    def of(
        cls,
        namespace: str,
        actor: str | None,
        action: AuditAction,
        target_kind: TargetKind,
        target: str,
        before_version: int | None,
        after_version: int | None,
        now: datetime,
        via: Surface | None = None,
    ) -> AuditEvent:
        return cls(
            namespace=namespace,
            id=new_id("aud"),
            at=to_ms(now),
            actor=actor,
            action=action,
            target_kind=target_kind,
            target=target,
            before_version=before_version,
            after_version=after_version,
            via=via,
        )

    @property
    def position(self) -> str:
        """Where the event sorts in its namespace's trail: by time (epoch milliseconds), then
        by id among events of the same millisecond."""
        return f"{int(self.at.timestamp() * 1000):015d}#{self.id}"
