"""The web console in a real browser: Debian's Chromium, headless, driven by Playwright, against
the local runtime. A person signs in; a switch an agent armed for 3 s fires on the overview
without a reload; an instruction posted from the session page reaches the agent on its next
beat and the page follows it from pending to delivered to acknowledged; an approval headed by
its title, its people by name, is granted with the bound action shown as it is redeemed and
confirmed on a second page that shows it again, and the agent redeems it and reports it
succeeded, which the request page shows without a reload. The API page at /docs
lists every operation of the OpenAPI document, from this origin alone. An unbroken 8 KiB
instruction wraps instead of widening the page, on a phone and on a laptop; the instruction form
counts the bytes typed, cuts nothing, and the refusal of one over the limit is on the page. An
operator creates a webhook channel (its signing secret shown once) and pauses a prefix after
confirming, on a laptop and on a phone. Every page of the console, at 1280x800 and at 390x844,
is no wider than the screen and passes axe-core's audit with no serious or critical finding.

Screenshots of every page go to ``test-output/console/`` (``VIGIL_TEST_OUTPUT`` moves it). The
browser is never downloaded: ``VIGIL_CHROMIUM`` or /usr/bin/chromium (``make test`` installs
Debian's package); axe-core is the version tests/e2e/package-lock.json pins, which ``make tools``
installs under .tools/node (``VIGIL_NODE_TOOLS`` moves it). Waits poll with deadlines, never
sleep blind.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from vigil.kit.uow import UnitOfWork
from vigil.notifications.records import AccountLink
from vigil.stores.dynamo import DynamoStore

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("VIGIL_TEST_OUTPUT", REPO / "test-output")) / "console"
NODE_TOOLS = Path(os.environ.get("VIGIL_NODE_TOOLS", REPO / ".tools" / "node"))
AXE = NODE_TOOLS / "node_modules" / "axe-core" / "axe.min.js"
# A host's PKCE verifier, for the sign-in on the tour.
VERIFIER = b"tour-verifier-0123456789-abcdefghijklmnopqrstuvwxyz"
DEPLOY = {"op": "deploy", "service": "checkout", "version": "1.2.3", "regions": ["eu", "us"]}


def chromium_path() -> str:
    path = os.environ.get("VIGIL_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        pytest.fail(f"no Chromium at {path}: `make test` installs Debian's chromium package")
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium_path(), args=["--no-sandbox", "--disable-gpu"]
        )
        yield launched
        launched.close()


def rest(state: dict[str, Any], secret: str, tool: str, /, **arguments: Any) -> dict[str, Any]:
    request = urllib.request.Request(
        state["mcp_url"].removesuffix("/mcp") + f"/v1/{tool}",
        data=json.dumps(arguments).encode(),
        headers={"authorization": f"Bearer {secret}", "content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            result: dict[str, Any] = json.loads(response.read())
    except urllib.error.HTTPError as error:
        raise AssertionError(f"{tool}: {error.code} {error.read().decode()}") from None
    return result


def register(state: dict[str, Any], kind: str, name: str) -> tuple[str, str]:
    made = rest(state, state["operator_secret"], "register", kind=kind, name=name)
    return made["principal"]["id"], made["secret"]


# What a screen reader needs of every page: a main heading, a name for every control and a
# caption for every table.
UNLABELLED = """() => {
  const found = [];
  if (!document.querySelector("main h1")) found.push("no h1 in main");
  for (const el of document.querySelectorAll("input:not([type=hidden]), select, textarea")) {
    const named = (el.labels && el.labels.length) || el.getAttribute("aria-label");
    if (!named) found.push(el.outerHTML);
  }
  for (const el of document.querySelectorAll("button, a")) {
    if (!el.textContent.trim() && !el.getAttribute("aria-label")) found.push(el.outerHTML);
  }
  for (const el of document.querySelectorAll("table")) {
    if (!el.querySelector("caption") || !el.querySelector("th[scope=col]")) found.push("a table");
  }
  return found;
}"""


def shot(page: Page, name: str) -> None:
    """A screenshot of the page, once it is checked for what a screen reader needs."""
    assert page.evaluate(UNLABELLED) == [], name
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def fits(page: Page) -> None:
    """The page scrolls only up and down: nothing makes it wider than the window."""
    wide, width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    if wide > width:
        shot(page, "too-wide")
    assert wide <= width, f"{page.url} is {wide} px wide at {width} px"


# axe-core's findings that fail a page: those it rates serious or critical, each with the rule,
# what it asks for and where on the page it is broken.
SERIOUS_FINDINGS = """async () => {
  const found = (await axe.run(document, {resultTypes: ["violations"]})).violations;
  return found.filter(v => v.impact === "serious" || v.impact === "critical").map(v =>
    `${v.impact} ${v.id}: ${v.help} (${v.nodes.length} on the page: ` +
    v.nodes.slice(0, 4).map(n => n.target.join(" ")).join("; ") + ")");
}"""


# What a finger taps (the navigation, buttons and the link beside them, form controls, a
# box's label) and is smaller than 44 px either way.
SMALL_TARGETS = """() => {
  const found = [];
  const tapped = "nav a, button, .decision a, input:not([type=hidden]), select, textarea";
  for (const el of document.querySelectorAll(tapped)) {
    if (!el.checkVisibility()) continue;
    const box = (["checkbox", "radio"].includes(el.type) ? el.labels[0] : el)
      .getBoundingClientRect();
    if (box.width < 44 || box.height < 44) {
      const size = `${Math.round(box.width)}x${Math.round(box.height)}`;
      found.push(`${el.outerHTML.slice(0, 100)}: ${size}`);
    }
  }
  return found;
}"""

# Where the keyboard's order through the header (the order of the page) differs from the
# order a reader sees it in: each stop must be on the row of the one before it and to its
# right, or on a row below.
OUT_OF_ORDER = """() => {
  const found = [];
  const stops = [...document.querySelectorAll("header a, header button")];
  for (let i = 1; i < stops.length; i++) {
    const before = stops[i - 1].getBoundingClientRect();
    const next = stops[i].getBoundingClientRect();
    const sameRow = next.top < before.bottom && before.top < next.bottom;
    if (sameRow ? next.left < before.left : next.top < before.top) {
      found.push(`${stops[i - 1].textContent} before ${stops[i].textContent}`);
    }
  }
  return found;
}"""


def audited(page: Page, name: str) -> None:
    """A screenshot of the page, once it is checked for what a screen reader needs, for width
    (no sideways scrolling), for targets big enough to tap, for a keyboard that goes through
    the header in the order it is seen, and by axe-core. The audit is evaluated through the
    browser's debugger protocol, which the page's Content-Security-Policy does not govern: the
    console's policy stays as strict under test as it is in use."""
    fits(page)
    assert page.evaluate(SMALL_TARGETS) == [], f"{name}: too small to tap"
    assert page.evaluate(OUT_OF_ORDER) == [], f"{name}: the keyboard goes out of order"
    if not AXE.exists():
        pytest.fail(f"no axe-core at {AXE}: `make tools` installs it")
    if not page.evaluate("typeof window.axe === 'object'"):
        page.evaluate(AXE.read_text())
    findings = page.evaluate(SERIOUS_FINDINGS)
    assert findings == [], f"{name} at {page.url}:\n" + "\n".join(findings)
    shot(page, name)


