"""Notification channels: the rules that pick a channel's events, the rotation's overlap on a
moved clock, and the operators' tools (who may call them, what they keep sealed, what they show
once, the quota, the audit trail and the typed refusals of bad input)."""

from __future__ import annotations

import base64
import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

import pytest
from standardwebhooks import Webhook

from tests.support import TEST_KEYS, Tenant, app_on, error_of
from vigil.clock import ManualClock
from vigil.errors import ErrorCode
from vigil.kit.keys import Keys
from vigil.kit.sealing import seal
from vigil.notifications.channel_arguments import SLACK_PREFIX
from vigil.notifications.channel_secrets import open_secrets, open_target
from vigil.notifications.records import (
    EVENT_TYPES,
    MAX_CHANNELS,
    MAX_RULES,
    MAX_SIGNING_SECRETS,
    ROTATION_OVERLAP,
    Channel,
    Rule,
)
from vigil.notifications.webhooks import sign
from vigil.store import Store
from vigil.stores.memory import MemoryStore

SLACK_URL = "https://hooks.slack.com/services/T0001/B0001/slacktokenslacktoken"
WEBHOOK_URL = "https://receiver.example.com/vigil/events?tenant=7"
EVERY_EVENT = {"events": list(EVENT_TYPES)}
BODY = b'{"type":"switch.fired","scope":"billing-nightly"}'


def webhook(tenant: Tenant, secret: str | None = None, **more: Any) -> dict[str, Any]:
    arguments = {"name": "pager", "kind": "webhook", "url": WEBHOOK_URL, "rules": [EVERY_EVENT]}
    return tenant.call("create_channel", secret, **{**arguments, **more})


def stored(tenant: Tenant, channel_id: str) -> Channel:
    found = tenant.app.store.get_channel(tenant.namespace, channel_id)
    assert found is not None
    return found


def audit_trail(tenant: Tenant) -> list[tuple[str, str, int | None, int | None]]:
    events = tenant.call("list_audit_events")["events"]
    return [
        (e["action"], e["target"], e["before_version"], e["after_version"])
        for e in reversed(events)
        if e["target_kind"] == "channel"
    ]


# -- the rules ----------------------------------------------------------------------------
def test_a_rule_takes_its_event_types_under_its_scope_prefix() -> None:
    rule = Rule(events=["switch.fired", "session.stale"], scope_prefix="billing-")
    assert rule.matches("switch.fired", "billing-nightly")
    assert rule.matches("session.stale", "billing-")
    assert not rule.matches("switch.fired", "payroll-nightly")
    assert not rule.matches("request.opened", "billing-nightly")  # not one of its types
    assert not rule.matches("switch.fired", None)  # a prefix needs a scope to match
    everything = Rule(events=["delivery.dead_lettered"])
    assert everything.matches("delivery.dead_lettered", None)
    assert everything.matches("delivery.dead_lettered", "any-scope")
    assert not everything.matches("switch.fired", None)


def test_a_channel_wants_what_any_rule_takes_while_enabled(clock: ManualClock) -> None:
    channel = Channel.created(
        "acme",
        "ops",
        "email",
        "ops@example.com",
        [Rule(events=["switch.fired"], scope_prefix="a-"), Rule(events=["request.opened"])],
        "per_aaaaaaaaaaaaaaaa",
        clock.now(),
    )
    assert channel.wants("switch.fired", "a-1")
    assert channel.wants("request.opened", None)
    assert not channel.wants("switch.fired", "b-1")
    assert not channel.wants("request.expired", "a-1")
    disabled = channel.disabled("the receiver answered 410 Gone", clock.now())
    assert not disabled.wants("switch.fired", "a-1")
    assert disabled.enabled(clock.now()).wants("switch.fired", "a-1")


def _sealed(text: str) -> Any:
    return seal("k" * 64, text, "test")


