"""The functions' wiring: an AWS client built on first use is built once, however many of a
call's pieces (a batch's beats, side by side) meet it unbuilt at the same moment."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from vigil import wiring


def test_a_client_used_first_by_many_threads_at_once_is_built_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[str] = []
    inside = []

    class Client:
        def ping(self) -> str:
            return "pong"

    def slow_build(service: str, read_timeout: int = 5) -> Any:
        inside.append(1)
        concurrent = len(inside)
        time.sleep(0.05)  # long enough for every thread to arrive while one builds
        built.append(f"{service}:{concurrent}")
        inside.pop()
        return Client()

    monkeypatch.setattr(wiring, "aws_client", slow_build)
    lazy = wiring.OnFirstUse("sqs")
    start = threading.Barrier(8)
    answers: list[str] = []

    def use() -> None:
        start.wait()
        answers.append(lazy.ping())

    threads = [threading.Thread(target=use) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == ["pong"] * 8
    assert built == ["sqs:1"]  # one build, never two at once