def sign_in(page: Page, base: str, secret: str) -> None:
    page.goto(f"{base}/console")
    expect(page).to_have_url(f"{base}/console/sign-in?next=%2Fconsole")
    shot(page, "sign-in")
    page.get_by_label("Your secret").fill(secret)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{base}/console")
    expect(page.get_by_role("heading", name="Overview", level=1)).to_be_visible()


def mark(page: Page) -> None:
    """Leaves a value in the page that a reload would lose."""
    page.evaluate("window.__notReloaded = true")


def not_reloaded(page: Page) -> bool:
    return bool(page.evaluate("window.__notReloaded === true"))


def test_a_person_watches_steers_and_approves_in_the_browser(
    state: dict[str, Any], browser: Browser
) -> None:
    base = state["mcp_url"].removesuffix("/mcp")
    person_id, person_secret = register(state, "person", "Pat")
    agent_id, agent_secret = register(state, "agent", "builder")
    page = browser.new_context(base_url=base).new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    # Sign in: the secret goes in the form once; the browser keeps only the session cookie.
    sign_in(page, base, person_secret)
    (cookie,) = [c for c in page.context.cookies() if c["name"] == "__Host-vigil-console"]
    assert (cookie["httpOnly"], cookie["secure"], cookie["sameSite"]) == (True, True, "Strict")
    assert person_secret not in cookie["value"]
    assert page.evaluate("document.cookie") == ""  # no script can read it
    assert page.evaluate("JSON.stringify(localStorage) + JSON.stringify(sessionStorage)") == (
        "{}{}"
    )

    # A 3 s switch fires on the overview while the page stays as it is.
    scope = "browser/deploy-checkout"
    rest(
        state,
        agent_secret,
        "heartbeat",
        scope=scope,
        expect_within_seconds=3,
        on_expiry=["mark_failed"],
        agent_id="builder-1",
    )
    page.reload()
    mark(page)
    armed = page.locator("#armed-switches")
    expect(armed).to_contain_text(scope)
    expect(armed.locator(".countdown")).to_have_count(1)
    shot(page, "overview-armed")
    fired = page.locator("#fired-switches")
    expect(fired).to_contain_text(scope, timeout=20_000)
    expect(fired).to_contain_text("mark failed")
    expect(page.locator("#count-fired")).to_have_text("1")
    assert not_reloaded(page), "the overview reloaded instead of refreshing itself"
    shot(page, "overview-fired")

    # The switch's own page: state, holder, its death and its lateness.
    page.get_by_role("link", name=scope).first.click()
    expect(page.get_by_role("heading", name=scope, level=1)).to_be_visible()
    expect(page.locator("dl.facts").first).to_contain_text("failed")
    # Its death in words: whose it was, how late it fired, what it did.
    expect(page.locator("#death")).to_contain_text("Its work was marked failed.")
    expect(page.locator("#death")).to_contain_text("late by")
    expect(page.locator("#death")).to_contain_text("builder (builder-1)")
    expect(page.locator("#history")).to_contain_text(agent_id)
    expect(page.locator("#history")).to_contain_text("builder (builder-1)")
    shot(page, "switch")
    page.goto(f"{base}/console/switches")
    expect(page.locator("table")).to_contain_text(scope)
    shot(page, "switches")

    # An instruction from the session page reaches the agent on its next beat.
    session_id = "browser-session-1"
    rest(
        state,
        agent_secret,
        "session_heartbeat",
        sessionId=session_id,
        status="active",
        idempotencyKey="beat-1",
    )
    page.goto(f"{base}/console/sessions")
    expect(page.locator("table")).to_contain_text(session_id)
    shot(page, "sessions")
    page.get_by_role("link", name=session_id).click()
    expect(page.locator("#status")).to_contain_text("active")
    page.get_by_label("New instruction").fill("Stop after the current step, please.")
    page.get_by_role("button", name="Post instruction").click()
    instructions = page.locator("#instructions")
    expect(instructions).to_contain_text("Stop after the current step, please.")
    expect(instructions.locator("[data-instruction]")).to_have_text("pending")
    mark(page)
    beat = rest(
        state,
        agent_secret,
        "session_heartbeat",
        sessionId=session_id,
        progressPercent=50,
        currentStep="Render the report",
        stepIndex=2,
        stepCount=4,
        idempotencyKey="beat-2",
    )
    (received,) = beat["instructions"]
    assert received["body"] == "Stop after the current step, please."
    expect(instructions.locator("[data-instruction]")).to_have_text("delivered", timeout=10_000)
    expect(page.locator("#status")).to_contain_text("50 %")
    expect(page.locator("#status")).to_contain_text("Render the report (2/4)")
    rest(
        state,
        agent_secret,
        "session_heartbeat",
        sessionId=session_id,
        acknowledgedInstructionIds=[received["id"]],
        idempotencyKey="beat-3",
    )
    expect(instructions.locator("[data-instruction]")).to_have_text("acknowledged", timeout=10_000)
    assert not_reloaded(page)
    shot(page, "session")

    # An approval: the bound action is on the page as it is redeemed (canonical, its keys
    # sorted), before the button.
    asked = rest(
        state,
        agent_secret,
        "ask",
        target={"kind": "person", "id": person_id},
        title="Deploy checkout 1.2.3",
        body="May I deploy checkout 1.2.3?",
        kind="approval",
        action=DEPLOY,
        idempotency_key="browser-deploy",
    )
    rest(
        state, agent_secret, "heartbeat", scope="browser/nightly-report", expect_within_seconds=900
    )
    page.goto(f"{base}/console")
    expect(page.locator("#count-waiting")).to_have_text("1", timeout=10_000)
    expect(page.locator("#armed-switches")).to_contain_text("browser/nightly-report")
    shot(page, "overview")
    page.get_by_role("link", name="May I deploy checkout 1.2.3?").click()
    shown = json.dumps(DEPLOY, indent=2, sort_keys=True)
    # Headed by its title, who asked it by name, and that it is the reader's to decide.
    expect(page.get_by_role("heading", name="Deploy checkout 1.2.3", level=1)).to_be_visible()
    expect(page.locator("dl.facts")).to_contain_text("Asked by")
    expect(page.locator("dl.facts")).to_contain_text("builder")
    expect(page.locator("dl.facts")).to_contain_text("Yours to decide")
    expect(page.locator("dl.facts")).not_to_contain_text("Decided by")
    expect(page.locator("#action pre")).to_have_text(shown)
    shot(page, "request-open")
    # Approve asks again, with the action once more; only "Yes, approve" decides.
    page.get_by_role("button", name="Approve").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Approve “Deploy checkout 1.2.3”?")
    expect(page.locator("#confirm pre")).to_have_text(shown)
    assert rest(state, agent_secret, "get_request", id=asked["id"])["state"] == "open"
    shot(page, "request-confirm")
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "request-confirm-390")
    page.set_viewport_size({"width": 1280, "height": 800})
    page.get_by_role("button", name="Yes, approve").click()
    facts = page.locator("dl.facts").first
    expect(facts).to_contain_text("approved")
    expect(facts).to_contain_text("Decided by")
    expect(facts).to_contain_text("Pat")
    expect(page.get_by_role("button", name="Approve")).to_have_count(0)
    expect(page.locator("#execution")).to_contain_text("Not redeemed yet")
    shot(page, "request-approved")
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "request-approved-390")
    page.set_viewport_size({"width": 1280, "height": 800})
    # The agent redeems and reports; the request page tells the person how it went.
    intent = rest(state, agent_secret, "redeem_approval", id=asked["id"], action=DEPLOY)
    assert intent["state"] == "intended"
    rest(state, agent_secret, "report_execution", id=intent["id"], state="started")
    rest(
        state,
        agent_secret,
        "report_execution",
        id=intent["id"],
        state="succeeded",
        result="checkout 1.2.3 is live in eu and us",
    )
    execution = page.locator("#execution")
    expect(execution.locator("dl.facts")).to_contain_text("succeeded", timeout=15_000)
    expect(execution).to_contain_text("checkout 1.2.3 is live in eu and us")
    expect(execution).to_contain_text("builder")
    expect(execution.locator("tbody tr")).to_have_count(2)
    shot(page, "request-executed")
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "request-executed-390")
    page.set_viewport_size({"width": 1280, "height": 800})

    page.goto(f"{base}/console/requests?show=all")
    expect(page.locator("#requests")).to_contain_text("approved")
    shot(page, "requests")
    page.goto(f"{base}/console/conversation?id={asked['conversation_id']}")
    expect(page.locator(".messages")).to_contain_text("May I deploy checkout 1.2.3?")
    page.get_by_label("Reply").fill("Go ahead; watch the error rate.")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".messages")).to_contain_text("Go ahead; watch the error rate.")
    # Authors by name, the reader's own as "you".
    expect(page.locator(".messages strong")).to_have_text([f"builder {agent_id}", "you"])
    shot(page, "conversation")
    page.goto(f"{base}/console/conversations")
    shot(page, "conversations")
    page.goto(f"{base}/console/runs?scope={scope}")
    expect(page.locator("#holders")).to_be_visible()
    shot(page, "runs")

    # Keyboard: the skip link is the first stop and lands on the main content.
    page.goto(f"{base}/console")
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()

    # Sign out: the cookie goes, and the pages ask for a secret again.
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(f"{base}/console/sign-in")
    assert not [c for c in page.context.cookies() if c["name"] == "__Host-vigil-console"]
    page.goto(f"{base}/console/sessions")
    expect(page.get_by_label("Your secret")).to_be_visible()
    assert errors == [], errors


