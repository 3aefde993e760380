"""The links a request's email carries for its recipient: to decide it, or to claim the address.

An email channel mails one address. Once a person has linked that address to themselves
(``notifications.accounts``, from the console), each email about an open approval or question
that person may decide carries a link minted for them: a token signed under the deployment's
key, naming the namespace, the request and the person, and ending with the request's deadline.
The link opens a page that changes nothing (mail scanners open links); only the form posted
from it decides, as the person it names, through ``reply``. Until the address is linked, the
email carries the link that claims it instead.
"""

from __future__ import annotations

from datetime import datetime
from urllib.parse import urlencode

from vigil.kit.keys import Keys
from vigil.kit.tokens import open_token, sign_token
from vigil.notifications.accounts import link_url
from vigil.notifications.events import Event
from vigil.notifications.summary import Link
from vigil.requests.events import RequestData

TOKEN_PURPOSE = "email-decision"  # noqa: S105 - names a key, is none
DECIDE_PATH = "/console/decide"
_DECIDABLE = frozenset({"approval", "question"})


def decision_url(
    keys: Keys,
    console_base: str,
    namespace: str,
    request_id: str,
    principal_id: str,
    expires_at: datetime,
) -> str:
    """The link that decides ``request_id`` as ``principal_id``, until ``expires_at``."""
    ends = int(expires_at.timestamp())
    token = sign_token(keys, TOKEN_PURPOSE, [namespace, request_id, principal_id, ends])
    return f"{console_base.rstrip('/')}{DECIDE_PATH}?{urlencode({'token': token})}"


def opened_decision(keys: Keys, token: str, now: datetime) -> tuple[str, str, str] | None:
    """``(namespace, request id, principal id)`` a decision link's token names, if it is ours
    and its request's deadline has not passed."""
    fields = open_token(keys, TOKEN_PURPOSE, token)
    if fields is None or len(fields) != 4 or not all(isinstance(f, str) for f in fields[:3]):
        return None
    namespace, request_id, principal_id, ends = fields
    if not isinstance(ends, int) or now.timestamp() >= ends:
        return None
    return namespace, request_id, principal_id


def email_links(
    keys: Keys,
    console_base: str | None,
    event: Event,
    address: str,
    recipient: str | None,
    now: datetime,
) -> tuple[Link, ...]:
    """What the email about ``event`` to ``address`` carries besides the console's links: the
    decision link of ``recipient`` (the person the address is linked to) if they may decide
    the open request; the link that claims the address if nobody has linked it."""
    data = event.data
    if console_base is None or not isinstance(data, RequestData):
        return ()
    if data.state != "open" or data.kind not in _DECIDABLE:
        return ()
    if recipient is None:
        claim = link_url(keys, console_base, event.namespace, "email", address, now)
        return (Link("claim", "Decide from email: link this address to you", claim),)
    if recipient not in data.audience:
        return ()
    url = decision_url(
        keys, console_base, event.namespace, data.request_id, recipient, data.expires_at
    )
    return (Link("decide", "Decide here", url, "primary"),)