def test_a_replaced_secret_signs_for_the_overlap_and_then_stops(clock: ManualClock) -> None:
    first, second, third = _sealed("one"), _sealed("two"), _sealed("three")
    channel = Channel.created(
        "acme",
        "hook",
        "webhook",
        WEBHOOK_URL,
        [Rule(events=["switch.fired"])],
        "per_x",
        clock.now(),
        secret=first,
    )
    assert [s.sealed for s in channel.signing(clock.now())] == [first]
    clock.advance(3600)
    rotated = channel.rotated(second, clock.now())
    assert rotated.version == channel.version + 1
    assert [s.sealed for s in rotated.signing(clock.now())] == [second, first]
    ends = clock.now() + ROTATION_OVERLAP
    clock.advance(ROTATION_OVERLAP.total_seconds() - 1)
    assert [s.sealed for s in rotated.signing(clock.now())] == [second, first]
    # A second rotation during the overlap does not lengthen the first one's.
    again = rotated.rotated(third, clock.now())
    assert [s.until for s in again.signing(clock.now())][1:] == [
        clock.now() + ROTATION_OVERLAP,
        ends,
    ]
    clock.advance(1)
    assert [s.sealed for s in again.signing(clock.now())] == [third, second]
    clock.advance(ROTATION_OVERLAP.total_seconds())
    assert [s.sealed for s in again.signing(clock.now())] == [third]


def test_rotations_in_quick_succession_keep_a_bounded_number_of_secrets(
    clock: ManualClock,
) -> None:
    channel = Channel.created(
        "acme",
        "hook",
        "webhook",
        WEBHOOK_URL,
        [Rule(events=["switch.fired"])],
        "per_x",
        clock.now(),
        secret=_sealed("0"),
    )
    for n in range(1, 10):
        channel = channel.rotated(_sealed(str(n)), clock.now())
    signing = channel.signing(clock.now())
    assert len(signing) == MAX_SIGNING_SECRETS
    assert len(channel.secrets) == MAX_SIGNING_SECRETS
    assert signing[0].until is None


# -- creating -----------------------------------------------------------------------------
def test_a_webhook_shows_its_signing_secret_once_and_keeps_it_sealed(tenant: Tenant) -> None:
    created = webhook(tenant, idempotency_key="k1")
    secret = created["signing_secret"]
    assert secret.startswith("whsec_")
    assert len(base64.b64decode(secret.removeprefix("whsec_"), validate=True)) == 32
    view = created["channel"]
    assert view["kind"] == "webhook"
    assert view["target"] == WEBHOOK_URL
    assert view["state"] == "enabled"
    assert view["version"] == 1
    assert view["signing_secrets"] == [{"created_at": view["created_at"], "until": None}]

    channel = stored(tenant, view["id"])
    assert secret not in channel.model_dump_json()
    assert open_secrets(channel, TEST_KEYS, tenant.app.clock.now()) == [secret]
    # The completion its key keeps holds the channel, and not the secret.
    store = tenant.app.store
    assert isinstance(store, MemoryStore)
    record = store.idempotency[("acme", tenant.operator.id, "create_channel", "k1")]
    assert record.result == {"channel": view, "signing_secret": None}
    assert secret not in record.model_dump_json()

    replay = webhook(tenant, idempotency_key="k1")
    assert replay == {"channel": view, "signing_secret": None}
    listed = tenant.call("list_channels")
    assert listed == {"channels": [view]}
    assert secret not in json.dumps(listed)
    assert audit_trail(tenant) == [("create_channel", view["id"], None, 1)]


def test_a_slack_webhook_is_shown_by_its_host_only(tenant: Tenant) -> None:
    created = tenant.call(
        "create_channel",
        name="#ops",
        kind="slack",
        url=SLACK_URL,
        rules=[{"events": ["switch.fired"], "scope_prefix": "prod-"}],
    )
    assert created["signing_secret"] is None
    view = created["channel"]
    assert view["target"] == "hooks.slack.com"
    assert view["signing_secrets"] == []
    assert view["rules"] == [
        {
            "events": ["switch.fired"],
            "scope_prefix": "prod-",
            "repeat_every_minutes": None,
            "escalate_after_minutes": None,
            "escalate_to": None,
        }
    ]
    channel = stored(tenant, view["id"])
    assert "slacktoken" not in channel.model_dump_json()
    assert open_target(channel, TEST_KEYS) == SLACK_URL
    assert "slacktoken" not in json.dumps(tenant.call("list_channels"))


def test_an_email_channel_keeps_its_address(tenant: Tenant) -> None:
    created = tenant.call(
        "create_channel",
        name="on-call",
        kind="email",
        email="on-call+vigil@example.co.uk",
        rules=[{"events": ["request.opened", "request.expiring"]}],
    )
    assert created["signing_secret"] is None
    channel = stored(tenant, created["channel"]["id"])
    assert channel.rules == [Rule(events=["request.opened", "request.expiring"])]
    assert open_target(channel, TEST_KEYS) == "on-call+vigil@example.co.uk"
    assert created["channel"]["target"] == "on-call+vigil@example.co.uk"


