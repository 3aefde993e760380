"""The service key: one secret per deployment, read once, and a key of its own per purpose."""

from __future__ import annotations

from vigil.kit.keys import Keys


def test_each_purpose_has_its_own_key_and_the_secret_is_read_once() -> None:
    reads: list[str] = []

    def load() -> str:
        reads.append("read")
        return "s" * 64

    keys = Keys(load)
    console, channels = keys.for_purpose("console-session"), keys.for_purpose("channel-secrets")
    assert len(console) == len(channels) == 32
    assert console != channels
    assert keys.for_purpose("console-session") == console
    assert reads == ["read"]
    assert Keys.fixed("t" * 64).for_purpose("console-session") != console
