"""Channels' use cases: an operator creates, lists, rotates, disables, enables and deletes the
channels of its namespace, and a person or an operator acknowledges an alert.

A webhook's signing secrets and a Slack webhook's URL are kept sealed (``channel_secrets``). A
new signing secret is shown once, in the result of the call that made it; the result its
idempotency completion keeps does not hold it, so a replay shows it no more.
Every change is an operator's power, audited in the same commit; a namespace holds at most
MAX_CHANNELS channels, counted in that commit too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

from pydantic import BaseModel

from vigil.alarms.timers import Alarms
from vigil.audit.records import AuditAction, AuditEvent
from vigil.clock import to_ms
from vigil.errors import (
    ErrorCode,
    VigilError,
    conflict,
    contended,
    forbidden,
    invalid,
    not_found,
)
from vigil.identity.records import Caller
from vigil.kit.keys import Keys
from vigil.kit.principals import kind_of, new_id
from vigil.kit.retry import R
from vigil.kit.uow import ConditionFailed, UnitOfWork, Write
from vigil.notifications.channel_secrets import seal_part
from vigil.notifications.records import (
    MAX_CHANNELS,
    Acknowledgement,
    Channel,
    ChannelKind,
    ChannelState,
    Notification,
    Rule,
)
from vigil.notifications.store import ChannelPorts
from vigil.notifications.webhooks import new_secret


def _operator(caller: Caller) -> None:
    if not caller.is_operator:
        raise forbidden("only an operator may manage channels")


def _quota_reached() -> VigilError:
    return VigilError(
        ErrorCode.LIMIT_EXCEEDED,
        f"at most {MAX_CHANNELS} channels in the namespace: the quota is reached",
        quota="channels",
        limit=MAX_CHANNELS,
    )


def _audit(
    caller: Caller,
    action: AuditAction,
    channel_id: str,
    before: int | None,
    after: int | None,
    now: datetime,
) -> AuditEvent:
    return AuditEvent.of(
        caller.namespace, caller.principal_id, action, "channel", channel_id, before, after, now
    )


@dataclass(frozen=True)
class NewChannel:
    """What an operator asks of a new channel."""

    name: str
    kind: ChannelKind
    target: str  # a URL, or an address for email
    rules: list[Rule]
    # A Slack app's: it signs the interactions with the channel's buttons.
    slack_signing_secret: str | None = None
    # A PagerDuty Events API v2 integration's: what its events are sent with.
    routing_key: str | None = None


def create(
    new: NewChannel,
    *,
    caller: Caller,
    now: datetime,
    store: ChannelPorts,
    uow: UnitOfWork,
    keys: Keys,
    present: Callable[[Channel, str | None], R],
) -> R:
    """A new channel of the caller's namespace, sending to ``new.target`` (a URL, or an address for
    email), presented with its webhook signing secret, which is shown once: the stored result
    (``present`` without it) never holds it."""
    _operator(caller)
    for number, rule in enumerate(new.rules):
        if rule.escalate_to and store.get_channel(caller.namespace, rule.escalate_to) is None:
            raise invalid(
                "the arguments do not match the tool's input schema",
                problems=[{"field": f"rules.{number}.escalate_to", "problem": "no such channel"}],
            )
    channel_id = new_id("chn")
    signing_secret = new_secret() if new.kind == "webhook" else None
    sealed_secret = None
    if signing_secret is not None or new.slack_signing_secret is not None:
        sealed_secret = seal_part(
            keys,
            caller.namespace,
            channel_id,
            "secret",
            signing_secret or new.slack_signing_secret or "",
        )
    target, sealed_target = new.target, None
    if new.kind in ("slack", "teams", "discord"):
        # The path (or query) of such a webhook's URL is its credential: only the host stays
        # readable.
        sealed_target = seal_part(keys, caller.namespace, channel_id, "url", target)
        target = urlsplit(target).hostname or ""
    elif new.kind == "pagerduty":
        assert new.routing_key is not None  # the tool's input requires it
        sealed_target = seal_part(keys, caller.namespace, channel_id, "key", new.routing_key)
    channel = Channel.created(
        caller.namespace,
        new.name,
        new.kind,
        target,
        new.rules,
        caller.principal_id,
        now,
        sealed_target=sealed_target,
        secret=sealed_secret,
        channel_id=channel_id,
    )
    writes = [
        store.add_channel(channel),
        store.add_audit_event(_audit(caller, "create_channel", channel.id, None, 1, now)),
        store.count(caller.namespace, "channels", 1, MAX_CHANNELS),
    ]
    try:
        uow.commit(*writes, result=present(channel, None))
    except ConditionFailed:
        if store.over_quota(caller.namespace, "channels", MAX_CHANNELS):
            raise _quota_reached() from None
        try:
            # Deletes counted on the quota's shards made the room, now folded: once more.
            uow.commit(*writes, result=present(channel, None))
        except ConditionFailed:
            raise contended("the channel raced another attempt; retry with the same key") from None
    return present(channel, signing_secret)


def _current(store: ChannelPorts, caller: Caller, channel_id: str, version: int) -> Channel:
    """The caller's channel ``channel_id`` at ``version``: not_found for a channel of another
    namespace as for one that does not exist, version_conflict if it has changed."""
    _operator(caller)
    channel = store.get_channel(caller.namespace, channel_id)
    if channel is None:
        raise not_found("channel")
    if channel.version != version:
        raise conflict("stale version; read the channel again", current_version=channel.version)
    return channel


def _commit(uow: UnitOfWork, result: BaseModel, *writes: Write) -> None:
    try:
        uow.commit(*writes, result=result)
    except ConditionFailed:
        raise conflict("the channel changed concurrently; read it again") from None


def rotate_secret(
    channel_id: str,
    version: int,
    *,
    caller: Caller,
    now: datetime,
    store: ChannelPorts,
    uow: UnitOfWork,
    keys: Keys,
    present: Callable[[Channel, str | None], R],
) -> R:
    """A new signing secret for a webhook channel, shown once (the stored result does not hold
    it); the secrets it replaces go on signing for their overlap, so receivers can move."""
    channel = _current(store, caller, channel_id, version)
    if channel.kind != "webhook":
        raise invalid("only a webhook channel has a signing secret")
    signing_secret = new_secret()
    sealed = seal_part(keys, channel.namespace, channel.id, "secret", signing_secret)
    changed = channel.rotated(sealed, now)
    event = _audit(caller, "rotate_channel_secret", channel.id, version, changed.version, now)
    _commit(uow, present(changed, None), store.save_channel(changed), store.add_audit_event(event))
    return present(changed, signing_secret)


def set_state(
    channel_id: str,
    version: int,
    state: ChannelState,
    *,
    caller: Caller,
    now: datetime,
    store: ChannelPorts,
    uow: UnitOfWork,
    present: Callable[[Channel], R],
) -> R:
    """The channel enabled or disabled by its operator; a channel already so is left as it
    is, with nothing written."""
    channel = _current(store, caller, channel_id, version)
    if channel.state == state:
        return present(channel)
    action: AuditAction
    if state == "enabled":
        changed, action = channel.enabled(now), "enable_channel"
    else:
        changed, action = channel.disabled("disabled by an operator", now), "disable_channel"
    event = _audit(caller, action, channel.id, version, changed.version, now)
    result = present(changed)
    _commit(uow, result, store.save_channel(changed), store.add_audit_event(event))
    return result


def delete(
    channel_id: str,
    version: int,
    *,
    caller: Caller,
    now: datetime,
    store: ChannelPorts,
    uow: UnitOfWork,
    present: Callable[[Channel], R],
) -> R:
    """The channel deleted, if it is still at ``version``; its place in the quota is freed."""
    channel = _current(store, caller, channel_id, version)
    event = _audit(caller, "delete_channel", channel.id, version, None, now)
    result = present(channel)
    _commit(
        uow,
        result,
        store.delete_channel(channel),
        store.add_audit_event(event),
        store.count(caller.namespace, "channels", -1, MAX_CHANNELS, channel.id),
    )
    return result


def to_test(
    channel_id: str, *, caller: Caller, now: datetime, store: ChannelPorts, uow: UnitOfWork
) -> Channel:
    """The channel an operator is about to send a test to, with that test audited first: the
    server POSTs where the channel says, an operator's power, so no test leaves unrecorded."""
    found = channel(channel_id, caller=caller, store=store)
    event = _audit(caller, "test_channel", found.id, found.version, found.version, now)
    uow.commit(store.add_audit_event(event))
    return found