def test_sealed_parts_open_only_with_the_service_key_and_for_their_channel(
    tenant: Tenant,
) -> None:
    slack = tenant.call(
        "create_channel", name="s", kind="slack", url=SLACK_URL, rules=[EVERY_EVENT]
    )
    hook = webhook(tenant)
    slack_channel = stored(tenant, slack["channel"]["id"])
    hook_channel = stored(tenant, hook["channel"]["id"])
    other_key = Keys.fixed("another-deployment-" + "z" * 45)
    with pytest.raises(RuntimeError):
        open_target(slack_channel, other_key)
    with pytest.raises(RuntimeError):
        open_secrets(hook_channel, other_key, tenant.app.clock.now())
    # Moved onto another channel, a sealed part does not open there.
    moved = hook_channel.model_copy(update={"sealed_target": slack_channel.sealed_target})
    with pytest.raises(RuntimeError):
        open_target(moved, TEST_KEYS)


def test_secrets_and_slack_urls_stay_out_of_the_logs(
    tenant: Tenant, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logging.getLogger("vigil").handlers[0], "stream", sys.stderr)
    created = webhook(tenant, idempotency_key="k")
    rotated = tenant.call("rotate_channel_secret", id=created["channel"]["id"], version=1)
    tenant.call("create_channel", name="s", kind="slack", url=SLACK_URL, rules=[EVERY_EVENT])
    error_of(
        tenant.call,
        "create_channel",
        name="s",
        kind="webhook",
        url=SLACK_URL + "\n",
        rules=[EVERY_EVENT],
    )
    logged = capsys.readouterr().err
    assert "create_channel" in logged
    assert created["signing_secret"] not in logged
    assert rotated["signing_secret"] not in logged
    assert "slacktoken" not in logged


def test_during_a_rotation_a_receiver_verifies_with_either_secret(tenant: Tenant) -> None:
    """What the delivery side opens signs as Standard Webhooks says: the reference library
    accepts a delivery with the old secret and with the new one while both sign."""
    created = webhook(tenant)
    channel_id = created["channel"]["id"]
    rotated = tenant.call("rotate_channel_secret", id=channel_id, version=1)
    now = tenant.app.clock.now()
    signing = open_secrets(stored(tenant, channel_id), TEST_KEYS, now)
    # The reference library checks the timestamp against the real clock.
    headers = sign(signing, "evt_1", datetime.now(UTC), BODY)
    for secret in (created["signing_secret"], rotated["signing_secret"]):
        assert Webhook(secret).verify(BODY, headers) == json.loads(BODY)


# -- rotating, disabling, deleting ----------------------------------------------------------
def test_a_rotation_shows_the_new_secret_once_and_the_old_one_signs_for_the_overlap(
    tenant: Tenant, clock: ManualClock
) -> None:
    created = webhook(tenant)
    old, channel_id = created["signing_secret"], created["channel"]["id"]
    clock.advance(60)
    rotated = tenant.call("rotate_channel_secret", id=channel_id, version=1, idempotency_key="r")
    new = rotated["signing_secret"]
    assert new.startswith("whsec_")
    assert new != old
    assert rotated["channel"]["version"] == 2
    assert [s["until"] for s in rotated["channel"]["signing_secrets"]] == [
        None,
        (clock.now() + ROTATION_OVERLAP).isoformat().replace("+00:00", "Z"),
    ]
    channel = stored(tenant, channel_id)
    assert open_secrets(channel, TEST_KEYS, clock.now()) == [new, old]
    again = tenant.call("rotate_channel_secret", id=channel_id, version=1, idempotency_key="r")
    assert again == {**rotated, "signing_secret": None}
    assert stored(tenant, channel_id).version == 2  # the replay rotated nothing

    clock.advance(ROTATION_OVERLAP.total_seconds())
    assert open_secrets(channel, TEST_KEYS, clock.now()) == [new]
    listed = tenant.call("list_channels")["channels"][0]
    assert listed["signing_secrets"] == [rotated["channel"]["signing_secrets"][0]]
    assert audit_trail(tenant) == [
        ("create_channel", channel_id, None, 1),
        ("rotate_channel_secret", channel_id, 1, 2),
    ]


