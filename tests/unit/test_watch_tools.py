"""The people's read tools: list_switches, list_deaths and get_usage, over the whole call path
(authentication, roles, validation) on the in-memory store."""

from __future__ import annotations

from typing import Any

from tests.liveness_support import World
from tests.support import Tenant, error_of
from vigil.clock import ManualClock
from vigil.errors import ErrorCode


def beat(world: World, secret: str, scope: str, window: int = 30, **more: Any) -> dict[str, Any]:
    return world.call("heartbeat", secret, scope=scope, expect_within_seconds=window, **more)


def scopes(page: dict[str, Any]) -> list[str]:
    return [s["scope"] for s in page["switches"]]


def test_list_switches_shows_each_state_and_filters(world: World, clock: ManualClock) -> None:
    agent, secret = world.tenant.register(name="worker")
    beat(world, secret, "job-armed", agent_id="worker-3")
    beat(world, secret, "job-off")
    beat(world, secret, "job-off", disarm=True)
    beat(world, secret, "job-failed", window=2)
    beat(world, secret, "other-expired", window=2, on_expiry=["release_leases"])
    world.advance(3)
    beat(world, secret, "job-armed", agent_id="worker-3")

    page = world.call("list_switches")
    assert scopes(page) == ["job-armed", "job-failed", "job-off", "other-expired"]
    assert page["next_cursor"] is None
    armed = page["switches"][0]
    assert armed == {
        "scope": "job-armed",
        "state": "armed",
        "generation": 1,
        "holder": agent,
        "agent_id": "worker-3",
        "deadline": "2026-01-01T00:00:33Z",
        "expect_within_seconds": 30,
        "last_beat_at": "2026-01-01T00:00:03Z",
        "armed_at": "2026-01-01T00:00:00Z",
        "beats": 2,
        "on_expiry": ["mark_failed"],
        "flapping_since": None,
        "depends_on": None,
        "schedule": None,
        "run_started_at": None,
    }
    states = {s["scope"]: (s["state"], s["deadline"]) for s in page["switches"]}
    assert states["job-failed"] == ("failed", None)
    assert states["other-expired"] == ("expired", None)
    assert states["job-off"] == ("disarmed", None)
    assert scopes(world.call("list_switches", state="failed")) == ["job-failed"]
    assert scopes(world.call("list_switches", scope_prefix="job-", state="armed")) == ["job-armed"]
    assert scopes(world.call("list_switches", scope_prefix="other")) == ["other-expired"]


def test_list_switches_pages_and_keeps_its_query(world: World) -> None:
    _, secret = world.tenant.register(name="worker")
    names = sorted(f"s-{n:03d}" for n in range(120))
    for name in names:
        beat(world, secret, name)
    for name in names[::3]:
        beat(world, secret, name, disarm=True)

    def every(**query: Any) -> list[str]:
        seen, cursor = [], None
        while True:
            arguments = {**query, **({"cursor": cursor} if cursor else {})}
            page = world.call("list_switches", **arguments)
            seen += scopes(page)
            cursor = page["next_cursor"]
            if cursor is None:
                return seen

    assert every() == names
    assert every(state="disarmed") == names[::3]
    first = world.call("list_switches", state="armed")
    assert len(first["switches"]) == 50
    assert first["next_cursor"]
    error = error_of(world.call, "list_switches", cursor=first["next_cursor"])
    assert error.code is ErrorCode.INVALID_ARGUMENT


def test_list_deaths_newest_first_with_lateness_and_releases(
    world: World, clock: ManualClock
) -> None:
    agent, secret = world.tenant.register(name="worker")
    for n in range(3):
        world.call("acquire_lease", secret, resource=f"doc-{n}", ttl_seconds=600, scope="job-a")
    beat(world, secret, "job-a", window=2, on_expiry=["release_leases", "mark_failed"])
    world.advance(3)
    beat(world, secret, "job-b", window=2)
    clock.advance(10)  # no alarm runs: the late beat finds the death itself
    beat(world, secret, "job-b")

    deaths = world.call("list_deaths")["deaths"]
    assert [(d["scope"], d["lateness_seconds"]) for d in deaths] == [("job-b", 8.0), ("job-a", 0.0)]
    assert deaths[1]["holder"] == agent
    assert deaths[1]["released_count"] == 3
    assert [lease["resource"] for lease in deaths[1]["released"]] == ["doc-0", "doc-1", "doc-2"]
    assert deaths[1]["completed"] == ["release_leases", "mark_failed"]
    first = world.call("list_deaths", limit=1)
    assert [d["scope"] for d in first["deaths"]] == ["job-b"]
    rest = world.call("list_deaths", limit=1, cursor=first["next_cursor"])
    assert [d["scope"] for d in rest["deaths"]] == ["job-a"]
    assert rest["next_cursor"] is None


def test_usage_counts_first_deliveries_per_principal_and_day(
    world: World, clock: ManualClock
) -> None:
    sender, sender_secret = world.tenant.register(name="sender")
    reader, reader_secret = world.tenant.register(name="reader")
    for text in ("one", "two"):
        world.call("send", sender_secret, target={"kind": "agent", "id": reader}, body=text)
    got = world.call("inbox_poll", reader_secret, max_messages=10, lease_seconds=30)["deliveries"]
    assert len(got) == 2
    clock.advance(31)  # the leases lapse: the same envelopes are handed out again
    again = world.call("inbox_poll", reader_secret, max_messages=10)["deliveries"]
    assert len(again) == 2

    usage = world.call("get_usage")["usage"]
    assert usage == [
        {
            "day": "2026-01-01",
            "principal": reader,
            "deliveries": 2,
            "by_kind": {"alert": 0, "message": 2, "request": 0, "response": 0},
        }
    ]
    assert world.call("get_usage", principal=sender)["usage"] == []
    assert world.call("get_usage", first_day="2026-01-02")["usage"] == []
    error = error_of(world.call, "get_usage", first_day="2026-02-30")
    assert error.code is ErrorCode.INVALID_ARGUMENT


def test_who_may_read_and_what_they_see(world: World) -> None:
    agent, secret = world.tenant.register(name="worker")
    _, person = world.tenant.register(kind="person", name="Pat")
    _, service = world.tenant.register(kind="service", name="svc")
    beat(world, secret, "job-1", window=2)
    world.advance(3)
    abroad = Tenant(world.app, world.clock, "globex")

    # People and operators watch switches and deaths; agents and services are refused.
    for tool in ("list_switches", "list_deaths"):
        assert world.call(tool, person)[tool.removeprefix("list_")]
        for refused in (secret, service):
            assert error_of(world.call, tool, refused).code is ErrorCode.FORBIDDEN
        # Another namespace's operator sees nothing of this one.
        assert abroad.call(tool)[tool.removeprefix("list_")] == []
    # Usage is for operators only.
    for refused in (secret, service, person):
        assert error_of(world.call, "get_usage", refused).code is ErrorCode.FORBIDDEN
    assert abroad.call("get_usage")["usage"] == []
    error = error_of(abroad.call, "get_usage", principal=agent)
    assert error.code is ErrorCode.NOT_FOUND
    # A cursor of one namespace is refused in another.
    beat(world, secret, "job-2", window=2)
    world.advance(3)
    cursor = world.call("list_deaths", limit=1)["next_cursor"]
    assert cursor is not None
    assert error_of(abroad.call, "list_deaths", cursor=cursor).code is ErrorCode.INVALID_ARGUMENT
