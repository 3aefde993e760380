"""Outcomes on every page, over HTTP on the in-memory app with a moved clock: a request's page
shows its whole life (asked, decided with the answer readable, redeemed, each execution report
and the result); a fired switch's page says what its death did in words; a session's page its
status, progress and step; and a conversation's files download through the same authority as
the conversation, as attachments, never shown inline."""

from __future__ import annotations

import base64
import html
import re
from typing import Any

import pytest

from tests.integration.test_console_states import page, signed_in
from tests.liveness_support import World
from vigil.attachments.records import MAX_INLINE_BYTES
from vigil.clock import ManualClock

ACTION = {"deploy": "billing-api", "version": "1.2.3", "to": "prod"}
SCOPE = "acme-job-17"


@pytest.fixture
def world(clock: ManualClock) -> World:
    return World(clock)


def section_of(body: str, ident: str) -> str:
    opening = rf'<section aria-labelledby="{ident}-title" id="{ident}">'
    found = re.search(rf"{opening}.*?</section>", body, re.S)
    assert found is not None, f"no section {ident}"
    return found.group(0)


# -- a request's whole life ------------------------------------------------------------------------
@pytest.fixture
def executed(world: World) -> dict[str, Any]:
    """An approval that Pat approved and the agent ann redeemed, started and saw succeed."""
    pat, pat_secret = world.tenant.register(kind="person", name="Pat Doe")
    ann, ann_secret = world.tenant.register(name="ann")
    asked = world.call(
        "ask",
        ann_secret,
        target={"kind": "person", "id": pat},
        kind="approval",
        body="May I deploy billing-api 1.2.3 to prod?",
        action=ACTION,
        title="Deploy billing-api 1.2.3 to prod",
    )
    world.advance(60)
    world.call("reply", pat_secret, id=asked["id"], version=1, outcome="approved")
    world.advance(5)
    intent = world.call("redeem_approval", ann_secret, id=asked["id"], action=ACTION)
    world.advance(1)
    world.call("report_execution", ann_secret, id=intent["id"], state="started")
    world.advance(30)
    world.call(
        "report_execution",
        ann_secret,
        id=intent["id"],
        state="succeeded",
        result={"release": "r-42", "note": "rolled out"},
    )
    return {
        "id": asked["id"],
        "pat": pat,
        "ann": ann,
        "pat_secret": pat_secret,
        "ann_secret": ann_secret,
        "execution_id": intent["id"],
    }


def test_get_request_carries_the_redemption_and_the_reports(
    world: World, executed: dict[str, Any]
) -> None:
    for secret in (executed["pat_secret"], executed["ann_secret"]):
        execution = world.call("get_request", secret, id=executed["id"])["execution"]
        assert execution["id"] == executed["execution_id"]
        assert (execution["state"], execution["redeemed_by"]) == ("succeeded", executed["ann"])
        assert [r["state"] for r in execution["reports"]] == ["started", "succeeded"]
        assert execution["result"] == {"release": "r-42", "note": "rolled out"}


def test_a_request_not_redeemed_has_no_execution(world: World) -> None:
    pat, pat_secret = world.tenant.register(kind="person", name="Pat Doe")
    _, ann_secret = world.tenant.register(name="ann")
    asked = world.call(
        "ask",
        ann_secret,
        target={"kind": "person", "id": pat},
        kind="approval",
        body="May I?",
        action=ACTION,
    )
    assert world.call("get_request", pat_secret, id=asked["id"])["execution"] is None
    world.call("reply", pat_secret, id=asked["id"], version=1, outcome="approved")
    assert world.call("get_request", pat_secret, id=asked["id"])["execution"] is None


