"""Notifications: the channels a namespace's events reach people through (signed webhooks,
Slack, email), the events themselves, and their delivery."""
