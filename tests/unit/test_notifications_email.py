"""The email format (a header-safe subject, a text body, an HTML body with every value escaped)
and its sending through SES v2, read back from what moto recorded."""

from __future__ import annotations

from html.parser import HTMLParser

import boto3
import pytest
from botocore.exceptions import ClientError
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ses.models import ses_backends

from tests.notifications_support import (
    CONSOLE,
    DISGUISED,
    HOSTILE,
    NAMESPACE,
    T0,
    approval,
    death,
    opened,
    sample,
    samples,
)
from vigil.notifications.email import MAX_SUBJECT, email_message, send_email
from vigil.notifications.events import EVENT_TYPES, Event, EventType, make_event
from vigil.switches.events import SwitchFired

SENDER = "alerts@vigil.example.com"
RECIPIENT = "oncall@example.com"
OUR_TAGS = {
    "html",
    "head",
    "meta",
    "title",
    "body",
    "h1",
    "p",
    "table",
    "tr",
    "th",
    "td",
    "pre",
    "a",
}


class Markup(HTMLParser):
    """The tags, links and text of an HTML document, as a browser's parser reads them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.hrefs: list[str | None] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "a":
            self.hrefs.extend(value for name, value in attrs if name == "href")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parsed(document: str) -> Markup:
    markup = Markup()
    markup.feed(document)
    markup.close()
    return markup


@pytest.mark.parametrize("event", samples(), ids=lambda event: event.type)
def test_no_value_adds_markup_to_the_html(event: Event) -> None:
    subject, text, document = email_message(event, CONSOLE)
    markup = parsed(document)
    assert set(markup.tags) <= OUR_TAGS
    assert all(href is not None and href.startswith(CONSOLE + "/console/") for href in markup.hrefs)
    assert "<b>bold</b>" not in document
    shown = "".join(markup.text)
    if event.type.startswith("request."):
        # What the person reads is the text as written, in both bodies.
        assert HOSTILE in shown
        assert HOSTILE in text
    assert subject.startswith("[Vigil] ")
    assert NAMESPACE in text
    assert event.id in shown


def test_an_open_approval_links_to_the_console_to_approve_or_deny() -> None:
    subject, text, document = email_message(sample("request.opened"), CONSOLE)
    page = f"{CONSOLE}/console/request?id=req_cccccccccccccccc"
    assert parsed(document).hrefs == [page, page]
    assert f"Approve in the console: {page}" in text
    assert f"Deny in the console: {page}" in text
    assert '"target": "<prod>"' in text  # the bound action, exactly
    assert "&quot;target&quot;: &quot;&lt;prod&gt;&quot;" in document
    assert subject.startswith("[Vigil] Approval opened: <!channel> & ")


def test_a_disguised_action_is_shown_escaped_under_its_warning() -> None:
    _, text, document = email_message(opened(approval(action=DISGUISED)), CONSOLE)
    html_text = "".join(parsed(document).text)
    for body in (text, html_text):
        assert "\u200b" not in body
        assert "\u202e" not in body
        assert '"op\\u200b": "drop-database"' in body
        assert '"file": "\\u202egnp.hs"' in body
        assert "U+202E RIGHT-TO-LEFT OVERRIDE" in body
        assert body.index("outside printable ASCII") < body.index("drop-database")


def test_a_switch_links_to_its_page_with_the_scope_encoded() -> None:
    subject, text, document = email_message(sample("switch.fired"), CONSOLE)
    assert subject == "[Vigil] Switch fired: deploy <prod> & co"
    page = f"{CONSOLE}/console/switch?scope=deploy+%3Cprod%3E+%26+co"
    assert parsed(document).hrefs == [page]
    assert "Late by: 1.25 s" in text


@pytest.mark.parametrize("event_type", EVENT_TYPES)
def test_without_a_console_there_are_no_links(event_type: EventType) -> None:
    _, text, document = email_message(sample(event_type, console_base=None), None)
    assert parsed(document).hrefs == []
    assert "/console/" not in text


def test_the_subject_is_one_bounded_line_whatever_the_scope() -> None:
    scope = "a\r\nBcc: everyone@example.com\r\n\r\n" + "x" * 300
    event = make_event(
        "switch.fired",
        SwitchFired.of(death(scope=scope)),
        namespace=NAMESPACE,
        occurred_at=T0,
        console_base=None,
    )
    subject, _, _ = email_message(event, None)
    assert "\r" not in subject
    assert "\n" not in subject
    assert subject.startswith("[Vigil] Switch fired: a Bcc: everyone@example.com x")
    assert len(subject) == MAX_SUBJECT
    assert subject.endswith("…")


@pytest.fixture
def ses(aws: None) -> object:
    return boto3.client("sesv2", region_name="us-east-1")


def test_an_event_is_sent_through_ses_v2_as_moto_records_it(ses: object) -> None:
    ses.create_email_identity(EmailIdentity=SENDER)  # type: ignore[attr-defined]
    event = sample("request.opened")
    message_id = send_email(ses, SENDER, RECIPIENT, event, CONSOLE)

    subject, _, document = email_message(event, CONSOLE)
    [sent] = ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages
    assert sent.id == message_id
    assert sent.source == SENDER
    assert sent.destinations == {"ToAddresses": [RECIPIENT]}
    assert sent.subject == subject
    # moto keeps one body of a simple message: the HTML one when there is one.
    assert sent.body == document


def test_an_unverified_sender_is_refused_by_ses_and_the_error_is_the_callers(ses: object) -> None:
    with pytest.raises(ClientError) as refused:
        send_email(ses, SENDER, RECIPIENT, sample("switch.fired"), CONSOLE)
    assert refused.value.response["Error"]["Code"] == "MessageRejected"
    assert ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages == []
