"""The requests (approvals, questions, tasks) a person asked or decides: the listing, and one
request with its history, the form that decides it, and the forms that claim it for a while
and release it (vigil.requests.routing says how routing rules assign it)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from vigil.console.components import (
    action_flag,
    badge,
    countdown,
    everyone,
    exact_action,
    facts,
    hour,
    hour_said,
    ident,
    link,
    named,
    next_page,
    relative,
    section,
    shown,
    table,
    views,
    when,
)
from vigil.console.html import Html, join, render
from vigil.console.pages import standing
from vigil.console.responder import NOTHING, PREFIX, Responder, Visit, integer, redirect
from vigil.errors import ErrorCode, VigilError
from vigil.kit.canonical import changed_members, edits_in_words
from vigil.kit.http import HttpRequest, HttpResponse, json_body
from vigil.requests.records import ACTION_BOUNDS, CLAIM_CHANGES
from vigil.requests.views import VERBS, tally, vote_of

REQUEST_HEADERS = ("Request", "Kind", "State", "Asked by", "You", "In hand", "Expires")
CLAIM = f"{PREFIX}/requests/claim"
# A claim's length the claim form offers, and the longest (claim_request's bounds).
CLAIM_MINUTES = 30
MAX_CLAIM_MINUTES = 24 * 60
# The listing's filters: (label, the tool's arguments, the caption above what they list).
# People and operators oversee their namespace: they see every request in it, and decide
# those whose audience they are in.
FILTERS: dict[str, tuple[str, dict[str, Any], str]] = {
    "waiting": ("Waiting for me", {"waiting": True}, "Waiting for your decision"),
    "open": ("Open", {"everyone": True, "state": "open"}, "Open requests in the namespace"),
    "all": ("All", {"everyone": True}, "Every request in the namespace"),
}


# -- handlers ----------------------------------------------------------------------------------
def requests(responder: Responder, request: HttpRequest, visit: Visit) -> HttpResponse:
    now = responder.now()
    show = request.query.get("show", "open")
    if show not in FILTERS:
        show = "open"
    _, arguments, caption = FILTERS[show]
    arguments = dict(arguments)
    if not oversees(visit):
        # An agent or service signed in sees what it asked or decides.
        arguments.pop("everyone", None)
        caption = "Requests you asked or decide"
    if request.query.get("cursor"):
        arguments["cursor"] = request.query["cursor"]
    found = responder.call(visit, "request_status", **arguments)
    names = responder.names(visit)
    labels = {name: label for name, (label, _, _) in FILTERS.items()}
    filters = views("/console/requests", "Which requests", labels, show, "show")

    def draw(page: Mapping[str, Any]) -> Html:
        rows = request_rows(page["requests"], visit.principal.id, now, names)
        more = Html("")
        if page["next_cursor"]:
            more = next_page("/console/requests", {"show": show, "cursor": page["next_cursor"]})
        listing = table(
            f"{caption}, oldest first", REQUEST_HEADERS, rows, "No requests.", "requests"
        )
        return join([listing, more])

    return responder.live_page(
        request, "Requests", f"{PREFIX}/requests", shown(found, draw), Html(""), visit, lead=filters
    )


def request(responder: Responder, request: HttpRequest, visit: Visit) -> HttpResponse:
    now = responder.now()
    request_id = request.query.get("id", "")
    if not request_id:
        return responder.unnamed("request", "/console/requests", visit)
    found = responder.call(visit, "get_request", id=request_id)
    if isinstance(found, str):
        return responder.not_found("Request", found, visit)
    r = found
    names = responder.names(visit)
    me = visit.principal.id
    title = conversation_title(responder, visit, r["conversation_id"])
    parts = [
        facts(
            [
                ("Request", ident(r["id"])),
                ("State", badge(r["state"])),
                ("Kind", r["kind"] + (" (blocking)" if r["blocking"] else "")),
                ("Asked by", named(r["requester"], None, names)),
                deciders(r, me, names),
                *([("In hand", in_hand(r["claim"], me, names, now))] if r.get("claim") else []),
                *policy_facts(r),
                ("Asked", when(r["asked_at"])),
                (
                    "Expires",
                    countdown(r["expires_at"], now)
                    if r["state"] == "open"
                    else when(r["expires_at"]),
                ),
                ("Conversation", conversation_link(r["conversation_id"], title)),
            ]
        ),
        section("What is asked", "body", render('<p class="body">{b}</p>', b=r["body"])),
    ]
    if r["response"] is not None:
        parts.append(section("Its outcome", "outcome", outcome(r["response"], now, names)))
    if r["state"] == "approved" and r["action"] is not None:
        parts.append(section("Its execution", "execution", execution(r["execution"], now, names)))
    if r["action"] is not None:
        parts.append(
            section(
                "The action an approval binds, exactly",
                "action",
                join([edit_notes(r, names), exact_action(r["action"])]),
            )
        )
    if r["choices"]:
        parts.append(
            section(
                "Choices",
                "choices",
                render(
                    "<ul>{items}</ul>",
                    items=join(render("<li>{c}</li>", c=c) for c in r["choices"]),
                ),
            )
        )
    parts.append(
        section(
            "History",
            "history",
            table(
                "Every change, oldest first",
                ("Change", "By", "From", "When", "Version"),
                history_rows(r["history"], now, names),
                "No change yet.",
            ),
        )
    )
    decide = Html("")
    vote = vote_of(r, me)
    if r["state"] == "open" and vote is not None:
        said = render(
            '<p class="hint">You voted {outcome} ({via}); {tally} so far. '
            "A vote is not changed.</p>",
            outcome=VERBS[vote["outcome"]],
            via=from_where(vote["via"]),
            tally=tally(r),
        )
        decide = section("Your decision", "decide", said)
    elif r["state"] == "open" and me in r["audience"]:
        grants = Html("")
        if r["kind"] == "approval" and r["action"] is not None and visit.principal.kind == "person":
            grants = standing.grant_fields(r, names)
        decide = section("Your decision", "decide", reply_form(r, visit.csrf, grants))
    if responder.may(visit, "claim_request") and visit.principal.kind == "person":
        decide = join([claim_controls(r, me, visit.csrf, voted=vote is not None), decide])
    return responder.live_page(
        request, heading(r, title), f"{PREFIX}/requests", join(parts), decide, visit
    )


def reply(responder: Responder, form: Mapping[str, str], visit: Visit) -> HttpResponse:
    """A reply to a request; an approval's Approve or Deny first shows the confirmation page,
    and only the form submitted from there (``confirm=yes``) decides."""
    request_id = form.get("id", "")
    back = f"{PREFIX}/request?{urlencode({'id': request_id})}"
    outcome = form.get("outcome", "")
    # An approval's Approve or Deny (VERBS) is confirmed on a second page before it is sent.
    if outcome in VERBS and form.get("confirm") != "yes":
        return confirmation(responder, form, visit, back)
    arguments: dict[str, Any] = {
        "id": request_id,
        "outcome": outcome,
        "version": integer(form.get("version")),
    }
    if form.get("answer"):
        arguments["answer"] = form["answer"]
    if outcome == "approved" and form.get("edits"):
        # The edits the confirmation page showed, as it showed them (made from the fields).
        try:
            arguments["edits"] = json_body(form["edits"].encode())
        except VigilError:
            return responder.changed(
                "The edits could not be read: nothing was decided.", back, visit
            )
    if outcome == "approved" and form.get("standing"):
        # The standing approval the confirmation page said in words, as it said it.
        try:
            arguments["standing"] = json_body(form["standing"].encode())
        except VigilError:
            return responder.changed(
                "The standing approval could not be read: nothing was decided.", back, visit
            )
    return responder.act(visit, "reply", arguments, back)


def claim(responder: Responder, form: Mapping[str, str], visit: Visit) -> HttpResponse:
    """Claims the request for the form's minutes, or (``release=yes``) releases it: back to its
    page, or a page saying why not; a claim someone else made first names them."""
    request_id = form.get("id", "")
    back = f"{PREFIX}/request?{urlencode({'id': request_id})}"
    arguments: dict[str, Any] = {"id": request_id}
    if form.get("release") == "yes":
        arguments["release"] = True
    else:
        arguments["minutes"] = integer(form.get("minutes"))
    done = responder.attempt(visit, "claim_request", arguments)
    if not isinstance(done, VigilError):
        return redirect(back)
    holder = done.details.get("claimed_by")
    if done.code is ErrorCode.VERSION_CONFLICT and isinstance(holder, str):
        who = responder.names(visit).get(holder, holder)
        until = done.details.get("until")
        said = f" until {hour_said(until, responder.now())}" if isinstance(until, str) else ""
        return responder.changed(
            f"{done.code.value}: {who} claimed this request first: it is in their hands{said}, "
            "and your claim was not made. A claim never stops a decision: you may still "
            "decide it.",
            back,
            visit,
        )
    return responder.not_done(done, back, visit)


def edits_from(form: Mapping[str, str], request: Mapping[str, Any]) -> dict[str, Any]:
    """The edits a person made in an approval's editable fields (``edit-<member>``): each
    value JSON, or else text; only those that change the member."""
    action, editable = request["action"] or {}, request["policy"].get("editable") or []
    edits: dict[str, Any] = {}
    for member in editable:
        text = form.get(f"edit-{member}")
        if text is None:
            continue
        try:
            # Read as the API reads a body: a number no double holds exactly is refused.
            value = json_body(text.encode())
        except VigilError:
            value = text
        # One no reader holds exactly is kept, to be refused as it is shown.
        if ACTION_BOUNDS.shape_problem(value) is not None or changed_members(
            action, {member: value}
        ):
            edits[member] = value
    return edits


def confirmation(
    responder: Responder, form: Mapping[str, str], visit: Visit, back: str
) -> HttpResponse:
    """The second step of approving or denying: the exact action once more, and the form that
    decides at the version the person read (a denial with its reason); or, if the request
    changed since, a page that says so and decides nothing."""
    found = responder.call(visit, "get_request", id=form.get("id", ""))
    if isinstance(found, str):
        return responder.not_found("Request", found, visit)
    outcome = form["outcome"]
    verb = VERBS[outcome]
    if found["state"] != "open":
        return responder.changed(
            f"This request is {found['state']} already: nothing was decided.", back, visit
        )
    if changed_since(found, integer(form.get("version"))):
        return responder.changed(
            f"This request changed since you read it (it is at version {found['version']} "
            "now): nothing was decided. Read it again, then decide.",
            back,
            visit,
        )
    edits = edits_from(form, found) if outcome == "approved" else {}
    problem = ACTION_BOUNDS.shape_problem(edits) if edits else None
    if problem is not None:
        return responder.changed(
            f"Those edits cannot be approved ({problem}): nothing was decided.", back, visit
        )
    approved = {**found["action"], **edits} if found["action"] is not None else None
    action = (
        exact_action(approved)
        if approved is not None
        else Html('<p class="empty">It binds no action: this only says your decision.</p>')
    )
    if edits:
        # What is approved is what is shown: the edits in words, and the edited action whole.
        action = render(
            '<p class="edited">Your edits: {said}</p>{action}',
            said=edits_in_words(found["action"], edits),
            action=action,
        )
    # A standing approval granted with the approval: refused here, deciding nothing, if any
    # of it would be; else said in words, and sent as it is said.
    granted, terms = Html(""), Html("")
    if outcome == "approved" and approved is not None:
        if form.get("standing-grant") == "yes":
            grant = standing.granting(responder, visit, found, approved, form)
            if isinstance(grant, VigilError):
                return responder.not_done(grant, back, visit)
            granted = standing.granted_said(grant[1], grant[0], responder.names(visit))
            terms = standing.hidden_terms(grant[0])
        elif not standing.untouched(form):
            granted = Html(
                '<p class="hint">You did not tick “Grant a standing approval”: this approves '
                "this request only, and grants nothing for later asks.</p>"
            )
    reason = Html("")
    if outcome == "denied" and found["policy"]["reason_on_deny"]:
        reason = Html(
            '<label for="answer">Reason (required by this request; the agent reads it)</label>'
            '<textarea id="answer" name="answer" rows="3" required></textarea>'
        )
    elif outcome == "denied":
        reason = Html(
            '<label for="answer">Reason (optional, the agent reads it)</label>'
            '<textarea id="answer" name="answer" rows="3"></textarea>'
        )
    body = render(
        '<p class="body">{asked}</p>'
        '<section aria-labelledby="confirm-title" id="confirm">'
        '<h2 id="confirm-title">The action you {verb}, exactly</h2>{action}</section>{granted}'
        '<form method="post" action="/console/requests/reply" class="reply">'
        '<input type="hidden" name="csrf" value="{csrf}">'
        '<input type="hidden" name="id" value="{id}">'
        '<input type="hidden" name="version" value="{version}">'
        '<input type="hidden" name="outcome" value="{outcome}">'
        '<input type="hidden" name="confirm" value="yes">{reason}{edits}{terms}'
        '<div class="decision"><button type="submit" class="{kind}">Yes, {verb}</button>'
        '<a href="{back}">Cancel</a></div></form>',
        asked=found["body"],
        verb=verb,
        action=action,
        granted=granted,
        terms=terms,
        csrf=visit.csrf,
        id=found["id"],
        version=form["version"],
        outcome=outcome,
        reason=reason,
        edits=render('<input type="hidden" name="edits" value="{e}">', e=json.dumps(edits))
        if edits
        else Html(""),
        kind="approve" if outcome == "approved" else "deny",
        back=back,
    )
    title = conversation_title(responder, visit, found["conversation_id"])
    named_as = title or first_line(found["body"], 60)
    return responder.page(
        f"{verb.capitalize()} “{named_as}”?", body, visit, here=f"{PREFIX}/requests"
    )


# -- what they show ----------------------------------------------------------------------------
def request_rows(
    requests: Iterable[Mapping[str, Any]], me: str, now: datetime, names: Mapping[str, str]
) -> list[list[Any]]:
    return [
        [
            join(
                [
                    link("/console/request", first_line(r["body"]), id=r["id"]),
                    action_flag(r["action"]),
                ]
            ),
            r["kind"],
            badge(r["state"]),
            named(r["requester"], None, names),
            your_part(r, me),
            held_by(r, me, names, now),
            (countdown if r["state"] == "open" else relative)(r["expires_at"], now),
        ]
        for r in requests
    ]


def oversees(visit: Visit) -> bool:
    """Whether the visitor oversees the namespace (a person or an operator): they see every
    request in it."""
    return visit.principal.kind == "person" or visit.principal.role == "operator"


def your_part(r: Mapping[str, Any], me: str) -> str:
    """What the reader has to do with a request: decide it, their vote cast, asked it, or
    nothing (an overseer watching)."""
    vote = vote_of(r, me)
    if vote is not None:
        return f"you voted {VERBS[vote['outcome']]}"
    if me in r["audience"]:
        return "you decide" if r["state"] == "open" else "you could decide"
    return "you asked" if r["requester"] == me else "—"


def held_by(r: Mapping[str, Any], me: str, names: Mapping[str, str], now: datetime) -> Any:
    """For a listing: who has the request in hand, until when; "—" when no one has."""
    held = r.get("claim")
    if not held:
        return "—"
    who = "you" if held["by"] == me else named(held["by"], None, names)
    rule = f", by routing rule {held['rule']}" if held.get("rule") else ""
    return render("{who} until {until}{rule}", who=who, until=hour(held["until"], now), rule=rule)


def in_hand(held: Mapping[str, Any], me: str, names: Mapping[str, str], now: datetime) -> Html:
    """Who has the request in hand, in a sentence: In Pat's hands until 14:05 UTC, assigned
    by routing rule 2."""
    rule = f", assigned by routing rule {held['rule']}" if held.get("rule") else ""
    if held["by"] == me:
        return render(
            "In your hands until {until}{rule}", until=hour(held["until"], now), rule=rule
        )
    return render(
        'In {who}\'s hands until {until}{rule} <small class="meta id">{id}</small>',
        who=names.get(held["by"], held["by"]),
        until=hour(held["until"], now),
        rule=rule,
        id=held["by"],
    )


def claim_controls(r: Mapping[str, Any], me: str, csrf: str, *, voted: bool) -> Html:
    """The forms that take an open request in hand (a person of its audience who has not voted,
    while no one else has it) and put it back (its holder): nothing for anyone else."""
    held = (r.get("claim") or {}).get("by")
    if r["state"] != "open" or me not in r["audience"] or held not in (None, me):
        return NOTHING
    hidden = render(
        '<input type="hidden" name="csrf" value="{csrf}"><input type="hidden" name="id" '
        'value="{id}">',
        csrf=csrf,
        id=r["id"],
    )
    forms: list[Html] = []
    if not voted:
        forms.append(
            render(
                '<form method="post" action="{action}" class="post">{hidden}'
                '<label for="claim-minutes">{label}</label>'
                '<input type="number" id="claim-minutes" name="minutes" value="{minutes}" '
                'min="1" max="{most}" step="1" required>'
                '<button type="submit">{button}</button></form>',
                action=CLAIM,
                hidden=hidden,
                label="For how many minutes from now"
                if held == me
                else "Claim it for how many minutes",
                minutes=CLAIM_MINUTES,
                most=MAX_CLAIM_MINUTES,
                button="Keep it" if held == me else "Claim",
            )
        )
    if held == me:
        forms.append(
            render(
                '<form method="post" action="{action}" class="inline">{hidden}'
                '<input type="hidden" name="release" value="yes">'
                '<button type="submit">Release</button></form>',
                action=CLAIM,
                hidden=hidden,
            )
        )
    if not forms:
        return NOTHING
    said = (
        "It is in your hands: the others see it, and it is not on their waiting list until "
        "you release it or your claim ends."
        if held == me
        else "Claim it to say you are handling it: the others see it is in your hands, and it "
        "leaves their waiting list for as long as you say. Anyone of its deciders may still "
        "decide it."
    )
    return section(
        "Handling it",
        "claim",
        join([render('<p class="hint">{said}</p>', said=said), *forms]),
    )


def deciders(r: Mapping[str, Any], me: str, names: Mapping[str, str]) -> tuple[str, Html]:
    """Who decides an open request (saying so when the reader is among them), and who decided
    it once it is decided; a request that expired or was replaced names who could have."""
    by = r["response"]["by"] if r["response"] else None
    if by is not None:
        via = r["response"]["via"]
        return "Decided by", join([named(by, None, names), f" ({from_where(via)})" if via else ""])
    if r["state"] != "open":
        return "Who could decide", everyone(r["audience"], names)
    return ("Yours to decide" if me in r["audience"] else "Who decides"), everyone(
        r["audience"], names
    )


def policy_facts(r: Mapping[str, Any]) -> list[tuple[str, str]]:
    """How an approval is decided, when it is not by its first reply; nothing otherwise."""
    policy = r["policy"]
    rules: list[str] = []
    if policy["quorum"] > 1 or policy["denials"] > 1:
        denials = policy["denials"]
        rules.append(
            f"{policy['quorum']} of {len(r['audience'])} approvals; "
            + ("one denial denies it" if denials == 1 else f"{denials} denials deny it")
        )
    if policy["deny_on_timeout"]:
        rules.append("denied, not expired, at its deadline")
    if policy["reason_on_deny"]:
        rules.append("a denial says why")
    return [("Needs", "; ".join(rules))] if rules else []


def changed_since(r: Mapping[str, Any], version: int | str) -> bool:
    """Whether the request changed since ``version`` in what a person decides on: votes cast
    meanwhile (and claims) change nothing of it."""
    if isinstance(version, str) or version > r["version"]:
        return True
    return any(
        c["version"] > version
        and ((c["kind"] != "voted" and c["kind"] not in CLAIM_CHANGES) or c.get("edits"))
        for c in r["history"]
    )


def conversation_title(responder: Responder, visit: Visit, conversation_id: str) -> str | None:
    """The title of a request's conversation (given when it was asked), if the reader may
    read the conversation and it has one."""
    found = responder.call(visit, "get_conversation", id=conversation_id)
    return None if isinstance(found, str) else found["title"]


def conversation_link(conversation_id: str, title: str | None) -> Html:
    """A link to a request's conversation: by its title, with its id in small type, when it
    has one."""
    if title is None:
        return link("/console/conversation", ident(conversation_id), id=conversation_id)
    return render(
        '{a} <small class="meta id">{id}</small>',
        a=link("/console/conversation", title, id=conversation_id),
        id=conversation_id,
    )


def heading(r: Mapping[str, Any], title: str | None) -> str:
    """A request as people call it: its conversation's title, or what it asks."""
    return title or f"{r['kind'].capitalize()}: {first_line(r['body'], 60)}"


def first_line(text: str, limit: int = 80) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "(empty)"
    return line if len(line) <= limit else line[: limit - 1] + "…"


def from_where(via: str | None) -> str:
    """Where a vote or a decision came from, as the page says it beside who made it."""
    if via == "standing":
        return "through a standing approval"
    return f"from {via}" if via else ""


def history_rows(
    history: Iterable[Mapping[str, Any]], now: datetime, names: Mapping[str, str]
) -> list[list[Any]]:
    return [
        [
            change_said(c, names, now),
            by_whom(c, names),
            "standing approval" if c["via"] == "standing" else c["via"] or "",
            relative(c["at"], now),
            c["version"],
        ]
        for c in history
    ]


def by_whom(change: Mapping[str, Any], names: Mapping[str, str]) -> Any:
    """Who made a change: a principal, a routing rule (an assignment), or the timer."""
    if change["by"]:
        return named(change["by"], None, names)
    return "(routing)" if change["kind"] == "assigned" else "(the timer)"


def change_said(change: Mapping[str, Any], names: Mapping[str, str], now: datetime) -> Html:
    """A change, with a vote's or a decision's outcome, its edit of the action, the standing
    approval it granted or that cast it, and its reason; a claim's in words."""
    if change["kind"] in CLAIM_CHANGES:
        return claim_change_said(change, names, now)
    if change["via"] == "standing":
        # A vote a person's standing approval cast when the request was asked.
        who = names.get(change["by"] or "", change["by"] or "")
        said = f"Approved by {who}" if change["kind"] == "replied" else f"{who} voted to approve"
        return render(
            '{said} through a standing approval <small class="meta id">{id}</small>',
            said=said,
            id=change.get("standing") or "",
        )
    said = change["kind"] + (f": {change['outcome']}" if change["outcome"] else "")
    if change.get("edits"):
        said += " with edits: " + edits_in_words(change["edited_from"] or {}, change["edits"])
    granted = Html("")
    if change.get("standing"):
        granted = render(
            ", and granted a {standing} for later asks of the same shape",
            standing=link(standing.HERE, "standing approval"),
        )
    if change["reason"] is None:
        return render("{said}{granted}", said=said, granted=granted)
    return render(
        '{said}{granted}<br><small class="meta">{reason}</small>',
        said=said,
        granted=granted,
        reason=change["reason"],
    )


