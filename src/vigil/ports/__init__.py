"""Ports: what the application needs from storage, one abstract class per tool family."""
