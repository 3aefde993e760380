"""Conversations: those of the person's requests, and one conversation's messages with the
form that replies in it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from vigil.console.components import ident, link, named, relative, section, table
from vigil.console.html import Html, join, render
from vigil.console.pages.requests import conversation_title, first_line
from vigil.console.responder import PREFIX, Responder, Visit, idempotency_key
from vigil.kit.http import HttpRequest, HttpResponse

# The conversations listing looks up the titles of this many conversations (one call each);
# any further one is shown by its id.
TITLED = 20


# -- handlers ----------------------------------------------------------------------------------
def conversations(responder: Responder, request: HttpRequest, visit: Visit) -> HttpResponse:
    """There is no tool that lists a namespace's conversations: the page lists those of the
    person's requests (by title, for the first ``TITLED`` of them) and opens any other by its
    id."""
    found = responder.call(visit, "request_status")
    seen: dict[str, str] = {}
    if not isinstance(found, str):
        for r in found["requests"]:
            seen.setdefault(r["conversation_id"], first_line(r["body"]))
    rows = []
    for n, (conversation_id, about) in enumerate(seen.items()):
        title = conversation_title(responder, visit, conversation_id) if n < TITLED else None
        rows.append(
            [
                link("/console/conversation", title or ident(conversation_id), id=conversation_id),
                about,
            ]
        )
    body = join(
        [
            render(
                '<form method="get" action="/console/conversation" class="filters">'
                '<label for="id">Conversation id</label><input id="id" name="id" required>'
                '<button type="submit">Open</button></form>'
            ),
            section(
                "Conversations of your requests",
                "known",
                table("Conversations", ("Conversation", "About"), rows, "None yet."),
            ),
        ]
    )
    return responder.page("Conversations", body, visit, here=f"{PREFIX}/conversations")


def conversation(responder: Responder, request: HttpRequest, visit: Visit) -> HttpResponse:
    now = responder.now()
    conversation_id = request.query.get("id", "")
    if not conversation_id:
        return responder.unnamed("conversation", "/console/conversations", visit)
    found = responder.call(visit, "get_conversation", id=conversation_id)
    if isinstance(found, str):
        return responder.not_found("Conversation", found, visit)
    names = responder.names(visit)
    who = join(
        (
            render("{who} ({kind})", who=named(x["principal_id"], None, names), kind=x["kind"])
            for x in found["participants"]
        ),
        ", ",
    )
    live = join(
        [
            render(
                '<p class="meta">{kind} {ident} · {who}</p>',
                kind=found["kind"],
                ident=ident(conversation_id),
                who=who,
            ),
            message_list(found["messages"], now, visit.principal.id, names),
        ]
    )
    form = render(
        '<form method="post" action="/console/conversations/send" class="post">'
        '<input type="hidden" name="csrf" value="{csrf}">'
        '<input type="hidden" name="conversation_id" value="{id}">'
        '<input type="hidden" name="idempotency_key" value="{key}">'
        '<label for="body">Reply</label>'
        '<textarea id="body" name="body" rows="3" required></textarea>'
        '<button type="submit">Send</button></form>',
        csrf=visit.csrf,
        id=conversation_id,
        key=idempotency_key(),
    )
    others = [
        names.get(x["principal_id"], x["principal_id"])
        for x in found["participants"]
        if x["principal_id"] != visit.principal.id
    ]
    title = found["title"] or f"Conversation with {', '.join(others) or 'yourself'}"
    return responder.live_page(request, title, f"{PREFIX}/conversations", live, form, visit)


def send(responder: Responder, form: Mapping[str, str], visit: Visit) -> HttpResponse:
    return responder.post_text(visit, form, "send", "conversation_id", "conversation")


# -- what they show ----------------------------------------------------------------------------
def message_list(
    messages: Iterable[Mapping[str, Any]], now: datetime, me: str, names: Mapping[str, str]
) -> Html:
    """The messages, each under its author's name: the reader's own under "you"."""
    items = [
        render(
            '<li><p class="meta"><strong>{sender}</strong> · {sent}</p>'
            '<p class="body">{body}</p>{files}</li>',
            sender="you" if m["sender"] == me else named(m["sender"], None, names),
            sent=relative(m["sent_at"], now),
            body=m["body"],
            files=(
                render(
                    '<p class="files">Files: {names}</p>',
                    names=", ".join(f"{a['file_name']} ({a['size']} B)" for a in m["attachments"]),
                )
                if m["attachments"]
                else Html("")
            ),
        )
        for m in messages
    ]
    if not items:
        return Html('<p class="empty">No messages you may read yet.</p>')
    return render('<ol class="messages">{items}</ol>', items=join(items))