def acknowledge(
    event_id: str,
    *,
    caller: Caller,
    now: datetime,
    store: ChannelPorts,
    uow: UnitOfWork,
    alarms: Alarms,
) -> tuple[Notification, Acknowledgement]:
    """The caller, a person or an operator, acknowledges the alert ``event_id`` (or the alert
    a repeat of that id repeats); the first acknowledgement stands, and is returned again. The
    on-call services the alert went to (or escalates to) are told in the same commit, so that
    their incident is acknowledged too."""
    if kind_of(caller.principal_id) != "person" and not caller.is_operator:
        raise forbidden("a person or an operator acknowledges alerts")
    found = store.get_notification(caller.namespace, event_id)
    if found is not None and found.alert_id != found.event_id:
        found = store.get_notification(caller.namespace, found.alert_id)
    if found is None:
        raise not_found("alert")
    if found.acknowledged is None:
        ack = Acknowledgement(by=caller.principal_id, at=to_ms(now))
        told = _tell_on_call(found, ack, store, alarms)
        try:
            uow.commit(store.acknowledge(caller.namespace, found.event_id, ack), *told)
        except ConditionFailed:
            pass  # acknowledged meanwhile: that one stands
        else:
            return found, ack
        found = store.get_notification(caller.namespace, found.event_id)
    assert found is not None
    assert found.acknowledged is not None
    return found, found.acknowledged


