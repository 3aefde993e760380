"""The people's screens, drawn from real tool results (the in-memory app on a manual clock):
relative times, the states a switch is shown in, empty tables, and text written by others
never acting on the terminal or as rich markup."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.liveness_support import World
from vigil.people import render
from vigil.people.render import Overview, relative, span

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0, "now"),
        (0.4, "now"),
        (-0.9, "now"),
        (130, "in 2m 10s"),
        (-180, "3m ago"),
        (-181, "3m 1s ago"),
        (45, "in 45s"),
        (3_600 + 5, "in 1h"),  # two units at most, none after a gap
        (3_600 + 120 + 5, "in 1h 2m"),
        (-(2 * 86_400 + 3 * 3_600 + 59), "2d 3h ago"),
    ],
)
def test_times_are_shown_relative_to_now(seconds: float, shown: str) -> None:
    assert relative(NOW + timedelta(seconds=seconds), NOW) == shown
    assert relative((NOW + timedelta(seconds=seconds)).isoformat(), NOW) == shown


def test_no_time_and_spans() -> None:
    assert relative(None, NOW) == "-"
    assert span(0) == "0s"
    assert span(86_400) == "1d"


@pytest.mark.parametrize(
    ("table", "what"),
    [
        (render.switches_table, "switches"),
        (render.deaths_table, "deaths"),
        (render.sessions_table, "sessions"),
        (render.requests_table, "requests"),
    ],
)
def test_an_empty_listing_says_so_without_a_header(table: object, what: str) -> None:
    shown = render.to_text(table([], NOW))  # type: ignore[operator]
    assert shown.strip() == f"No {what}."


def test_an_empty_status_screen_counts_nothing() -> None:
    shown = render.to_text(render.status_screen(Overview([], [], []), NOW, "Vigil at here"))
    assert "Switches: 0 armed, 0 expiring soon, 0 fired" in shown
    assert "Stale sessions: 0" in shown
    assert "Waiting for you: 0" in shown
    assert "scope" not in shown  # no table drawn for nothing


def test_a_switch_is_shown_armed_then_expiring_then_fired(world: World) -> None:
    _person, person_secret = world.tenant.register(kind="person", name="Watcher")
    _, agent_secret = world.tenant.register(name="worker")
    world.call(
        "heartbeat", agent_secret, scope="job-7", expect_within_seconds=30, agent_id="worker-3"
    )

    def shown() -> str:
        switches = world.call("list_switches", person_secret)["switches"]
        return render.to_text(render.switches_table(switches, world.clock.now()))

    armed = shown()
    assert "job-7" in armed
    assert "armed" in armed
    assert "expiring" not in armed
    assert "in 30s" in armed
    assert " (worker-3)" in armed

    world.advance(21)  # 9 s left of 30: under a third
    expiring = shown()
    assert "armed, expiring soon" in expiring
    assert "in 9s" in expiring
    assert "21s ago" in expiring

    world.advance(12)  # the deadline passed 3 s ago and the switch fired
    fired = shown()
    assert "failed" in fired  # mark_failed is the default action
    assert "missed 3s ago" in fired
    assert "33s ago" in fired

    deaths = world.call("list_deaths", person_secret)["deaths"]
    drawn = render.to_text(render.deaths_table(deaths, world.clock.now()))
    assert "job-7" in drawn
    assert "mark_failed" in drawn
    assert "3s ago" in drawn


def test_a_paused_overdue_switch_is_shown_held_by_its_pause(world: World) -> None:
    _, person_secret = world.tenant.register(kind="person", name="Watcher")
    _, agent_secret = world.tenant.register(name="worker")
    world.call("heartbeat", agent_secret, scope="job-8", expect_within_seconds=30)
    world.call("pause_switches", scope_prefix="job-", until_next_beat=True)
    world.advance(40)  # past its deadline: held by the pause, not fired
    switches = world.call("list_switches", person_secret)["switches"]
    pauses = world.call("list_pauses", person_secret)["pauses"]
    shown = render.to_text(render.switches_table(switches, world.clock.now(), pauses))
    assert "armed, held by a pause" in shown
    assert "expiring soon" not in shown


def test_an_ended_session_is_shown_with_its_end(world: World) -> None:
    _, person_secret = world.tenant.register(kind="person", name="Watcher")
    _, agent_secret = world.tenant.register(name="worker")
    world.call("session_heartbeat", agent_secret, sessionId="build-3", idempotencyKey="b")
    world.call("end_session", agent_secret, sessionId="build-3", outcome="completed")
    world.advance(300)
    sessions = world.call("list_sessions", person_secret)["sessions"]
    shown = render.to_text(render.sessions_table(sessions, world.clock.now()))
    assert "ended completed 5m ago" in shown
    assert "stale" not in shown


def test_the_status_screen_lists_what_needs_attention(world: World) -> None:
    person, person_secret = world.tenant.register(kind="person", name="Watcher")
    _, agent_secret = world.tenant.register(name="worker")
    for n in range(12):
        world.call("heartbeat", agent_secret, scope=f"dies-{n:02}", expect_within_seconds=5)
    world.call("heartbeat", agent_secret, scope="lives", expect_within_seconds=3_600)
    world.advance(6)
    asked = world.call(
        "ask",
        agent_secret,
        target={"kind": "person", "id": person},
        body="May I deploy?",
        kind="approval",
        action={"op": "deploy"},
    )
    switches = world.call("list_switches", person_secret)["switches"]
    screen = render.status_screen(
        Overview(switches, [], [asked]), world.clock.now(), "Vigil at here"
    )
    shown = render.to_text(screen)
    assert "Switches: 1 armed, 0 expiring soon, 12 fired" in shown
    assert "lives" not in shown  # armed and well: counted, not listed
    assert "… and 2 more: see `vigil switches`" in shown
    assert "Waiting for you: 1" in shown
    assert asked["id"] in shown
    assert "May I deploy?" in shown


def test_text_written_by_others_cannot_act_on_the_terminal(world: World) -> None:
    person, person_secret = world.tenant.register(kind="person", name="Watcher")
    _, agent_secret = world.tenant.register(name="worker")
    body = "fine\x1b[2J\x1b[31mreally\u202e [bold]not markup[/bold]"
    asked = world.call(
        "ask",
        agent_secret,
        target={"kind": "person", "id": person},
        body=body,
        kind="approval",
        action={"op": "d\u0435ploy", "note": "\x1b[8m"},  # a Cyrillic e
    )
    listed = world.call("request_status", person_secret, state="open")["requests"]
    table = render.to_text(render.requests_table(listed, world.clock.now()))
    decision = render.request_text(asked, world.clock.now())
    for shown in (table, decision):
        assert "\x1b" not in shown
        assert "\u202e" not in shown
        assert "\\x1b[2J" in shown
        assert "[bold]not markup[/bold]" in shown
    assert "\\x1b[31mreally\\u202e" in decision
    # The bound action, exactly: what looks alike on screen is spelled out.
    assert '"op": "d\\u0435ploy"' in decision
    assert '"note": "\\u001b[8m"' in decision


def test_a_disguised_action_is_shown_escaped_under_its_warning(world: World) -> None:
    person, _ = world.tenant.register(kind="person", name="Watcher")
    _, agent_secret = world.tenant.register(name="worker")
    # Two "op" keys on screen, and a file that reads as ".png".
    disguised = {"op": "deploy", "op\u200b": "drop-database", "file": "\u202egnp.hs"}
    asked = world.call(
        "ask",
        agent_secret,
        target={"kind": "person", "id": person},
        body="May I deploy?",
        kind="approval",
        action=disguised,
    )
    decision = render.request_text(asked, world.clock.now())
    assert "\u200b" not in decision
    assert "\u202e" not in decision
    assert '"op\\u200b": "drop-database"' in decision
    assert "U+200B ZERO WIDTH SPACE" in decision
    assert decision.index("outside printable ASCII") < decision.index("drop-database")


def test_a_profile_list_shows_names_and_endpoints() -> None:
    listed = [{"name": "work", "endpoint": "https://vigil.example/v1"}]
    shown = render.to_text(render.profiles_table(listed))
    assert "work" in shown
    assert "https://vigil.example/v1" in shown
    assert render.to_text(render.profiles_table([])).strip() == "No profiles."


def test_rich_is_loaded_by_a_people_command_only_when_it_draws() -> None:
    """Building the vigil parser (every command does) and the Lambda entry points load no
    rich: vigil mcp and cold starts stay as they were."""
    probe = (
        "import sys, vigil.cli, vigil.entrypoints.api, vigil.entrypoints.alarm\n"
        "vigil.cli.parser()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'rich'"
        " or m == 'vigil.people.render'))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe],
        env={"PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.strip() == "[]"


def _armed(scope: str, left: float, window: int = 300) -> dict[str, object]:
    return {
        "scope": scope,
        "state": "armed",
        "deadline": (NOW + timedelta(seconds=left)).isoformat(),
        "expect_within_seconds": window,
        "last_beat_at": (NOW - timedelta(seconds=window - left)).isoformat(),
        "holder": "agt_x",
        "agent_id": None,
        "generation": 1,
    }


def test_a_switch_a_pause_holds_is_shown_paused_not_expiring() -> None:
    held, loose = _armed("deploy/eu", 10), _armed("build/1", 10)
    pause = {
        "scope_prefix": "deploy/",
        "until_next_beat": False,
        "paused_at": (NOW - timedelta(hours=1)).isoformat(),
    }
    assert render.condition(held, NOW, [pause]) == "paused"
    assert render.condition(loose, NOW, [pause]) == "expiring"
    # Until the next beat: a switch beaten since the pause began is no longer held.
    beaten = {**pause, "until_next_beat": True, "paused_at": (NOW - timedelta(hours=2)).isoformat()}
    assert render.condition(held, NOW, [beaten]) == "expiring"

    shown = render.to_text(
        render.status_screen(Overview([held, loose], [], [], pauses=[pause]), NOW, "Vigil")
    )
    assert "2 armed, 1 expiring soon, 0 fired, 1 held by a pause" in shown


def test_principals_are_shown_by_name_where_the_name_is_known(world: World) -> None:
    person, person_secret = world.tenant.register(kind="person", name="Watcher")
    agent, agent_secret = world.tenant.register(name="deploy-bot")
    world.call("heartbeat", agent_secret, scope="job-9", expect_within_seconds=5, agent_id="w-3")
    world.call("session_heartbeat", agent_secret, sessionId="build-9", idempotencyKey="b")
    asked = world.call(
        "ask",
        agent_secret,
        target={"kind": "person", "id": person},
        body="May I deploy?",
        kind="approval",
    )
    world.advance(6)
    now = world.clock.now()
    names = {agent: "deploy-bot", person: "Watcher"}
    switches = world.call("list_switches", person_secret)["switches"]
    deaths = world.call("list_deaths", person_secret)["deaths"]
    sessions = world.call("list_sessions", person_secret)["sessions"]
    drawn = [
        render.switches_table(switches, now, names=names),
        render.deaths_table(deaths, now, names=names),
        render.sessions_table(sessions, now, names=names),
        render.requests_table([asked], now, names=names),
    ]
    for table in drawn:
        shown = render.to_text(table)
        assert "deploy-bot" in shown
        assert agent not in shown
    assert "deploy-bot (w-3)" in render.to_text(drawn[0])
    decision = render.request_text(asked, now, names=names)
    assert "from deploy-bot (" in decision
    # Unknown, the id is shown.
    assert agent in render.to_text(render.requests_table([asked], now))


def test_at_80_columns_the_status_screen_keeps_every_id_on_one_line(world: World) -> None:
    person, person_secret = world.tenant.register(kind="person", name="Watcher")
    agent, agent_secret = world.tenant.register(name="deploy-bot-for-billing")
    world.call(
        "heartbeat",
        agent_secret,
        scope="acme-billing-nightly-job",
        expect_within_seconds=5,
        agent_id="worker-3",
    )
    world.call(
        "session_heartbeat", agent_secret, sessionId="acme-build-2026-03-01-17", idempotencyKey="b"
    )
    world.advance(6 * 60)
    asked = world.call(
        "ask",
        agent_secret,
        target={"kind": "person", "id": person},
        body="May I deploy billing-api 1.2.3 to production now, after the freeze has ended?",
        kind="approval",
        action={"op": "deploy"},
    )
    now = world.clock.now()
    overview = Overview(
        world.call("list_switches", person_secret)["switches"],
        world.call("list_sessions", person_secret, staleOnly=True)["sessions"],
        [asked],
        names={agent: "deploy-bot-for-billing", person: "Watcher"},
    )
    shown = render.to_text(render.status_screen(overview, now, "Vigil at here"), width=80)
    assert max(len(line) for line in shown.splitlines()) <= 80
    # Fired, as the summary counts it, and marked failed: one word for one thing.
    assert "1 fired" in shown
    assert "(failed)" in shown
    for ident in (asked["id"], "acme-billing-nightly-job", "acme-build-2026-03-01-17"):
        assert ident in shown, ident


def test_a_long_request_or_step_keeps_its_row_on_one_line_at_80_columns() -> None:
    """The text gives up its width first, cut with an ellipsis: the id stays whole and every
    row stays one line."""
    now = NOW
    asked = {
        "id": "req_fkc3ntya73yq2mgg",
        "kind": "approval",
        "state": "open",
        "requester": "agt_aaaaaaaaaaaaaaaa",
        "asked_at": now.isoformat(),
        "expires_at": (now + timedelta(days=1)).isoformat(),
        "body": "May I deploy checkout 1.2.3 to every region, including the new billing ones?",
        "history": [],
    }
    shown = render.to_text(
        render.requests_table([asked], now, names={"agt_aaaaaaaaaaaaaaaa": "worker-2"}), width=80
    )
    rows = [line for line in shown.splitlines() if "req_" in line]
    assert len(rows) == 1
    assert "req_fkc3ntya73yq2mgg" in rows[0]
    assert rows[0].rstrip().endswith("…")
    assert max(len(line) for line in shown.splitlines()) <= 80
