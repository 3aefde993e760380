"""Routing, for operators: what claims and routing rules are, each in one paragraph; the
namespace's rules in words, with names; and the form that replaces them, the rules as JSON at
the version read (``routing_rules``), refused with its reason, changing nothing, when the
JSON or a rule is not what it must be (vigil.requests.routing)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from vigil.console.components import named, problem, table
from vigil.console.html import Html, join, render
from vigil.console.responder import PREFIX, Responder, Visit, integer, reason, redirect
from vigil.errors import HTTP_STATUS, ErrorCode, VigilError
from vigil.kit.canonical import shown_json
from vigil.kit.http import HttpRequest, HttpResponse, json_body

HERE = f"{PREFIX}/routing"
SET = f"{PREFIX}/routing/set"
TITLE = "Routing"
# What a claim is, and what routing is, each in one paragraph.
CLAIMS_EXPLAINED = (
    "A claim says who is handling a request. A person who may decide an open request can "
    "claim it for a while, on its page (30 minutes unless they say otherwise): everyone sees "
    "whose hands it is in, and it leaves the others' “Waiting for me” list until its holder "
    "releases it or the claim runs out. A claim never stops a decision: any of the request's "
    "deciders may still decide it, and the first decision stands."
)
ROUTING_EXPLAINED = (
    "Routing claims each new request for someone as it is asked. A rule picks requests by "
    "the agent that asks, their kind and their action's op (a rule that names none of these "
    "picks every request), and names people in order: the request is assigned to the first "
    "of them who may decide it, or, for a rule that takes turns, to the one of them assigned "
    "longest ago, for the rule's minutes. The first rule that picks a request decides; a "
    "request no rule picks, or whose deciders include none of its rule's people, is left for "
    "anyone to claim. Routing never lets anyone decide a request they could not decide "
    "before: it only chooses among its deciders."
)
HEADERS = ("Rule", "Which requests", "Who takes them", "For")
# A rule's members, in the order the form shows them.
MEMBERS = ("asker", "kind", "op", "to", "least_recent", "minutes")
EXAMPLE = (
    '[{"kind": "approval", "op": "pay", "to": ["per_…", "per_…"], "least_recent": true, '
    '"minutes": 60}]'
)


def routing(responder: Responder, request: HttpRequest, visit: Visit) -> HttpResponse:
    if not responder.may(visit, "routing_rules"):
        return responder.refused(403, "Only operators route requests.", visit)
    found = responder.attempt(visit, "routing_rules", {})
    if isinstance(found, VigilError):
        return responder.not_done(found, PREFIX, visit)
    return _page(responder, visit, found, rules_json(found["rules"]), None)


def set_rules(responder: Responder, form: Mapping[str, str], visit: Visit) -> HttpResponse:
    """Replaces the rules with the form's JSON, at the version the page was read at: back to
    the page, or the page again with why not and the text as it was sent (nothing changed)."""
    text = form.get("rules", "")
    try:
        rules = json_body(text.encode())
    except VigilError as error:
        return _again(responder, visit, text, error.code, _not_json(text, error))
    if not isinstance(rules, list):
        return _again(
            responder,
            visit,
            text,
            ErrorCode.INVALID_ARGUMENT,
            "invalid_argument: the rules are a JSON list, [] for none. Nothing was changed.",
        )
    arguments = {"rules": rules, "version": integer(form.get("version"))}
    done = responder.attempt(visit, "routing_rules", arguments)
    if not isinstance(done, VigilError):
        return redirect(HERE)
    if done.code is ErrorCode.VERSION_CONFLICT:
        said = (
            f"{reason(done)}. The rules changed since you read them: nothing was changed. "
            "They are listed as they are now; your text is kept below, to check against them "
            "before you replace them again."
        )
        return _again(responder, visit, text, done.code, said)
    if done.code is ErrorCode.FORBIDDEN:
        return responder.not_done(done, HERE, visit)
    return _again(responder, visit, text, done.code, f"{reason(done)}. Nothing was changed.")


def _not_json(text: str, error: VigilError) -> str:
    """Why the text is not the rules' JSON, where the reader stopped if it can say."""
    try:
        json.loads(text)
    except json.JSONDecodeError as found:
        return (
            f"{error.code.value}: the rules are not JSON (line {found.lineno}, column "
            f"{found.colno}: {found.msg}). Nothing was changed."
        )
    return f"{reason(error)}. Nothing was changed."


