"""Conversations: those of the person's requests, one conversation's messages with the form
that replies in it, and the download of a file in one."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlencode

from vigil.console.components import ident, link, named, relative, section, table
from vigil.console.html import Html, join, render
from vigil.console.pages.requests import conversation_title, first_line
from vigil.console.responder import PREFIX, Responder, Visit, idempotency_key, redirect
from vigil.kit.http import HttpRequest, HttpResponse

# The media types a download keeps as declared: none of them is a document a browser runs.
INERT_TYPES = frozenset(
    {
        "application/json",
        "application/pdf",
        "application/zip",
        "image/gif",
        "image/jpeg",
        "image/png",
        "image/webp",
        "text/csv",
        "text/plain",
    }
)
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


def attachment(responder: Responder, request: HttpRequest, visit: Visit) -> HttpResponse:
    """A file the person may read, through download_attachment's own checks: its bytes as a
    download, or a redirect to the presigned URL of a larger one. Never shown inline: a file
    is its sender's data, and a page of this origin that ran it could act as the person."""
    file_id = request.query.get("id", "")
    if not file_id:
        return responder.unnamed("file", "/console/conversations", visit)
    found = responder.call(visit, "download_attachment", id=file_id)
    if isinstance(found, str):
        return responder.not_found("File", found, visit)
    if found["base64"] is None:
        return redirect(found["download_url"])
    headers = {
        "content-type": download_type(found["media_type"]),
        "content-disposition": disposition(found["file_name"]),
        "x-content-type-options": "nosniff",
        "content-security-policy": "default-src 'none'; sandbox",
        "cache-control": "no-store",
        "referrer-policy": "no-referrer",
    }
    return HttpResponse(200, base64.b64decode(found["base64"]), headers)


def download_type(declared: str) -> str:
    """The declared media type (without its parameters) if no browser runs or renders it as a
    page; application/octet-stream otherwise."""
    essence = declared.partition(";")[0].strip().lower()
    return essence if essence in INERT_TYPES else "application/octet-stream"


def disposition(file_name: str) -> str:
    """Content-Disposition for a download: an ASCII name for old browsers (anything else an
    underscore) and the exact name in UTF-8 (RFC 6266)."""
    fallback = "".join(c if " " <= c <= "~" and c not in '"\\' else "_" for c in file_name)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(file_name, safe='')}"


def send(responder: Responder, form: Mapping[str, str], visit: Visit) -> HttpResponse:
    return responder.post_text(visit, form, "send", "conversation_id", "conversation")


# -- what they show ----------------------------------------------------------------------------
def files(attachments: Iterable[Mapping[str, Any]]) -> Html:
    """A message's files, each a download link with its size."""
    return join(
        (
            render(
                '<a href="{href}" download>{name}</a> ({size} B)',
                href=f"{PREFIX}/attachment?{urlencode({'id': a['id']})}",
                name=a["file_name"],
                size=a["size"],
            )
            for a in attachments
        ),
        ", ",
    )


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
                render('<p class="files">Files: {files}</p>', files=files(m["attachments"]))
                if m["attachments"]
                else Html("")
            ),
        )
        for m in messages
    ]
    if not items:
        return Html('<p class="empty">No messages you may read yet.</p>')
    return render('<ol class="messages">{items}</ol>', items=join(items))
