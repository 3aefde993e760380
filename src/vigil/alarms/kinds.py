"""The kinds of timer that the notify function serves rather than the alarm function, named
here, apart from their handlers, so that what arms them (every function's alarms, a session's
beat, a mailbox's hand-out) loads nothing of the notifications to know them."""

from __future__ import annotations

# One attempt of a notification's delivery to a channel.
NOTIFY = "notify"
# What a Slack interaction is owed through its response_url, after it was acknowledged.
SLACK_RESPONSE = "slackresponse"
# An alert's repeat or escalation, until a person acknowledges it.
REMIND = "remind"
# The end of an envelope's last hand-out: unless acknowledged, it is a dead letter.
DEAD_LETTER = "deadletter"
# A session's watch: it has gone stale unless beaten since.
STALE = "stale"

NOTIFY_KINDS = (NOTIFY, SLACK_RESPONSE, REMIND, DEAD_LETTER, STALE)
# Those that never wait on a receiver: they have a queue of their own, so that none waits
# behind an attempt that does.
WATCH_KINDS = (REMIND, DEAD_LETTER, STALE)