def claim_change_said(change: Mapping[str, Any], names: Mapping[str, str], now: datetime) -> Html:
    """A claim's change in words: Pat claimed it until 14:05 UTC; Pat released it; Assigned
    to Sue by routing rule 1, until 15:00 UTC."""
    held = change.get("claim") or {}
    who = names.get(change["by"] or "", change["by"] or "someone")
    if change["kind"] == "released":
        return render("{who} released it", who=who)
    if change["kind"] == "claimed":
        return render("{who} claimed it until {until}", who=who, until=hour(held["until"], now))
    return render(
        "Assigned to {who} by routing rule {rule}, until {until}",
        who=names.get(held.get("by", ""), held.get("by", "someone")),
        rule=held.get("rule", "?"),
        until=hour(held["until"], now),
    )


def outcome(response: Mapping[str, Any], now: datetime, names: Mapping[str, str]) -> Html:
    """How a request ended: the outcome, who gave it and when, and its answer in words."""
    pairs: list[tuple[str, Any]] = [
        ("Outcome", badge(response["outcome"])),
        ("By", named(response["by"], None, names) if response["by"] else "(its expiry)"),
        ("When", relative(response["at"], now)),
    ]
    if response["answer"] is not None:
        pairs.append(("Answer", readable(response["answer"])))
    if response["reused_from"]:
        pairs.append(
            (
                "Reused from",
                link(
                    "/console/request", ident(response["reused_from"]), id=response["reused_from"]
                ),
            )
        )
    return facts(pairs)