def test_the_api_page_renders_every_operation_from_this_origin_alone(
    state: dict[str, Any], browser: Browser
) -> None:
    """/docs on the local runtime: Swagger UI from the pinned package lists the REST mirror's
    operations, under the page's strict policy, with no error and no request to another origin."""
    base = state["mcp_url"].removesuffix("/mcp")
    page = browser.new_context().new_page()
    errors: list[str] = []
    requested: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requested.append(r.url))

    page.goto(f"{base}/docs")
    expect(page.locator(".opblock").first).to_be_visible()
    expect(page.locator(".opblock-summary-path", has_text="/v1/register")).to_have_count(1)
    expect(page.locator(".info .title")).to_contain_text("Vigil")
    # Swagger UI reads the 3.1 document without a parse or resolver error.
    expect(page.locator(".errors-wrapper")).to_have_count(0)
    # Every operation of the document is listed, and one opens to show its request body.
    document = json.loads(urllib.request.urlopen(f"{base}/openapi.json", timeout=30).read())
    expect(page.locator(".opblock")).to_have_count(len(document["paths"]))
    page.locator(".opblock-summary", has_text="/v1/register").click()
    expect(page.locator(".opblock-body").first).to_contain_text("Request body")

    # "Try it out" calls the API from the page's origin, which the local runtime allows.
    status = page.evaluate(
        """async (secret) => (await fetch("/v1/whoami", {method: "POST", body: "{}",
            headers: {"content-type": "application/json", authorization: "Bearer " + secret}})
        ).status""",
        state["operator_secret"],
    )
    assert status == 200

    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "api-docs.png"))
    assert errors == []
    assert requested
    assert [url for url in requested if not url.startswith(f"{base}/")] == []
    assert f"{base}/openapi.json" in requested


