"""Durable, precise alarms: the timer queue for the last 900 s, the Scheduler before."""