def execution(found: Mapping[str, Any] | None, now: datetime, names: Mapping[str, str]) -> Html:
    """What became of an approved action: its redemption and what its executor reported,
    said to be the executor's word."""
    if found is None:
        return Html(
            '<p class="empty">Not redeemed yet: the requester has not checked the action '
            "against this approval, so nothing says it ran.</p>"
        )
    reports = table(
        "What the executor reported, oldest first",
        ("Report", "By", "When"),
        [
            [badge(r["state"]), named(r["by"], None, names), relative(r["at"], now)]
            for r in found["reports"]
        ],
        "No report yet.",
    )
    pairs: list[tuple[str, Any]] = [
        ("State", badge(found["state"])),
        (
            "Redeemed",
            join(
                [
                    relative(found["redeemed_at"], now),
                    " by ",
                    named(found["redeemed_by"], None, names),
                ]
            ),
        ),
    ]
    if found["result"] is not None:
        pairs.append(("Result", readable(found["result"])))
    return join(
        [
            facts(pairs),
            reports,
            Html('<p class="hint">A report is the executor\'s word, not proof.</p>'),
        ]
    )


def readable(value: Any) -> Html:
    """An answer or a result: text as a paragraph, any other JSON as an action is shown."""
    if isinstance(value, str):
        return render('<p class="body">{text}</p>', text=value)
    return exact_action(value)


