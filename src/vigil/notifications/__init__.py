"""Notifications: what Vigil tells the people watching it, outside Vigil. Something worth a
person's attention (a dead-man switch fired, a request opened, expiring, answered or expired, a
session gone stale, a delivery dead-lettered) becomes an event: a typed, versioned-by-schema
envelope with a stable id. Each channel type has its own format of it: the signed JSON body of a
Standard Webhooks webhook, a Slack message of links back to the console (never an action taken
from Slack itself), or an email sent through SES; and webhooks and Slack are sent by one guarded
HTTP POST that never follows a redirect nor reaches a private address, and says whether a
failure is worth retrying. Channels (``records.py``) are where a namespace's events go, and
which of them.

An event is written down by ``outbox`` in the commit of what it tells of, delivered by the
notify function (``deliverer``, sending through ``sending``), and its failures replayed by an
operator (``replay``); the tools are gathered in ``tools``.
"""