def test_only_a_webhook_at_its_current_version_is_rotated(tenant: Tenant) -> None:
    email = tenant.call(
        "create_channel", name="e", kind="email", email="a@example.com", rules=[EVERY_EVENT]
    )
    error = error_of(tenant.call, "rotate_channel_secret", id=email["channel"]["id"], version=1)
    assert error.code is ErrorCode.INVALID_ARGUMENT
    hook = webhook(tenant)["channel"]
    tenant.call("rotate_channel_secret", id=hook["id"], version=1)
    stale = error_of(tenant.call, "rotate_channel_secret", id=hook["id"], version=1)
    assert stale.code is ErrorCode.VERSION_CONFLICT
    assert stale.details == {"current_version": 2}
    assert not stale.retryable
    missing = error_of(tenant.call, "rotate_channel_secret", id="chn_nothinghereaaaaa", version=1)
    assert missing.code is ErrorCode.NOT_FOUND


def test_an_operator_disables_and_enables_a_channel(tenant: Tenant, clock: ManualClock) -> None:
    channel_id = webhook(tenant)["channel"]["id"]
    clock.advance(1)  # each change in its own millisecond: the audit trail has one order
    disabled = tenant.call("set_channel_state", id=channel_id, version=1, state="disabled")
    assert disabled["channel"]["state"] == "disabled"
    assert disabled["channel"]["disabled_reason"] == "disabled by an operator"
    assert not stored(tenant, channel_id).wants("switch.fired", None)
    # Asking for the state it already has changes nothing and records nothing.
    same = tenant.call("set_channel_state", id=channel_id, version=2, state="disabled")
    assert same == disabled
    clock.advance(1)
    enabled = tenant.call("set_channel_state", id=channel_id, version=2, state="enabled")
    assert enabled["channel"]["state"] == "enabled"
    assert enabled["channel"]["disabled_reason"] is None
    assert enabled["channel"]["version"] == 3
    assert audit_trail(tenant) == [
        ("create_channel", channel_id, None, 1),
        ("disable_channel", channel_id, 1, 2),
        ("enable_channel", channel_id, 2, 3),
    ]


def test_a_channel_its_receiver_disabled_is_enabled_again(
    tenant: Tenant, clock: ManualClock
) -> None:
    channel_id = webhook(tenant)["channel"]["id"]
    store = tenant.app.store
    gone = stored(tenant, channel_id).disabled("the receiver answered 410 Gone", clock.now())
    store.commit([store.save_channel(gone)])
    listed = tenant.call("list_channels")["channels"][0]
    assert (listed["state"], listed["disabled_reason"]) == (
        "disabled",
        "the receiver answered 410 Gone",
    )
    enabled = tenant.call("set_channel_state", id=channel_id, version=2, state="enabled")
    assert enabled["channel"]["state"] == "enabled"
    assert stored(tenant, channel_id).wants("switch.fired", None)


def test_a_delete_takes_the_version_it_was_decided_on(tenant: Tenant, clock: ManualClock) -> None:
    channel_id = webhook(tenant)["channel"]["id"]
    tenant.call("set_channel_state", id=channel_id, version=1, state="disabled")
    stale = error_of(tenant.call, "delete_channel", id=channel_id, version=1)
    assert stale.code is ErrorCode.VERSION_CONFLICT
    assert stored(tenant, channel_id).version == 2
    clock.advance(1)
    deleted = tenant.call("delete_channel", id=channel_id, version=2)
    assert deleted == {"id": channel_id, "deleted_at": "2026-01-01T00:00:01Z"}
    assert tenant.app.store.get_channel("acme", channel_id) is None
    assert tenant.call("list_channels") == {"channels": []}
    assert tenant.app.store.quota_usage("acme", "channels") == 0
    again = error_of(tenant.call, "delete_channel", id=channel_id, version=2)
    assert again.code is ErrorCode.NOT_FOUND
    assert audit_trail(tenant)[-1] == ("delete_channel", channel_id, 2, None)


# -- who may ------------------------------------------------------------------------------
def test_workers_are_refused_every_channel_tool_and_change_nothing(tenant: Tenant) -> None:
    channel_id = webhook(tenant)["channel"]["id"]
    _, worker = tenant.register()
    before = stored(tenant, channel_id)
    calls: list[tuple[str, dict[str, Any]]] = [
        (
            "create_channel",
            {"name": "w", "kind": "email", "email": "w@example.com", "rules": [EVERY_EVENT]},
        ),
        ("list_channels", {}),
        ("rotate_channel_secret", {"id": channel_id, "version": 1}),
        ("set_channel_state", {"id": channel_id, "version": 1, "state": "disabled"}),
        ("delete_channel", {"id": channel_id, "version": 1}),
    ]
    for tool, arguments in calls:
        error = error_of(tenant.call, tool, worker, **arguments)
        assert error.code is ErrorCode.FORBIDDEN, tool
    assert stored(tenant, channel_id) == before
    assert [c.id for c in tenant.app.store.list_channels("acme")] == [channel_id]
    assert tenant.app.store.quota_usage("acme", "channels") == 1


