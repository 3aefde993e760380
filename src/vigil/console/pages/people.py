"""The namespace's people, agents and services, by name; and, for operators, adding one: the
secret it is issued is shown once, on the page that answers the form, with what to paste to
connect an agent (vigil.kit.snippets) or where a person signs in."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vigil.console.components import badge, ident, next_page, shown, table, views
from vigil.console.html import Html, join, render
from vigil.console.pages.links import unlink_form
from vigil.console.responder import PREFIX, Responder, Visit, idempotency_key
from vigil.errors import HTTP_STATUS, VigilError
from vigil.kit.http import HttpRequest, HttpResponse
from vigil.kit.snippets import claude_code_command, mcp_config

HERE = f"{PREFIX}/people"
ADD = f"{PREFIX}/people/add"
KINDS = {"agent": "Agents", "person": "People", "service": "Services"}


def people(responder: Responder, request: HttpRequest, visit: Visit) -> HttpResponse:
    kind = request.query.get("kind", "agent")
    if kind not in KINDS:
        kind = "agent"
    arguments: dict[str, Any] = {"kind": kind}
    if request.query.get("cursor"):
        arguments["cursor"] = request.query["cursor"]
    found = responder.call(visit, "list_directory", **arguments)

    def draw(page: Mapping[str, Any]) -> Html:
        rows = [(p["name"], ident(p["id"]), p["role"], badge(p["status"])) for p in page["items"]]
        caption = KINDS[kind] + (" (each one's mailbox is agent:<id>)" if kind == "agent" else "")
        headers = ("Name", "Id", "Role", "State")
        listing = table(caption, headers, rows, f"No {KINDS[kind].lower()}.", "directory")
        more = Html("")
        if page["next_cursor"]:
            more = next_page(HERE, {"kind": kind, "cursor": page["next_cursor"]})
        return join([listing, more])

    form = Html("")
    if responder.may(visit, "register"):
        form = join([add_form(kind, {}, None, visit.csrf), unlink_form(visit.csrf)])
    lead = views(HERE, "Which principals", KINDS, kind, "kind")
    return responder.live_page(
        request, "People and agents", HERE, shown(found, draw), form, visit, lead=lead
    )


def add_form(kind: str, values: Mapping[str, str], refusal: str | None, csrf: str) -> Html:
    """The operator's form that adds a principal, under an idempotency key of its own: sent
    twice, it adds one (and the second answer holds no secret)."""
    options = join(
        render(
            '<option value="{v}"{sel}>{t}</option>',
            v=value,
            t=value,
            sel=Html(" selected") if value == values.get("kind", kind) else Html(""),
        )
        for value in KINDS
    )
    role_operator = values.get("role") == "operator"
    problem = (
        render('<p class="problem" role="alert">{why}</p>', why=refusal) if refusal else Html("")
    )
    return render(
        '<section aria-labelledby="add-title" id="add"><h2 id="add-title">Add</h2>{problem}'
        '<form method="post" action="{action}" class="post">'
        '<input type="hidden" name="csrf" value="{csrf}">'
        '<input type="hidden" name="idempotency_key" value="{key}">'
        '<label for="add-kind">Kind</label><select id="add-kind" name="kind">{options}</select>'
        '<label for="add-name">Name</label>'
        '<input id="add-name" name="name" required maxlength="100" value="{name}">'
        '<div class="check"><input type="checkbox" id="add-role" name="role" '
        'value="operator"{checked}><label for="add-role">Operator: may add others and steer '
        "work</label></div>"
        '<button type="submit">Add and issue its secret</button></form></section>',
        problem=problem,
        action=ADD,
        csrf=csrf,
        key=values.get("idempotency_key") or idempotency_key(),
        options=options,
        name=values.get("name", ""),
        checked=Html(" checked") if role_operator else Html(""),
    )


def add(responder: Responder, form: Mapping[str, str], visit: Visit) -> HttpResponse:
    """Registers the principal the form names; the answer shows its secret, this once."""
    kind = form.get("kind", "")
    arguments = {
        "kind": kind,
        "name": form.get("name", ""),
        "role": "operator" if form.get("role") == "operator" else "worker",
        "idempotency_key": form.get("idempotency_key") or idempotency_key(),
    }
    done = responder.attempt(visit, "register", arguments)
    if isinstance(done, VigilError):
        if not responder.may(visit, "register"):
            return responder.not_done(done, HERE, visit)
        body = add_form(kind, form, done.message, visit.csrf)
        status = HTTP_STATUS[done.code]
        return responder.page("People and agents", body, visit, here=HERE, status=status)
    return responder.page(
        f"{done['principal']['name']} added", issued(done, visit), visit, here=HERE
    )


def issued(done: Mapping[str, Any], visit: Visit) -> Html:
    """The secret a new principal was issued, shown this once, and how it is used."""
    principal = done["principal"]
    secret = done["secret"]
    facts_line = render(
        '<p>{kind} <strong>{name}</strong> <span class="id">{id}</span>, {role}.</p>',
        kind=principal["kind"].capitalize(),
        name=principal["name"],
        id=principal["id"],
        role=principal["role"],
    )
    back = render(
        '<p><a href="{href}">Back to the list</a></p>', href=f"{HERE}?kind={principal['kind']}"
    )
    if secret is None:
        said = Html(
            '<p class="problem" role="alert">This form was sent twice: the secret was shown '
            "on the first answer only, and is not kept. Rotate it to issue another.</p>"
        )
        return join([facts_line, said, back])
    parts = [
        facts_line,
        render(
            "<p>Its secret, <strong>shown this once</strong> (Vigil keeps only its hash):</p>"
            '<p><code class="secret" id="new-secret">{secret}</code></p>',
            secret=secret,
        ),
    ]
    if principal["kind"] == "agent":
        parts.append(
            render(
                "<h2>Connect the agent</h2>"
                "<p>In its MCP host's configuration (Claude Desktop, Cursor, VS Code's "
                "<code>servers</code> take the same entry):</p>"
                '<pre class="snippet" id="mcp-config">{config}</pre>'
                "<p>Or with Claude Code:</p>"
                '<pre class="snippet" id="claude-code">{command}</pre>'
                "<p>Its mailbox address is <code>agent:{id}</code>.</p>",
                config=mcp_config(visit.mcp_url, secret),
                command=claude_code_command(visit.mcp_url, secret),
                id=principal["id"],
            )
        )
    elif principal["kind"] == "person":
        parts.append(
            render(
                '<p>Give it to them: they sign in to <a href="{console}">the console</a> with '
                "it, or use it with the CLI (<code>vigil profile add</code>).</p>",
                console=f"{visit.origin}{PREFIX}",
            )
        )
    return join([*parts, back])