def _tell_on_call(
    alert: Notification, ack: Acknowledgement, store: ChannelPorts, alarms: Alarms
) -> list[Write]:
    """The alert.acknowledged notice of ``alert``, to the enabled on-call channels that it was
    sent to or that their rules escalate it to; nothing if there are none."""
    if alert.event_type not in ("switch.fired", "switch.flapping", "request.opened"):
        return []
    # Loaded by the first acknowledgement: the API function's other calls need none of it.
    from vigil.notifications.events import AlertAcknowledged, make_event
    from vigil.notifications.outbox import sent_to

    channels = {c.id: c for c in store.list_channels(alert.namespace)}
    reached = [cid for cid in alert.deliveries if cid in channels]
    escalated = [r.escalate_to for cid in reached for r in channels[cid].rules if r.escalate_to]
    on_call = [
        cid
        for cid in dict.fromkeys([*reached, *escalated])
        if (c := channels.get(cid)) is not None and c.on_call and c.state == "enabled"
    ]
    if not on_call:
        return []
    scope = alert.event.get("scope")
    event = make_event(
        "alert.acknowledged",
        AlertAcknowledged(
            alert_id=alert.event_id,
            alert_type=alert.event_type,
            scope=scope if isinstance(scope, str) else None,
            acknowledged_by=ack.by,
            acknowledged_at=ack.at,
        ),
        namespace=alert.namespace,
        occurred_at=ack.at,
        console_base=None,
    )
    return sent_to(store, alarms, event, on_call, ack.at)


def channel(channel_id: str, *, caller: Caller, store: ChannelPorts) -> Channel:
    """The caller's channel ``channel_id``: not_found for another namespace's as for none."""
    _operator(caller)
    found = store.get_channel(caller.namespace, channel_id)
    if found is None:
        raise not_found("channel")
    return found


def channels(*, caller: Caller, store: ChannelPorts) -> list[Channel]:
    """Every channel of the caller's namespace, in id order."""
    _operator(caller)
    return store.list_channels(caller.namespace)