def reply_form(request: Mapping[str, Any], csrf: str, grants: Html = NOTHING) -> Html:
    """The decision a person can make on an open request, bound to the version they read: if
    the request changes before they submit (replaced, answered by someone else), the reply is
    refused instead of applied to something they did not see. ``grants``: an approval's
    fields that grant a standing approval with it, if the reader may grant one."""
    hidden = render(
        '<input type="hidden" name="csrf" value="{csrf}">'
        '<input type="hidden" name="id" value="{id}">'
        '<input type="hidden" name="version" value="{version}">',
        csrf=csrf,
        id=request["id"],
        version=request["version"],
    )
    kind = request["kind"]
    if kind == "approval":
        controls = join(
            [
                edit_fields(request),
                grants,
                Html(
                    '<div class="decision">'
                    '<button type="submit" name="outcome" value="approved" class="approve">'
                    "Approve</button>"
                    '<button type="submit" name="outcome" value="denied" class="deny" '
                    "formnovalidate>Deny</button></div>"
                    '<p class="hint">You confirm on the next page, which shows the action '
                    "again; a denial can say why.</p>"
                ),
            ]
        )
    else:
        controls = answer_controls(request)
    return render(
        '<form method="post" action="/console/requests/reply" class="reply">{hidden}{controls}'
        "</form>",
        hidden=hidden,
        controls=controls,
    )


