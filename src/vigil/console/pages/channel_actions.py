"""What operators' channel forms do, each through its tool: create a channel and rotate a
webhook's signing secret (answered by the page that shows the secret, once), send a test
(answered by what the receiver said), disable or enable, and delete after a page that asks
again."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vigil.console.components import badge, facts, ident, when
from vigil.console.html import Html, join, render
from vigil.console.pages.channels import (
    HERE,
    channel_path,
    channel_summary,
    channels_refused,
    create_arguments,
    find_channel,
)
from vigil.console.responder import Responder, Visit, idempotency_key, integer, redirect
from vigil.errors import VigilError
from vigil.kit.http import HttpResponse


def create(responder: Responder, form: Mapping[str, str], visit: Visit) -> HttpResponse:
    """A new channel, under the idempotency key the form was rendered with: sent twice, it
    is made once. A refusal is said on the channels' page, above the form as it was sent."""
    done = responder.attempt(visit, "create_channel", create_arguments(form))
    if isinstance(done, VigilError):
        if not responder.may(visit, "create_channel"):
            return responder.not_done(done, HERE, visit)
        return channels_refused(responder, visit, form, done)
    return _issued(responder, visit, done, f"Channel “{done['channel']['name']}” created")


def rotate(responder: Responder, form: Mapping[str, str], visit: Visit) -> HttpResponse:
    """A new signing secret for a webhook, at the version the page showed."""
    channel_id = form.get("id", "")
    done = responder.attempt(visit, "rotate_channel_secret", _bound(form))
    if isinstance(done, VigilError):
        return responder.not_done(done, channel_path(channel_id), visit)
    return _issued(responder, visit, done, f"A new signing secret for “{done['channel']['name']}”")


def set_state(responder: Responder, form: Mapping[str, str], visit: Visit) -> HttpResponse:
    arguments = {**_bound(form), "state": form.get("state", "")}
    return responder.act(visit, "set_channel_state", arguments, channel_path(form.get("id", "")))


def test(responder: Responder, form: Mapping[str, str], visit: Visit) -> HttpResponse:
    """One channel.test event, sent now: the page says what the receiver answered."""
    channel_id = form.get("id", "")
    back = channel_path(channel_id)
    done = responder.attempt(visit, "test_channel", {"id": channel_id})
    if isinstance(done, VigilError):
        return responder.not_done(done, back, visit)
    found = find_channel(responder, visit, channel_id)
    name = found if isinstance(found, str) else found["name"]
    body = join(
        [
            facts(
                [
                    ("Outcome", badge(done["outcome"])),
                    ("The receiver", done["reason"]),
                    ("Test event", ident(done["event_id"])),
                    ("Sent", when(done["tested_at"])),
                ]
            ),
            render('<p><a href="{back}">Back to the channel</a></p>', back=back),
        ]
    )
    return responder.page(f"Test of “{name}”", body, visit, here=HERE)


def delete(responder: Responder, form: Mapping[str, str], visit: Visit) -> HttpResponse:
    """Deleting a channel: the form's first submission asks again on a page that names what
    it sends where; only the confirmation (``confirm=yes``) deletes, at the version read."""
    channel_id = form.get("id", "")
    back = channel_path(channel_id)
    arguments = _bound(form)
    if form.get("confirm") == "yes":
        done = responder.attempt(visit, "delete_channel", arguments)
        if isinstance(done, VigilError):
            return responder.not_done(done, back, visit)
        return redirect(HERE)
    refusal = responder.check(visit, "delete_channel", arguments)
    if refusal is not None:
        return responder.not_done(refusal, back, visit)
    found = find_channel(responder, visit, channel_id)
    if isinstance(found, str):
        return responder.not_found("Channel", found, visit)
    if str(found["version"]) != form.get("version"):
        why = (
            f"version_conflict: this channel is at version {found['version']}, not the "
            "version you read."
        )
        return responder.changed(why, back, visit)
    return responder.page(
        f"Delete “{found['name']}”?", _confirmation(found, visit.csrf, back), visit, here=HERE
    )


def _bound(form: Mapping[str, str]) -> dict[str, Any]:
    """The arguments of a change bound to the version the page showed."""
    return {
        "id": form.get("id", ""),
        "version": integer(form.get("version")),
        "idempotency_key": form.get("idempotency_key") or None,
    }


def _confirmation(channel: Mapping[str, Any], csrf: str, back: str) -> Html:
    return render(
        "{facts}"
        "<p>It will receive nothing more, and this cannot be undone.</p>"
        '<form method="post" action="/console/channels/delete" class="reply">'
        '<input type="hidden" name="csrf" value="{csrf}">'
        '<input type="hidden" name="id" value="{id}">'
        '<input type="hidden" name="version" value="{version}">'
        '<input type="hidden" name="idempotency_key" value="{key}">'
        '<input type="hidden" name="confirm" value="yes">'
        '<div class="decision"><button type="submit" class="deny">Yes, delete</button>'
        '<a href="{back}">Cancel</a></div></form>',
        facts=channel_summary(channel),
        csrf=csrf,
        id=channel["id"],
        version=channel["version"],
        key=idempotency_key(),
        back=back,
    )


def _issued(
    responder: Responder, visit: Visit, issued: Mapping[str, Any], title: str
) -> HttpResponse:
    """The page that answers a form that issued a signing secret: the secret, this once.
    Sent twice, the form's second answer is a replay, which holds no secret: the page says
    where it went instead. An email or Slack channel has none."""
    channel = issued["channel"]
    path = channel_path(channel["id"])
    secret = issued["signing_secret"]
    if secret is not None:
        said = render(
            "<p>Its signing secret, <strong>shown this once</strong>: give it to the receiver "
            "now. No page shows it again; if it is lost, rotate it on "
            '<a href="{path}">the channel\'s page</a>.</p>'
            '<p><code class="secret" id="signing-secret">{secret}</code></p>',
            path=path,
            secret=secret,
        )
    elif channel["kind"] == "webhook":
        said = render(
            '<p class="problem" role="alert">This form was sent twice: its signing secret was '
            "shown only on the page that answered it first, which this page replaced. If it "
            'was not copied, rotate it on <a href="{path}">the channel\'s page</a>.</p>',
            path=path,
        )
    else:
        said = Html("")
    body = join(
        [
            said,
            channel_summary(channel),
            render(
                '<p><a href="{path}">The channel\'s page</a> · '
                '<a href="{all}">All channels</a></p>',
                path=path,
                all=HERE,
            ),
        ]
    )
    return responder.page(title, body, visit, here=HERE)