def test_another_namespace_never_sees_or_touches_a_channel(
    tenant: Tenant, other_tenant: Tenant
) -> None:
    channel_id = webhook(tenant)["channel"]["id"]
    before = stored(tenant, channel_id)
    assert other_tenant.call("list_channels") == {"channels": []}
    for tool, arguments in (
        ("rotate_channel_secret", {"id": channel_id, "version": 1}),
        ("set_channel_state", {"id": channel_id, "version": 1, "state": "disabled"}),
        ("delete_channel", {"id": channel_id, "version": 1}),
    ):
        error = error_of(other_tenant.call, tool, **arguments)
        assert error.code is ErrorCode.NOT_FOUND, tool
        missing = error_of(other_tenant.call, tool, **{**arguments, "id": "chn_nothinghereaaaaa"})
        assert error.to_dict() == missing.to_dict()  # existence does not leak
    assert stored(tenant, channel_id) == before
    theirs = webhook(other_tenant)["channel"]["id"]
    assert [c["id"] for c in tenant.call("list_channels")["channels"]] == [channel_id]
    assert [c["id"] for c in other_tenant.call("list_channels")["channels"]] == [theirs]


# -- the quota ----------------------------------------------------------------------------
def test_a_namespace_holds_at_most_max_channels(tenant: Tenant, other_tenant: Tenant) -> None:
    made = [
        tenant.call(
            "create_channel",
            name=f"c{n}",
            kind="email",
            email=f"c{n}@example.com",
            rules=[EVERY_EVENT],
        )["channel"]
        for n in range(MAX_CHANNELS)
    ]
    store = tenant.app.store
    assert store.quota_usage("acme", "channels") == MAX_CHANNELS
    error = error_of(webhook, tenant)
    assert error.code is ErrorCode.LIMIT_EXCEEDED
    assert error.details == {"quota": "channels", "limit": MAX_CHANNELS}
    assert not error.retryable
    assert len(store.list_channels("acme")) == MAX_CHANNELS
    assert store.quota_usage("acme", "channels") == MAX_CHANNELS
    # Another namespace has its own places; a delete frees one of these.
    webhook(other_tenant)
    tenant.call("delete_channel", id=made[0]["id"], version=1)
    webhook(tenant)
    assert store.quota_usage("acme", "channels") == MAX_CHANNELS


def test_channels_count_and_change_alike_on_both_stores(store: Store, clock: ManualClock) -> None:
    tenant = Tenant(app_on(store, clock), clock, "acme")
    created = webhook(tenant, idempotency_key="k")
    channel_id = created["channel"]["id"]
    assert webhook(tenant, idempotency_key="k")["signing_secret"] is None
    clock.advance(1)  # so that the audit trail has one order
    rotated = tenant.call("rotate_channel_secret", id=channel_id, version=1)
    secrets = open_secrets(stored(tenant, channel_id), TEST_KEYS, clock.now())
    assert secrets == [rotated["signing_secret"], created["signing_secret"]]
    clock.advance(1)
    tenant.call("set_channel_state", id=channel_id, version=2, state="disabled")
    assert store.quota_usage("acme", "channels") == 1
    clock.advance(1)
    tenant.call("delete_channel", id=channel_id, version=3)
    assert store.quota_usage("acme", "channels") == 0
    assert [action for action, *_ in audit_trail(tenant)] == [
        "create_channel",
        "rotate_channel_secret",
        "disable_channel",
        "delete_channel",
    ]