def test_get_request_reads_an_execution_only_where_one_can_be(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    pat, pat_secret = world.tenant.register(kind="person", name="Pat Doe")
    _, ann_secret = world.tenant.register(name="ann")
    reads: list[str] = []
    read = world.store.get_execution

    def counted(namespace: str, request_id: str) -> Any:
        reads.append(request_id)
        return read(namespace, request_id)

    monkeypatch.setattr(world.store, "get_execution", counted)
    target = {"kind": "person", "id": pat}
    question = world.call("ask", ann_secret, target=target, body="Which region?")
    bare = world.call("ask", ann_secret, target=target, kind="approval", body="Fine?")
    bound = world.call(
        "ask", ann_secret, target=target, kind="approval", body="May I?", action=ACTION
    )
    for asked, outcome in ((question, "answered"), (bare, "approved"), (bound, "approved")):
        world.call("get_request", pat_secret, id=asked["id"])
        world.call(
            "reply",
            pat_secret,
            id=asked["id"],
            version=1,
            outcome=outcome,
            answer="eu" if outcome == "answered" else None,
        )
        world.call("get_request", pat_secret, id=asked["id"])
    assert reads == [bound["id"]]


def test_a_request_page_shows_its_whole_life(world: World, executed: dict[str, Any]) -> None:
    body = page(signed_in(world, executed["pat_secret"]), "/console/request", id=executed["id"])
    decision = section_of(body, "outcome")
    assert '<span class="badge state-approved">approved</span>' in decision
    assert f'Pat Doe <small class="meta id">{executed["pat"]}</small>' in decision
    execution = section_of(body, "execution")
    assert '<span class="badge state-succeeded">succeeded</span>' in execution
    assert f'ann <small class="meta id">{executed["ann"]}</small>' in execution
    reports = re.findall(r"<tr><td[^>]*>(?:<span[^>]*>)?(started|succeeded)", execution)
    assert reports == ["started", "succeeded"]
    # The result as an action is shown: canonical JSON, keys sorted, escaped.
    result = '{\n  "note": "rolled out",\n  "release": "r-42"\n}'
    assert html.escape(result, quote=True) in execution
    assert "&quot;outcome&quot;" not in body  # no raw JSON block of the response


def test_an_answer_reads_as_text_and_a_json_one_as_canonical_json(world: World) -> None:
    pat, pat_secret = world.tenant.register(kind="person", name="Pat Doe")
    _, ann_secret = world.tenant.register(name="ann")
    texts = world.call(
        "ask", ann_secret, target={"kind": "person", "id": pat}, body="Which region?"
    )
    world.call(
        "reply", pat_secret, id=texts["id"], version=1, outcome="answered", answer="eu-west-1"
    )
    said = section_of(
        page(signed_in(world, pat_secret), "/console/request", id=texts["id"]), "outcome"
    )
    assert '<p class="body">eu-west-1</p>' in said
    task = world.call(
        "ask",
        ann_secret,
        conversation_id=texts["conversation_id"],
        kind="task",
        body="Count the rows",
    )
    world.call(
        "reply",
        pat_secret,
        id=task["id"],
        version=1,
        outcome="completed",
        answer={"rows": 3, "hidden\u200b": True},
    )
    said = section_of(
        page(signed_in(world, pat_secret), "/console/request", id=task["id"]), "outcome"
    )
    assert '<span class="badge state-completed">completed</span>' in said
    assert "U+200B ZERO WIDTH SPACE" in said
    assert "\u200b" not in said


def test_an_approval_not_yet_redeemed_says_so(world: World) -> None:
    pat, pat_secret = world.tenant.register(kind="person", name="Pat Doe")
    _, ann_secret = world.tenant.register(name="ann")
    asked = world.call(
        "ask",
        ann_secret,
        target={"kind": "person", "id": pat},
        kind="approval",
        body="May I?",
        action=ACTION,
    )
    world.call("reply", pat_secret, id=asked["id"], version=1, outcome="approved")
    body = page(signed_in(world, pat_secret), "/console/request", id=asked["id"])
    assert "Not redeemed yet" in section_of(body, "execution")


# -- a switch's deaths -----------------------------------------------------------------------------
def test_a_fired_switchs_page_says_what_its_death_did(world: World) -> None:
    _, person_secret = world.tenant.register(kind="person", name="Pat")
    agent, agent_secret = world.tenant.register(name="builder")
    watcher, _ = world.tenant.register(name="watcher")
    world.call("acquire_lease", agent_secret, resource="repo:main", scope=SCOPE, ttl_seconds=600)
    world.call("acquire_lease", agent_secret, resource="unscoped", ttl_seconds=600)
    world.call(
        "heartbeat",
        agent_secret,
        scope=SCOPE,
        expect_within_seconds=3,
        on_expiry=["queue_alert", "release_leases", "mark_failed"],
        notify_address=f"agent:{watcher}",
    )
    world.advance(4)
    body = page(signed_in(world, person_secret), "/console/switch", scope=SCOPE)
    death = section_of(body, "death")
    assert "<pre" not in death
    assert "Released 1 lease: repo:main (generation 1)" in death
    assert "1 lease of the holder without a scope was left alone" in death
    assert "Its work was marked failed" in death
    assert f'watcher <small class="meta id">{watcher}</small>' in death
    assert re.search(r"late by \d\.\d{3} s", death)
    assert f'builder <small class="meta id">{agent}</small>' in death
    # Actions read as words, which a narrow table wraps between, never inside a name.
    assert "release leases, mark failed, queue alert" in body
    assert "mark_failed" not in body


# -- a session's status ----------------------------------------------------------------------------
def test_a_sessions_page_shows_its_status_progress_and_step(world: World) -> None:
    _, person_secret = world.tenant.register(kind="person", name="Pat")
    agent, agent_secret = world.tenant.register(name="builder")
    world.call(
        "session_heartbeat",
        agent_secret,
        sessionId="build-5",
        status="blocked",
        progressPercent=40,
        currentStep="Compile the <docs>",
        stepIndex=2,
        stepCount=5,
        idempotencyKey="b1",
    )
    world.advance(7)
    body = page(signed_in(world, person_secret), "/console/session", id="build-5")
    status = section_of(body, "status")
    assert '<span class="badge state-blocked">blocked</span>' in status
    assert "40 %" in status
    assert "Compile the &lt;docs&gt; (2/5)" in status
    assert f'builder <small class="meta id">{agent}</small>' in status
    assert ">7 s ago</time>" in status


def test_list_instructions_carries_the_session(world: World) -> None:
    _, person_secret = world.tenant.register(kind="person", name="Pat")
    _, agent_secret = world.tenant.register(name="builder")
    world.call(
        "session_heartbeat", agent_secret, sessionId="s-1", progressPercent=10, idempotencyKey="b"
    )
    session = world.call("list_instructions", person_secret, sessionId="s-1")["session"]
    assert (session["sessionId"], session["progressPercent"]) == ("s-1", 10)


# -- files -----------------------------------------------------------------------------------------
@pytest.fixture
def shared(world: World) -> dict[str, Any]:
    """A conversation of ann and Pat with a file in it, and an outsider, Eve."""
    pat, pat_secret = world.tenant.register(kind="person", name="Pat Doe")
    _, ann_secret = world.tenant.register(name="ann")
    _, eve_secret = world.tenant.register(kind="person", name="Eve")
    sent = world.call("send", ann_secret, target={"kind": "person", "id": pat}, body="See this")
    return {
        "conversation_id": sent["conversation_id"],
        "pat_secret": pat_secret,
        "ann_secret": ann_secret,
        "eve_secret": eve_secret,
    }


def upload(world: World, shared: dict[str, Any], data: bytes, name: str, media: str) -> str:
    """A file ann sends into the conversation: staged, then claimed by a message."""
    draft = world.call(
        "stage_attachment",
        shared["ann_secret"],
        base64=base64.b64encode(data).decode(),
        file_name=name,
        media_type=media,
    )
    sent = world.call(
        "send",
        shared["ann_secret"],
        conversation_id=shared["conversation_id"],
        body="the file",
        attachment_ids=[draft["id"]],
    )
    listed = world.call("get_conversation", shared["ann_secret"], id=sent["conversation_id"])
    return str(listed["messages"][-1]["attachments"][0]["id"])


def test_a_file_in_a_conversation_has_a_download_link(world: World, shared: dict[str, Any]) -> None:
    file_id = upload(world, shared, b"a,b\n1,2\n", "rows.csv", "text/csv")
    body = page(
        signed_in(world, shared["pat_secret"]),
        "/console/conversation",
        id=shared["conversation_id"],
    )
    assert f'<a href="/console/attachment?id={file_id}" download>rows.csv</a>' in body


def test_a_small_file_downloads_as_an_attachment(world: World, shared: dict[str, Any]) -> None:
    data = b"a,b\n1,2\n"
    file_id = upload(world, shared, data, 'r\u00e9sum\u00e9 "q".csv', "text/csv; charset=utf-8")
    got = signed_in(world, shared["pat_secret"]).get("/console/attachment", id=file_id)
    assert got.status == 200
    assert got.body == data
    assert got.headers["content-type"] == "text/csv"
    assert got.headers["x-content-type-options"] == "nosniff"
    disposition = got.headers["content-disposition"]
    assert disposition.startswith('attachment; filename="r_sum_ _q_.csv"; ')
    assert "filename*=UTF-8''r%C3%A9sum%C3%A9%20%22q%22.csv" in disposition


@pytest.mark.parametrize(
    "media", ["text/html", "image/svg+xml", "application/xhtml+xml", "text/javascript"]
)
def test_a_file_that_a_browser_could_run_downloads_as_bytes(
    world: World, shared: dict[str, Any], media: str
) -> None:
    file_id = upload(world, shared, b"<script>alert(1)</script>", "x.html", media)
    got = signed_in(world, shared["pat_secret"]).get("/console/attachment", id=file_id)
    assert got.status == 200
    assert got.headers["content-type"] == "application/octet-stream"
    assert got.headers["content-disposition"].startswith("attachment;")


def test_a_large_file_redirects_to_its_presigned_url(world: World, shared: dict[str, Any]) -> None:
    begun = world.call(
        "begin_attachment_upload",
        shared["ann_secret"],
        file_name="big.bin",
        media_type="application/zip",
    )
    data = b"\x01" * (MAX_INLINE_BYTES + 1)
    world.blobs.objects[begun["upload"]["fields"]["key"]] = data
    draft = world.call(
        "finish_attachment_upload", shared["ann_secret"], id=begun["attachment"]["id"]
    )
    world.call(
        "send",
        shared["ann_secret"],
        conversation_id=shared["conversation_id"],
        body="the big one",
        attachment_ids=[draft["id"]],
    )
    [listed] = [
        a
        for a in world.call(
            "list_attachments", shared["pat_secret"], conversation_id=shared["conversation_id"]
        )["attachments"]
        if a["file_name"] == "big.bin"
    ]
    got = signed_in(world, shared["pat_secret"]).get("/console/attachment", id=listed["id"])
    assert got.status == 303
    assert got.headers["location"].startswith("memory://files/")
    assert got.body == b""


def test_no_one_outside_the_conversation_downloads_its_file(
    world: World, shared: dict[str, Any]
) -> None:
    data = b"secret figures"
    file_id = upload(world, shared, data, "figures.txt", "text/plain")
    for path_id in (file_id, "att_aaaaaaaaaaaaaaaa", ""):
        got = signed_in(world, shared["eve_secret"]).get("/console/attachment", id=path_id)
        assert got.status == 404
        assert data not in got.body
        assert "content-disposition" not in got.headers
    signed_out = signed_in(world, shared["pat_secret"])
    signed_out.jar.clear()
    got = signed_out.get("/console/attachment", id=file_id)
    assert got.status == 303
    assert data not in got.body
