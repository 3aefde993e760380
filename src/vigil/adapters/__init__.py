"""Adapters to the outside world: each has a real implementation and an in-memory fake."""