# -- bad input ----------------------------------------------------------------------------
BASE: dict[str, Any] = {"name": "c", "kind": "webhook", "url": WEBHOOK_URL, "rules": [EVERY_EVENT]}


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"url": "http://receiver.example.com/hook"}, "url"),
        ({"url": "ftp://receiver.example.com/hook"}, "url"),
        ({"url": "https://"}, "url"),
        ({"url": "https://user:pw@receiver.example.com/"}, "url"),
        ({"url": "https://receiver.example.com/a b"}, "url"),
        ({"url": "https://receiver.example.com:99999/"}, "url"),
        ({"url": "https://receiver.example.com/" + "a" * 2000}, "url"),
        ({"kind": "slack", "url": "https://example.com/services/T/B/X"}, "(arguments)"),
        (
            {"kind": "slack", "url": "https://hooks.slack.com.evil.example/services/T"},
            "(arguments)",
        ),
        ({"kind": "slack", "url": "https://hooks.slack.com/"}, "(arguments)"),
        ({"kind": "email", "url": None, "email": "not-an-address"}, "email"),
        ({"kind": "email", "url": None, "email": "a@localhost"}, "email"),
        ({"kind": "email", "url": None, "email": "a b@example.com"}, "email"),
        ({"kind": "email", "url": None, "email": "x" * 65 + "@example.com"}, "email"),
        ({"kind": "email", "url": None, "email": "a@" + "b" * 250 + ".com"}, "email"),
        ({"kind": "email", "url": None, "email": "a@example.com\nBcc: b@example.com"}, "email"),
        ({"kind": "email"}, "(arguments)"),
        ({"email": "a@example.com"}, "(arguments)"),
        ({"url": None}, "(arguments)"),
        ({"rules": []}, "rules"),
        ({"rules": [{"events": []}]}, "rules.0.events"),
        ({"rules": [{"events": ["switch.exploded"]}]}, "rules.0.events.0"),
        ({"rules": [{"events": ["switch.fired", "switch.fired"]}]}, "rules.0.events"),
        ({"rules": [{"events": ["switch.fired"], "scope_prefix": ""}]}, "rules.0.scope_prefix"),
        ({"rules": [{"events": ["switch.fired"], "extra": 1}]}, "rules.0.extra"),
        ({"rules": [EVERY_EVENT] * (MAX_RULES + 1)}, "rules"),
        ({"kind": "sms"}, "kind"),
        ({"name": ""}, "name"),
    ],
)
def test_bad_input_is_a_typed_refusal_that_changes_nothing(
    tenant: Tenant, changes: dict[str, Any], field: str
) -> None:
    arguments = {k: v for k, v in {**BASE, **changes}.items() if v is not None}
    error = error_of(tenant.call, "create_channel", **arguments)
    assert error.code is ErrorCode.INVALID_ARGUMENT
    assert field in [p["field"] for p in error.details["problems"]]
    text = json.dumps(error.to_dict())
    for value in changes.values():
        if isinstance(value, str) and len(value) > 6 and value != SLACK_PREFIX:
            assert value not in text  # never echoed (the prefix is the rule, named)
    assert tenant.app.store.list_channels("acme") == []
    assert tenant.app.store.quota_usage("acme", "channels") == 0


def test_the_bounds_themselves_are_accepted(tenant: Tenant) -> None:
    longest = "https://receiver.example.com/" + "a" * (2000 - len("https://receiver.example.com/"))
    webhook(tenant, url=longest, rules=[EVERY_EVENT] * MAX_RULES)
    address = "x" * 64 + "@" + "b" * 63 + "." + "c" * 63 + "." + "d" * 57 + ".com"
    assert len(address) == 254
    tenant.call("create_channel", name="e", kind="email", email=address, rules=[EVERY_EVENT])
    tenant.call(
        "create_channel",
        name="s",
        kind="slack",
        url="https://hooks.slack.com/triggers/T/1/abc",
        rules=[EVERY_EVENT],
    )
    assert len(tenant.call("list_channels")["channels"]) == 3


def test_a_lost_answer_to_a_state_change_or_a_delete_is_replayed_with_its_key(
    tenant: Tenant, clock: ManualClock
) -> None:
    channel_id = webhook(tenant)["channel"]["id"]
    clock.advance(1)  # each change in its own millisecond: the audit trail has one order
    change = {"id": channel_id, "version": 1, "state": "disabled", "idempotency_key": "s"}
    disabled = tenant.call("set_channel_state", **change)
    assert tenant.call("set_channel_state", **change) == disabled
    clock.advance(1)
    delete = {"id": channel_id, "version": 2, "idempotency_key": "d"}
    deleted = tenant.call("delete_channel", **delete)
    assert tenant.call("delete_channel", **delete) == deleted
    # Without its key, the retry finds the channel gone.
    assert error_of(tenant.call, "delete_channel", id=channel_id, version=2).code is (
        ErrorCode.NOT_FOUND
    )
    assert [action for action, *_ in audit_trail(tenant)] == [
        "create_channel",
        "disable_channel",
        "delete_channel",
    ]
