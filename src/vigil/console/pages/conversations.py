"""Conversations: those of the person's requests, and one conversation's messages with the
form that replies in it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from vigil.console.components import link, relative, section, table
from vigil.console.html import Html, join, render
from vigil.console.pages.requests import first_line
from vigil.console.responder import PREFIX, Responder, Visit, idempotency_key
from vigil.kit.http import HttpRequest, HttpResponse


# -- handlers ----------------------------------------------------------------------------------
def conversations(responder: Responder, request: HttpRequest, visit: Visit) -> HttpResponse:
    """There is no tool that lists a namespace's conversations: the page lists those of the
    person's requests and opens any other by its id."""
    found = responder.call(visit, "request_status")
    seen: dict[str, str] = {}
    if not isinstance(found, str):
        for r in found["requests"]:
            seen.setdefault(r["conversation_id"], first_line(r["body"]))
    rows = [[link("/console/conversation", c, id=c), about] for c, about in seen.items()]
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
    found = responder.call(visit, "get_conversation", id=conversation_id)
    if isinstance(found, str):
        return responder.not_found("Conversation", found, visit)
    who = ", ".join(f"{x['principal_id']} ({x['kind']})" for x in found["participants"])
    live = join(
        [
            render('<p class="meta">{kind} · {who}</p>', kind=found["kind"], who=who),
            message_list(found["messages"], now),
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
    title = found["title"] or f"Conversation {conversation_id}"
    return responder.live_page(request, title, f"{PREFIX}/conversations", live, form, visit)


def send(responder: Responder, form: Mapping[str, str], visit: Visit) -> HttpResponse:
    return responder.post_text(visit, form, "send", "conversation_id", "conversation")


# -- what they show ----------------------------------------------------------------------------
def message_list(messages: Iterable[Mapping[str, Any]], now: datetime) -> Html:
    items = [
        render(
            '<li><p class="meta"><strong>{sender}</strong> · {sent}</p>'
            '<p class="body">{body}</p>{files}</li>',
            sender=m["sender"],
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
