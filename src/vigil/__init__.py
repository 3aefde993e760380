"""Vigil: liveness, human-in-the-loop and messaging for AI agents."""

__version__ = "0.1.0"
