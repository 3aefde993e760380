"""Standing approvals (vigil.requests.standing): the part of an approval's form that grants one
with the approval, the words its confirmation says it in, and the page that lists the live
ones and revokes them.

The approval's form sends the terms as fields (``standing-*``, and per member of the action,
by its place ``<n>`` among the members in order, ``free-min-<n>``, ``free-max-<n>``,
``free-one-of-<n>``, ``free-prefix-<n>``: a member's name may hold characters no page shows
as themselves); the confirmation page reads them into the ``standing`` argument of
``reply``, shows it in words (refusing, deciding nothing, what the tool or the standing
approval would refuse), and carries it in a hidden JSON field that the confirmed form sends
as it was shown."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from vigil import catalog
from vigil.app import parse_arguments
from vigil.console.components import (
    countdown,
    exact_action,
    facts,
    link,
    named,
    next_page,
    shown,
    table,
    views,
    when,
)
from vigil.console.html import Html, join, render
from vigil.console.responder import PREFIX, Responder, Visit
from vigil.errors import VigilError, forbidden, invalid
from vigil.kit.canonical import shown_json
from vigil.kit.http import HttpRequest, HttpResponse, json_body
from vigil.requests.standing import (
    DEFAULT_HOURS,
    MAX_HOURS,
    MAX_PREFIX,
    MAX_USES,
    Bound,
    StandingApproval,
    StandingTerms,
    describe_shape,
)
from vigil.requests.standing_input import StandingInput

HERE = f"{PREFIX}/standing"
REVOKE = f"{PREFIX}/standing/revoke"
TITLE = "Standing approvals"
# What a standing approval is, in one paragraph: on its page and where one is granted.
EXPLAINED = (
    "A standing approval is an approval that stands for the same action again, for a while. "
    "You grant one when you approve an approval, under “Also approve the same for a while”: "
    "from then on, when the same agent (or, if you allowed it, any agent of the namespace) "
    "asks to do an action of the same shape (the same members, each as you approved it, "
    "except those you let vary within the bounds you set), the request is approved at once, "
    "as your approval, and its history says it was approved through your standing approval. "
    "It ends when it expires, when its uses run out, or when it is revoked here; it never "
    "approves more than you could approve yourself."
)
HEADERS = ("Granted by", "Who may ask", "What it approves", "Used", "Expires", "")
# The listing's views for an operator: their own, or everyone's in the namespace.
WHOSE = {"everyone": "Everyone's", "mine": "Yours"}


# -- the listing ---------------------------------------------------------------------------------
def standing(responder: Responder, request: HttpRequest, visit: Visit) -> HttpResponse:
    now = responder.now()
    operator = visit.principal.role == "operator"
    show = request.query.get("show", "")
    if not operator:
        show = "mine"
    elif show not in WHOSE:
        show = "everyone"
    arguments: dict[str, Any] = {"everyone": show == "everyone"}
    if request.query.get("cursor"):
        arguments["cursor"] = request.query["cursor"]
    found = responder.call(visit, "list_standing_approvals", **arguments)
    names = responder.names(visit)
    caption = (
        "Every live standing approval of the namespace, soonest to expire first"
        if show == "everyone"
        else "Your live standing approvals, soonest to expire first"
    )

    def draw(page: Mapping[str, Any]) -> Html:
        rows = [_row(s, now, names, visit, show) for s in page["standing"]]
        listing = table(caption, HEADERS, rows, "No standing approval is live.", "standing")
        more = Html("")
        if page["next_cursor"]:
            more = next_page(HERE, {"show": show, "cursor": page["next_cursor"]})
        return join([listing, more])

    lead = render('<p class="intro">{explained}</p>', explained=EXPLAINED)
    if operator:
        lead = join([lead, views(HERE, "Whose standing approvals", WHOSE, show, "show")])
    return responder.page(TITLE, join([lead, shown(found, draw)]), visit, here=HERE)


def _row(
    s: Mapping[str, Any], now: datetime, names: Mapping[str, str], visit: Visit, show: str
) -> list[Any]:
    asker = named(s["asker"], None, names) if s["asker"] else "any agent of the namespace"
    what = render(
        '{shape}<br><small class="meta">granted {at} with {request}</small>'
        "<details><summary>The action as approved</summary>{action}</details>",
        shape=shape_said(s["free"]),
        at=when(s["granted_at"]),
        request=link("/console/request", "this approval", id=s["granted_on"]),
        action=exact_action(s["action"]),
    )
    used = f"{s['used']} of {s['uses']}" if s["uses"] is not None else f"{s['used']} (no limit)"
    return [
        named(s["grantor"], None, names),
        asker,
        what,
        used,
        countdown(s["expires_at"], now),
        _revoke_form(s["id"], visit.csrf, show),
    ]


def _revoke_form(standing_id: str, csrf: str, show: str) -> Html:
    return render(
        '<form method="post" action="{action}" class="inline">'
        '<input type="hidden" name="csrf" value="{csrf}">'
        '<input type="hidden" name="id" value="{id}">'
        '<input type="hidden" name="show" value="{show}">'
        '<button type="submit" class="secondary">Revoke</button></form>',
        action=REVOKE,
        csrf=csrf,
        id=standing_id,
        show=show,
    )


def revoke(responder: Responder, form: Mapping[str, str], visit: Visit) -> HttpResponse:
    """Revokes one, by its tool (its grantor's, or any for an operator): back to the listing,
    or a page saying why not."""
    show = form.get("show", "")
    back = f"{HERE}?{urlencode({'show': show})}" if show in WHOSE else HERE
    return responder.act(visit, "revoke_standing_approval", {"id": form.get("id", "")}, back)


# -- granting one with an approval ---------------------------------------------------------------
def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def grant_fields(request: Mapping[str, Any], names: Mapping[str, str]) -> Html:
    """The approval form's optional part that grants a standing approval with the approval:
    folded away until opened, so the form stays short on a phone."""
    action: Mapping[str, Any] = request["action"]
    asker = names.get(request["requester"], request["requester"])
    members = join(
        _member_fields(n, member, action[member])
        for n, member in enumerate(sorted(action))
        if _scalar(action[member])
    )
    fixed = [name_said(member) for member in sorted(action) if not _scalar(action[member])]
    kept = Html("")
    if fixed:
        kept = render(
            '<p class="hint">Stay exactly as approved: {members}.</p>', members=", ".join(fixed)
        )
    return render(
        '<details class="standing" id="standing-terms">'
        "<summary>Also approve the same for a while</summary>"
        '<div class="fields"><p class="hint">{explained}</p>'
        '<div class="check"><input type="checkbox" id="standing-grant" name="standing-grant" '
        'value="yes"><label for="standing-grant">Grant a standing approval with this '
        "approval</label></div>"
        '<label for="standing-hours">For how many hours (at most {max_hours})</label>'
        '<input type="number" id="standing-hours" name="standing-hours" value="{hours}" '
        'min="0" max="{max_hours}" step="any">'
        '<label for="standing-uses">At most how many approvals '
        '<small class="meta">(empty: any number until it expires)</small></label>'
        '<input type="number" id="standing-uses" name="standing-uses" min="1" '
        'max="{max_uses}" step="1">'
        '<div class="check"><input type="checkbox" id="standing-any" name="standing-any" '
        'value="yes"><label for="standing-any">Any agent of the namespace may ask, not only '
        "{asker}</label></div>"
        "<fieldset><legend>What may vary</legend>"
        '<p class="hint">Each member stays as approved unless you give it a bound: a range, '
        "a few values or the start of a text.</p>{members}{kept}</fieldset></div></details>",
        explained="Later asks of the same shape are approved at once, as your approval, "
        "until it expires, is used up or you revoke it on the Standing approvals page. "
        "You confirm it on the next page, which says it in words.",
        hours=DEFAULT_HOURS,
        max_hours=MAX_HOURS,
        max_uses=MAX_USES,
        asker=asker,
        members=members,
        kept=kept,
    )


def name_said(member: str) -> str:
    """A member's name as a page shows it: each character outside printable ASCII as its
    escape (``op\u200b``), as the action is shown."""
    return shown_json(member).text[1:-1]


def bound_said(bound: Mapping[str, Any]) -> str:
    """A free member's bound in words."""
    return Bound(**bound).describe()


def shape_said(free: Mapping[str, Mapping[str, Any]]) -> str:
    """What a standing approval stands for, in words."""
    return describe_shape({member: Bound(**bound) for member, bound in free.items()})


def _member_fields(n: int, member: str, value: Any) -> Html:
    """One member's bound: a range for a number, a prefix for a text, a few values for any."""
    member = name_said(member)
    parts: list[Html] = []
    if _numeric(value):
        parts.append(
            render(
                '<label for="free-{n}-min">Lowest {member}</label>'
                '<input type="number" id="free-{n}-min" name="free-min-{n}" step="any">'
                '<label for="free-{n}-max">Highest {member}</label>'
                '<input type="number" id="free-{n}-max" name="free-max-{n}" step="any">',
                n=n,
                member=member,
            )
        )
    if isinstance(value, str):
        parts.append(
            render(
                '<label for="free-{n}-prefix">Any {member} starting with</label>'
                '<input id="free-{n}-prefix" name="free-prefix-{n}" maxlength="{most}" '
                'autocomplete="off">',
                n=n,
                member=member,
                most=MAX_PREFIX,
            )
        )
    kind = "" if isinstance(value, str) else " (as JSON: 12, true, null)"
    parts.append(
        render(
            '<label for="free-{n}-one-of">{lead} of these for {member}, one a line{kind}</label>'
            '<textarea id="free-{n}-one-of" name="free-one-of-{n}" rows="3"></textarea>',
            n=n,
            member=member,
            lead="Or one" if parts else "One",
            kind=kind,
        )
    )
    return render(
        '<details class="free"><summary>{member} <small class="meta">approved: {value}'
        '</small></summary><div class="fields">{parts}</div></details>',
        member=member,
        value=shown_json(value).text,
        parts=join(parts),
    )


class Unread(Exception):
    """A field of the form that is not what it must be, in words for the person."""


def terms_of(
    form: Mapping[str, str], action: Mapping[str, Any], approved: Mapping[str, Any]
) -> dict[str, Any]:
    """The ``standing`` argument of ``reply`` the form's fields say, for ``action`` as the
    page showed it (its members numbered in order) and as it is ``approved`` (edits and all):
    what the tool then checks, or Unread."""
    hours = _number(form.get("standing-hours", ""), "For how many hours")
    uses_text = form.get("standing-uses", "").strip()
    terms: dict[str, Any] = {
        "hours": DEFAULT_HOURS if hours is None else hours,
        "any_asker": form.get("standing-any") == "yes",
    }
    if uses_text:
        if not uses_text.isascii() or not uses_text.isdigit():
            raise Unread(f"At most how many approvals: {uses_text!r} is not a whole number")
        terms["uses"] = int(uses_text)
    free = {
        member: bound
        for n, member in enumerate(sorted(action))
        if (bound := _bound(form, n, member, approved.get(member))) is not None
    }
    if free:
        terms["free"] = free
    return terms


def _number(text: str, what: str) -> int | float | None:
    """A number typed in a field (None for nothing typed), as JSON reads it."""
    text = text.strip()
    if not text:
        return None
    try:
        value = json_body(text.encode())
    except VigilError:
        value = None
    if not _numeric(value) or not math.isfinite(value):
        raise Unread(f"{what}: {text!r} is not a number")
    number: int | float = value
    return number


def _bound(form: Mapping[str, str], n: int, member: str, value: Any) -> dict[str, Any] | None:
    """The bound the fields of the ``n``th member give it (its value as approved decides
    how its values are read: as text for a text, else as JSON), or None for none."""
    said = name_said(member)
    low = _number(form.get(f"free-min-{n}", ""), f"Lowest {said}")
    high = _number(form.get(f"free-max-{n}", ""), f"Highest {said}")
    typed = form.get(f"free-one-of-{n}", "")
    lines = [line.strip() for line in typed.splitlines() if line.strip()]
    prefix = form.get(f"free-prefix-{n}", "")
    kinds = [low is not None or high is not None, bool(lines), bool(prefix)]
    if sum(kinds) > 1:
        raise Unread(
            f"{said}: give one kind of bound (a range, a few values or the start of a text), "
            "not several"
        )
    if prefix:
        return {"prefix": prefix}
    if lines:
        return {"one_of": [line if isinstance(value, str) else _json(said, line) for line in lines]}
    if low is None and high is None:
        return None
    return {
        **({} if low is None else {"min": low}),
        **({} if high is None else {"max": high}),
    }


def _json(member: str, line: str) -> Any:
    try:
        return json_body(line.encode())
    except VigilError:
        raise Unread(
            f"{member}: {line!r} is not a value: write a number as 12, or true, false or null"
        ) from None


def untouched(form: Mapping[str, str]) -> bool:
    """Whether the form's standing approval fields are as the page gave them."""
    return not any(
        value.strip()
        for name, value in form.items()
        if name.startswith("free-") or name in ("standing-uses", "standing-any")
    ) and form.get("standing-hours", str(DEFAULT_HOURS)).strip() in ("", str(DEFAULT_HOURS))


def granting(
    responder: Responder,
    visit: Visit,
    request: Mapping[str, Any],
    approved: Mapping[str, Any],
    form: Mapping[str, str],
) -> tuple[dict[str, Any], StandingApproval] | VigilError:
    """The standing approval the form grants with its approval of ``approved``: the
    ``standing`` argument to send and the standing approval it makes (as the service would
    make it, now), or what refuses it: the form's fields, the tool's schema, the visitor's
    role, or the standing approval itself (a free member whose bound leaves out its value)."""
    try:
        terms = terms_of(form, request["action"], approved)
    except Unread as unread:
        return invalid(f"{unread}. Nothing was decided.")
    arguments = {
        "id": request["id"],
        "outcome": "approved",
        "version": request["version"],
        "standing": terms,
    }
    try:
        parsed = parse_arguments(catalog.tool("reply"), arguments)
    except VigilError as error:
        return error
    if not responder.may(visit, "reply"):
        return forbidden()
    standing = getattr(parsed, "standing", None)
    assert isinstance(standing, StandingInput)
    given: StandingTerms = standing.terms()
    try:
        granted = StandingApproval.granted(
            visit.principal.namespace,
            request["id"],
            request["requester"],
            visit.principal.id,
            dict(approved),
            given,
            responder.now(),
        )
    except VigilError as error:
        return error
    return terms, granted


def granted_said(
    granted: StandingApproval, terms: Mapping[str, Any], names: Mapping[str, str]
) -> Html:
    """The standing approval a confirmation grants, in words: how long, how many uses, who may
    ask and the shape it approves (each free member with its bound)."""
    asker = (
        join(["only ", named(granted.asker, None, names)])
        if granted.asker is not None
        else Html("any agent of the namespace")
    )
    uses = (
        f"at most {granted.uses} approval" + ("" if granted.uses == 1 else "s")
        if granted.uses is not None
        else "any number of approvals until it expires"
    )
    hours = terms["hours"]
    said = facts(
        [
            (
                "For",
                render(
                    "{length} hour{s} from when you confirm (until about {until})",
                    length=shown_json(hours).text,
                    s="" if hours == 1 else "s",
                    until=when(granted.expires_at.isoformat()),
                ),
            ),
            ("Uses", uses),
            ("Who may ask", asker),
            ("What it approves", shape_said(granted.model_dump()["free"])),
        ]
    )
    return render(
        '<section aria-labelledby="standing-confirm-title" id="standing-confirm">'
        '<h2 id="standing-confirm-title">And the same for a while: a standing approval</h2>'
        "{said}<p>Until then, each ask of that shape is approved at once, as your approval. "
        "You can revoke it on the {page} page.</p></section>",
        said=said,
        page=link(HERE, TITLE),
    )


def hidden_terms(terms: Mapping[str, Any]) -> Html:
    """The confirmed form's field that sends the standing approval as it was shown."""
    return render('<input type="hidden" name="standing" value="{t}">', t=json.dumps(terms))
