"""An event as an email: a one-line subject, a plain-text body and an HTML body in which every
value is escaped; and sending it through Amazon SES (API v2, ``sesv2``).

Like the other formats, it links to the console; an email about a request its recipient may
decide also carries that recipient's own decision link (``email_links``), which opens a page
that decides only when its form is posted.
"""

from __future__ import annotations

import html
from dataclasses import replace
from typing import Any

from vigil.kit.events import cut
from vigil.notifications.events import Event
from vigil.notifications.summary import Link, summarise

MAX_SUBJECT = 200
CHARSET = "UTF-8"


def _one_line(text: str) -> str:
    """``text`` without line breaks or other control characters: a header cannot be split."""
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())


def email_message(
    event: Event, console_base: str | None, extra: tuple[Link, ...] = ()
) -> tuple[str, str, str]:
    """``(subject, text_body, html_body)`` for ``event``, with links to the console under
    ``console_base`` (none without), ``extra`` first."""
    summary = summarise(event, console_base)
    summary = replace(summary, links=(*extra, *summary.links))
    subject = cut(_one_line(f"[Vigil] {summary.title}"), MAX_SUBJECT)

    text = [summary.title, ""]
    if summary.text:
        text += [summary.text, ""]
    text += [f"{label}: {value}" for label, value in summary.fields]
    if summary.action is not None:
        text += ["", "Bound action:"]
        if summary.action.warning is not None:
            text += [f"Warning: {summary.action.warning}"]
        text += [summary.action.text]
    if summary.links:
        text += ["", *(f"{link.label}: {link.url}" for link in summary.links)]
    text += ["", "-- ", summary.footer]

    def e(value: str) -> str:
        return html.escape(value, quote=True)

    parts = [f'<h1 style="font-size:1.25em">{e(summary.title)}</h1>']
    if summary.text:
        parts.append(f'<p style="white-space:pre-wrap">{e(summary.text)}</p>')
    rows = "".join(
        f'<tr><th align="left" style="padding-right:1em">{e(label)}</th><td>{e(value)}</td></tr>'
        for label, value in summary.fields
    )
    parts.append(f"<table>{rows}</table>")
    if summary.action is not None:
        parts.append("<p>Bound action:</p>")
        if summary.action.warning is not None:
            warning = e(summary.action.warning)
            parts.append(f'<p style="color:#cf222e;font-weight:bold">Warning: {warning}</p>')
        parts.append(f"<pre>{e(summary.action.text)}</pre>")
    if summary.links:
        links = " · ".join(f'<a href="{e(link.url)}">{e(link.label)}</a>' for link in summary.links)
        parts.append(f"<p>{links}</p>")
    parts.append(f'<p style="color:#666;font-size:0.85em">{e(summary.footer)}</p>')
    body = "\n".join(parts)
    document = (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{e(subject)}</title></head>\n<body>\n{body}\n</body></html>\n"
    )
    return subject, "\n".join(text) + "\n", document


def send_email(
    ses_client: Any,
    sender: str,
    recipient: str,
    event: Event,
    console_base: str | None,
    extra: tuple[Link, ...] = (),
) -> str:
    """Send ``event`` from ``sender`` (an identity SES has verified) to ``recipient`` with
    ``ses_client`` (a boto3 ``sesv2`` client); the message id SES gives it. SES's errors are
    boto3's (``botocore.exceptions.ClientError``), left to the caller to judge."""
    subject, text, document = email_message(event, console_base, extra)
    response = ses_client.send_email(
        FromEmailAddress=sender,
        Destination={"ToAddresses": [recipient]},
        Content={
            "Simple": {
                "Subject": {"Data": subject, "Charset": CHARSET},
                "Body": {
                    "Text": {"Data": text, "Charset": CHARSET},
                    "Html": {"Data": document, "Charset": CHARSET},
                },
            }
        },
    )
    return str(response["MessageId"])