def edit_notes(r: Mapping[str, Any], names: Mapping[str, str]) -> Html:
    """Who edited the action, and what they changed, above the action as it stands."""
    return join(
        render(
            '<p class="edited">Edited by {who} before approving: {said}</p>',
            who=named(c["by"], None, names),
            said=edits_in_words(c["edited_from"] or {}, c["edits"]),
        )
        for c in r["history"]
        if c.get("edits")
    )


def edit_fields(request: Mapping[str, Any]) -> Html:
    """The members of an approval's action its asker let an approver change, each in a field
    holding its value as JSON; nothing if there are none."""
    editable = request.get("policy", {}).get("editable") or []
    if not editable or request["action"] is None:
        return Html("")
    fields = join(
        render(
            '<label for="edit-{n}">{member} <small class="meta">(JSON)</small></label>'
            '<input id="edit-{n}" name="edit-{member}" value="{value}" autocomplete="off">',
            n=n,
            member=member,
            value=json.dumps(request["action"].get(member), ensure_ascii=False),
        )
        for n, member in enumerate(editable)
    )
    return render(
        "<fieldset><legend>Change before approving (the asker allows it)</legend>"
        '<p class="meta">You may change these members of the action, and approve the action '
        "as changed: the confirmation shows the change before anything is decided, the asker "
        "is told it was edited and must redeem the changed action, and approvals others gave "
        "the action as it was are set aside (denials stand).</p>{fields}"
        "</fieldset>",
        fields=fields,
    )


def answer_controls(request: Mapping[str, Any]) -> Html:
    """How a person answers an open task or question: a task's outcomes with its result, a
    question's choices, or its free answer."""
    if request["kind"] == "task":
        return Html(
            '<label for="answer">Result (optional)</label>'
            '<textarea id="answer" name="answer" rows="3"></textarea><div class="decision">'
            '<button type="submit" name="outcome" value="completed">Completed</button>'
            '<button type="submit" name="outcome" value="failed">Failed</button>'
            '<button type="submit" name="outcome" value="rejected">Reject</button></div>'
        )
    if request.get("choices"):
        options = join(
            render(
                '<div><input type="radio" name="answer" id="choice-{n}" value="{choice}" required>'
                '<label for="choice-{n}">{choice}</label></div>',
                n=n,
                choice=choice,
            )
            for n, choice in enumerate(request["choices"])
        )
        return render(
            "<fieldset><legend>Your answer</legend>{options}</fieldset>"
            '<button type="submit" name="outcome" value="answered">Answer</button>',
            options=options,
        )
    return Html(
        '<label for="answer">Your answer</label>'
        '<textarea id="answer" name="answer" rows="4" required></textarea>'
        '<button type="submit" name="outcome" value="answered">Answer</button>'
    )