@pytest.mark.parametrize("width", [390, 1280])
def test_an_unbroken_instruction_never_makes_the_page_wider_than_the_screen(
    state: dict[str, Any], browser: Browser, width: int
) -> None:
    """8 KiB without a space, and a 500-character step, on a phone and on a laptop: the text
    wraps, and no page of the session scrolls sideways."""
    base = state["mcp_url"].removesuffix("/mcp")
    _, person_secret = register(state, "person", f"Reader at {width}")
    _, agent_secret = register(state, "agent", f"writer-{width}")
    session = f"unbroken-{width}"
    rest(
        state,
        agent_secret,
        "session_heartbeat",
        sessionId=session,
        currentStep="s" * 500,
        idempotencyKey=session,
    )
    rest(state, person_secret, "post_instruction", sessionId=session, body="x" * 8192)
    page = browser.new_context(viewport={"width": width, "height": 900}).new_page()
    sign_in(page, base, person_secret)
    for path in (f"/console/session?id={session}", "/console/sessions"):
        page.goto(f"{base}{path}")
        expect(page.locator("#live table")).to_be_visible()
        wide = page.evaluate("document.documentElement.scrollWidth")
        assert wide <= width, f"{path} is {wide} px wide at {width} px"
    shot(page, f"sessions-{width}")


def test_an_instruction_over_the_limit_is_counted_kept_and_refused_out_loud(
    state: dict[str, Any], browser: Browser
) -> None:
    """The form says the limit and counts bytes as they are typed; 9,000 characters stay 9,000
    (the browser cuts nothing) and the server refuses them with its reason on the page."""
    base = state["mcp_url"].removesuffix("/mcp")
    _, person_secret = register(state, "person", "Verbose")
    _, agent_secret = register(state, "agent", "listener")
    rest(state, agent_secret, "session_heartbeat", sessionId="limits", idempotencyKey="limits")
    page = browser.new_context().new_page()
    sign_in(page, base, person_secret)
    page.goto(f"{base}/console/session?id=limits")
    expect(page.locator("#body-limit")).to_contain_text("Up to 8192 bytes")
    field = page.get_by_label("New instruction")
    field.fill("é" * 10)
    expect(page.locator('[data-usage-of="body"]')).to_have_text("20 of 8192 bytes used.")
    field.fill("y" * 9000)
    assert page.evaluate("document.getElementById('body').value.length") == 9000
    expect(page.locator('[data-usage-of="body"]')).to_have_text(
        "808 bytes over the limit: it would be refused."
    )
    page.get_by_role("button", name="Post instruction").click()
    expect(page.get_by_role("alert")).to_contain_text("invalid_argument")
    expect(page.get_by_role("alert")).to_contain_text("8192")
    listed = rest(state, person_secret, "list_instructions", sessionId="limits")
    assert listed["instructions"] == []  # refused, and nothing was cut and posted


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
def test_an_operator_creates_a_webhook_channel_and_pauses_a_prefix(
    state: dict[str, Any], browser: Browser, width: int, height: int
) -> None:
    base = state["mcp_url"].removesuffix("/mcp")
    _, agent_secret = register(state, "agent", f"backup-{width}")
    scope = f"ops-{width}/backup-nightly"
    rest(state, agent_secret, "heartbeat", scope=scope, expect_within_seconds=900)
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{base}/console")
    page.get_by_label("Your secret").fill(state["operator_secret"])
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{base}/console")

    # A webhook for two events under a prefix; the page that answers shows its secret once.
    name = f"Pager receiver {width}"
    page.goto(f"{base}/console/channels")
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Kind").select_option("webhook")
    page.get_by_label("URL").fill("https://receiver.example.com/vigil")
    page.get_by_label("request.opened").check()
    page.get_by_label("Only for scopes beginning with").fill(f"ops-{width}/")
    expect(page.get_by_text("Repeats and escalation")).to_be_visible()
    audited(page, f"channels-new-{width}")
    page.get_by_role("button", name="Create the channel").click()
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Channel “{name}” created")
    secret = page.locator("#signing-secret").inner_text()
    assert secret.startswith("whsec_")
    audited(page, f"channel-created-{width}")

    # Never again: the channel's page says when its secret was made, not what it is.
    page.get_by_role("link", name="The channel's page", exact=True).click()
    expect(page.get_by_role("heading", name=name, level=1)).to_be_visible()
    expect(page.locator("dl.facts")).to_contain_text("switch.fired, request.opened under ops-")
    assert secret not in page.content()
    audited(page, f"channel-{width}")
    page.get_by_role("button", name="Delete").click()
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Delete “{name}”?")
    audited(page, f"channel-delete-{width}")
    page.get_by_role("link", name="Cancel").click()
    expect(page.get_by_role("heading", name=name, level=1)).to_be_visible()
    listed = rest(state, state["operator_secret"], "list_channels")["channels"]
    assert name in [c["name"] for c in listed]

    # A pause of the prefix: the confirmation lists the armed switch it would hold.
    page.goto(f"{base}/console/switches")
    page.get_by_label("Every switch whose scope begins with").fill(f"ops-{width}/")
    page.get_by_label("For at most").select_option("4")
    page.get_by_label("Reason").fill("backup window")
    audited(page, f"switches-pause-{width}")
    page.get_by_role("button", name="Pause", exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_have_text(
        f"Pause every switch under “ops-{width}/”?"
    )
    expect(page.locator("#held")).to_contain_text(scope)
    audited(page, f"pause-confirm-{width}")
    page.get_by_role("button", name="Yes, pause").click()
    expect(page).to_have_url(f"{base}/console/switches")
    pauses = page.locator("#pauses")
    expect(pauses).to_contain_text(f"ops-{width}/")
    expect(pauses).to_contain_text("backup window")
    audited(page, f"switches-paused-{width}")
    (paused,) = [
        p
        for p in rest(state, state["operator_secret"], "list_pauses")["pauses"]
        if p["scope_prefix"] == f"ops-{width}/"
    ]
    assert paused["reason"] == "backup window"
    page.get_by_role("button", name=f"Resume ops-{width}/").click()
    expect(page).to_have_url(f"{base}/console/switches")
    expect(pauses).not_to_contain_text(f"ops-{width}/")
    assert errors == [], errors


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
def test_every_page_fits_the_screen_and_passes_the_accessibility_audit(
    state: dict[str, Any], browser: Browser, width: int, height: int
) -> None:
    """Each page the console has, filled as it is after a day's use (a fired switch and an armed
    one, a session with a long step, an approval with its action, a conversation, a channel, a
    pause), and the pages that confirm a decision or a pause: none scrolls sideways, axe-core
    finds nothing serious or critical, and each is photographed."""
    base = state["mcp_url"].removesuffix("/mcp")
    operator = rest(state, state["operator_secret"], "whoami")["principal"]["id"]
    _, agent_secret = register(state, "agent", f"release-train-{width}")
    fired = f"tour-{width}/nightly-database-backup-eu-west-1"
    armed = f"tour-{width}/deploy-checkout-service-to-production"
    rest(
        state,
        agent_secret,
        "heartbeat",
        scope=fired,
        expect_within_seconds=2,
        on_expiry=["mark_failed"],
        agent_id="release-train-worker-7",
    )
    rest(
        state,
        agent_secret,
        "heartbeat",
        scope=armed,
        expect_within_seconds=900,
        agent_id="release-train-worker-7",
    )
    # A job on a calendar, in the middle of a run.
    nightly = f"tour-{width}/weekday-report"
    for phase, terms in (
        ("finish", {"schedule": "0 2 * * 1-5", "time_zone": "Europe/Berlin"}),
        ("start", {}),
    ):
        rest(
            state,
            agent_secret,
            "heartbeat",
            scope=nightly,
            expect_within_seconds=900,
            phase=phase,
            **terms,
        )
    session = f"tour-session-{width}"
    rest(
        state,
        agent_secret,
        "session_heartbeat",
        sessionId=session,
        status="active",
        progressPercent=35,
        currentStep="Migrating the orders table, batch 14 of 40",
        idempotencyKey=session,
    )
    asked = rest(
        state,
        agent_secret,
        "ask",
        target={"kind": "person", "id": operator},
        title=f"Deploy checkout 1.2.3 ({width})",
        body="May I deploy checkout 1.2.3?",
        kind="approval",
        action=DEPLOY,
        idempotency_key=f"tour-{width}",
    )
    # A standing approval the operator granted with an approval, for its listing.
    restart = rest(
        state,
        agent_secret,
        "ask",
        target={"kind": "person", "id": operator},
        title=f"Restart checkout ({width})",
        body="May I restart checkout?",
        kind="approval",
        action={"op": "restart", "service": "checkout", "replicas": 3},
        idempotency_key=f"tour-restart-{width}",
    )
    rest(
        state,
        state["operator_secret"],
        "reply",
        id=restart["id"],
        version=restart["version"],
        outcome="approved",
        standing={"hours": 8, "uses": 5, "free": {"replicas": {"min": 1, "max": 6}}},
    )
    # A request the operator has in hand, and a routing rule for this agent's asks.
    claimed = rest(
        state,
        agent_secret,
        "ask",
        target={"kind": "person", "id": operator},
        title=f"Rotate the checkout keys ({width})",
        body="May I rotate the checkout keys?",
        kind="approval",
        action={"op": "rotate", "service": "checkout"},
        idempotency_key=f"tour-claimed-{width}",
    )
    rest(state, state["operator_secret"], "claim_request", id=claimed["id"], minutes=45)
    agent_id = rest(state, agent_secret, "whoami")["principal"]["id"]
    routing = rest(state, state["operator_secret"], "routing_rules")
    rest(
        state,
        state["operator_secret"],
        "routing_rules",
        rules=[{"asker": agent_id, "op": "restart", "to": [operator], "minutes": 30}],
        version=routing["version"],
    )
    channel = rest(
        state,
        state["operator_secret"],
        "create_channel",
        name=f"Pager {width}",
        kind="webhook",
        url="https://receiver.example.com/vigil",
        rules=[{"events": ["switch.fired"], "scope_prefix": f"tour-{width}/"}],
    )
    rest(
        state,
        state["operator_secret"],
        "pause_switches",
        scope_prefix=f"tour-{width}/deploy",
        until_next_beat=True,
        reason="change freeze",
    )
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    page.goto(f"{base}/console")
    audited(page, f"tour-sign-in-{width}")
    page.get_by_label("Your secret").fill(state["operator_secret"])
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#fired-switches")).to_contain_text(fired, timeout=20_000)
    # The fire shows in the overview's picture of lateness, as in its table.
    expect(page.locator("#lateness svg circle.fire")).not_to_have_count(0)
    audited(page, f"tour-overview-{width}")
    pages = {
        "switches": "/console/switches",
        "switch": f"/console/switch?scope={fired}",
        "calendar-switch": f"/console/switch?scope={nightly}",
        "sessions": "/console/sessions",
        "session": f"/console/session?id={session}",
        "runs": f"/console/runs?scope={armed}",
        "requests": "/console/requests?show=all",
        "requests-open": "/console/requests",
        "requests-waiting": "/console/requests?show=waiting",
        "people": "/console/people",
        "audit": "/console/audit",
        "request": f"/console/request?id={asked['id']}",
        "standing": "/console/standing",
        "request-claimed": f"/console/request?id={claimed['id']}",
        "routing": "/console/routing",
        "conversations": "/console/conversations",
        "conversation": f"/console/conversation?id={asked['conversation_id']}",
        "channels": "/console/channels",
        "channel": f"/console/channel?id={channel['channel']['id']}",
        "dead-letters": "/console/dead-letters",
    }
    for name, path in pages.items():
        page.goto(f"{base}{path}")
        audited(page, f"tour-{name}-{width}")
    # A picture's words keep the page's size at any width; a kind is never broken in two.
    page.goto(f"{base}/console")
    sizes = page.locator("#lateness .chart-ends span").evaluate_all(
        "spans => spans.map(s => parseFloat(getComputedStyle(s).fontSize))"
    )
    assert sizes, f"{width}: no words under the lateness picture"
    assert all(13 <= size <= 17 for size in sizes), f"{width}: {sizes}"
    page.goto(f"{base}/console/requests?show=all")
    lines = page.locator('td[data-label="Kind"]').evaluate_all(
        "cells => cells.map(c => { const r = document.createRange(); r.selectNodeContents(c);"
        " return r.getClientRects().length; })"
    )
    assert lines, f"{width}: no request listed"
    assert set(lines) == {1}, f"{width}: a kind broken across lines: {lines}"
    if width < 640:
        # The navigation strip scrolls sideways, and its edge shows there is more.
        nav = page.locator("header nav")
        assert nav.evaluate("n => n.scrollWidth > n.clientWidth")
        assert "radial-gradient" in nav.evaluate("n => getComputedStyle(n).backgroundImage")
    # Names copied whole are never broken across lines, however narrow their column.
    page.goto(f"{base}/console/dead-letters")
    broken = page.locator("#dead-letter-queues td code").evaluate_all(
        "codes => codes.filter(c => c.getClientRects().length > 1).map(c => c.textContent)"
    )
    assert broken == [], f"{width}: broken across lines: {broken}"
    page.goto(f"{base}/console/switch?scope={fired}")
    expect(page.locator("#day svg line.death")).to_have_count(1)
    page.goto(f"{base}/console/switch?scope={nightly}")
    expect(page.locator("main")).to_contain_text("cron 0 2 * * 1-5 in Europe/Berlin, within 15 min")
    expect(page.locator("main")).to_contain_text("started")

    # An operator adds an agent: its secret, once, and what to paste to connect it.
    page.goto(f"{base}/console/people")
    page.get_by_label("Name").fill(f"tour-agent-{width}")
    page.get_by_role("button", name="Add and issue its secret").click()
    expect(page.locator("#mcp-config")).to_contain_text("Authorization")
    audited(page, f"tour-added-{width}")
    page.goto(f"{base}/console/audit?target_kind=principal")
    expect(page.locator("#audit")).to_contain_text(f"tour-agent-{width}")
    # An operator unlinks a departed person's Slack user: told whose it is, and asked again.
    gone = rest(state, state["operator_secret"], "register", kind="person", name=f"Gone {width}")
    account = f"T0TOUR/U{width}"
    store = DynamoStore(boto3.client("dynamodb"), os.environ["TABLE_NAME"])
    link = AccountLink(
        namespace=state["namespace"],
        surface="slack",
        account=account,
        principal_id=gone["principal"]["id"],
        linked_at=datetime.now(UTC),
    )
    UnitOfWork(store).commit(store.link_account(link))
    page.goto(f"{base}/console/people")
    page.get_by_role("textbox", name="Account").fill(f"slack:{account}")
    page.get_by_role("button", name="Unlink…").click()
    expect(page.locator("main")).to_contain_text(f"Gone {width}")
    audited(page, f"tour-unlink-{width}")
    page.get_by_role("button", name="Yes, unlink").click()
    expect(page.locator("main")).to_contain_text("no longer decides as")
    assert store.linked_account(state["namespace"], "slack", account) is None

    # The pages that ask before a decision or a pause is made.
    page.goto(f"{base}/console/request?id={asked['id']}")
    page.get_by_text("Also approve the same for a while").click()
    page.locator("details.free summary", has_text="version").click()
    page.get_by_label("Any version starting with").fill("1.2.")
    page.get_by_label("Grant a standing approval with this approval").check()
    audited(page, f"tour-request-standing-{width}")
    page.get_by_role("button", name="Approve").click()
    expect(page.locator("#confirm pre")).to_be_visible()
    expect(page.locator("#standing-confirm")).to_contain_text('version text starting with "1.2."')
    audited(page, f"tour-request-confirm-{width}")
    page.goto(f"{base}/console/switches")
    page.get_by_label("Every switch whose scope begins with").fill(f"tour-{width}/")
    page.get_by_role("button", name="Pause", exact=True).click()
    expect(page.locator("#held")).to_contain_text(armed)
    audited(page, f"tour-pause-confirm-{width}")

    # An MCP host asks to sign in (OAuth): the consent page, then the Sign-ins page.
    callback = "https://chatgpt.com/connector_platform_oauth_redirect"
    registration = json.dumps(
        {
            "client_name": "ChatGPT",
            "redirect_uris": [callback],
            "token_endpoint_auth_method": "none",
        }
    ).encode()
    with urllib.request.urlopen(
        urllib.request.Request(f"{base}/oauth/register", registration, method="POST"), timeout=30
    ) as registered:
        client_id = json.loads(registered.read())["client_id"]
    query = urllib.parse.urlencode(
        {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": callback,
            "state": "tour",
            "code_challenge": base64.urlsafe_b64encode(hashlib.sha256(VERIFIER).digest())
            .rstrip(b"=")
            .decode(),
            "code_challenge_method": "S256",
            "scope": "vigil:people vigil:admin",
        }
    )
    page.route(re.compile(r"https://chatgpt\.com/.*"), lambda route: route.fulfill(body="ok"))
    page.goto(f"{base}/console/authorize?{query}")
    expect(page.get_by_role("button", name="Allow")).to_be_visible()
    audited(page, f"tour-consent-{width}")
    page.get_by_role("button", name="Allow").click()
    page.wait_for_url(re.compile(r"https://chatgpt\.com/.*code=.*iss=.*"))
    # The host redeems the code: the sign-in exists from then on.
    code = urllib.parse.parse_qs(urllib.parse.urlsplit(page.url).query)["code"][0]
    redemption = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": callback,
        "client_id": client_id,
        "code_verifier": VERIFIER.decode(),
    }
    token = urllib.request.Request(
        f"{base}/oauth/token", urllib.parse.urlencode(redemption).encode(), method="POST"
    )
    with urllib.request.urlopen(token, timeout=30) as redeemed:
        assert "access_token" in json.loads(redeemed.read())
    page.goto(f"{base}/console/grants")
    expect(page.locator("table")).to_contain_text("ChatGPT")
    audited(page, f"tour-grants-{width}")
    assert errors == [], errors
    page.goto(f"{base}/console/nowhere")
    expect(page.get_by_role("heading", level=1)).to_be_visible()
    audited(page, f"tour-not-found-{width}")