def _again(
    responder: Responder, visit: Visit, text: str, code: ErrorCode, said: str
) -> HttpResponse:
    """The page once more, the rules as they are now, with ``said`` over the form and the
    text as it was sent in it."""
    found = responder.attempt(visit, "routing_rules", {})
    if isinstance(found, VigilError):
        return responder.not_done(found, HERE, visit)
    return _page(responder, visit, found, text, said, status=HTTP_STATUS[code])


def _page(
    responder: Responder,
    visit: Visit,
    found: Mapping[str, Any],
    text: str,
    refusal: str | None,
    status: int = 200,
) -> HttpResponse:
    names = responder.names(visit)
    listing = table(
        "The rules, in order: the first that picks a request decides",
        HEADERS,
        [rule_row(n, rule, names) for n, rule in enumerate(found["rules"], 1)],
        "No rules: new requests are assigned to no one, and anyone of their deciders may "
        "claim them.",
        "rules",
    )
    body = join(
        [
            render(
                '<p class="intro" id="claims-explained">{claims}</p>'
                '<p class="intro" id="routing-explained">{routing}</p>',
                claims=CLAIMS_EXPLAINED,
                routing=ROUTING_EXPLAINED,
            ),
            listing,
            _form(text, found["version"], refusal, visit.csrf),
            _ids(names),
        ]
    )
    return responder.page(TITLE, body, visit, here=HERE, status=status)


def _form(text: str, version: int, refusal: str | None, csrf: str) -> Html:
    return render(
        '<section aria-labelledby="replace-title" id="replace">'
        '<h2 id="replace-title">Replace the rules</h2>{problem}'
        '<form method="post" action="{action}" class="post">'
        '<input type="hidden" name="csrf" value="{csrf}">'
        '<input type="hidden" name="version" value="{version}">'
        '<label for="rules-json">The rules as JSON, in order</label>'
        '<textarea id="rules-json" name="rules" class="json" rows="12" spellcheck="false" '
        'aria-describedby="rules-help">{text}</textarea>'
        '<p class="hint" id="rules-help">A list of rules, [] for none. Each names '
        "<code>to</code>, people by id, in order; and may name <code>asker</code> (an "
        "agent's id), <code>kind</code> (approval, question or task), <code>op</code> (the "
        "action's op, exactly), <code>least_recent</code> (true: take turns, instead of the "
        "first of them) and <code>minutes</code> (how long the request is theirs, 60 "
        "unless said). For example: <code>{example}</code></p>"
        '<button type="submit">Replace the rules</button></form></section>',
        problem=problem(refusal) if refusal else Html(""),
        action=SET,
        csrf=csrf,
        version=version,
        text=text,
        example=EXAMPLE,
    )


def _ids(names: Mapping[str, str]) -> Html:
    """The ids the rules name people and agents by, folded away."""
    rows = [
        (name, render('<span class="id">{id}</span>', id=principal))
        for principal, name in sorted(names.items(), key=lambda item: (item[0][:4], item[1]))
        if principal.startswith(("per_", "agt_"))
    ]
    if not rows:
        return Html("")
    return render(
        '<details class="standing" id="ids"><summary>The ids of people and agents</summary>'
        "{listing}</details>",
        listing=table("People (per_) and agents (agt_)", ("Name", "Id"), rows, ""),
    )


def rules_json(rules: Sequence[Mapping[str, Any]]) -> str:
    """The rules as the form holds them: each one's members that say something, one rule a
    line."""
    if not rules:
        return "[]"
    lines = [
        json.dumps(
            {
                member: rule[member]
                for member in MEMBERS
                if rule.get(member) is not None
                and not (member == "least_recent" and rule[member] is False)
            },
            ensure_ascii=False,
        )
        for rule in rules
    ]
    return "[\n  " + ",\n  ".join(lines) + "\n]"


def rule_row(number: int, rule: Mapping[str, Any], names: Mapping[str, str]) -> list[Any]:
    """One rule in words, by names: which requests it picks, who takes them, for how long."""
    what: list[Any] = [f"{rule['kind']}s" if rule["kind"] else "requests"]
    if rule["asker"]:
        what += [" from ", named(rule["asker"], None, names)]
    if rule["op"] is not None:
        what += [
            " whose action's op is ",
            render("<code>{op}</code>", op=shown_json(rule["op"]).text),
        ]
    people = join((named(p, None, names) for p in rule["to"]), ", ")
    if len(rule["to"]) == 1:
        whom = join([people, ", if they may decide it"])
    elif rule["least_recent"]:
        whom = join(["whichever of ", people, " was assigned longest ago"])
    else:
        whom = join(["the first of ", people, " who may decide it"])
    minutes = rule["minutes"]
    return [number, join(what), whom, f"{minutes} minute{'' if minutes == 1 else 's'}"]
