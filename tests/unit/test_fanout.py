"""The pieces of one call run side by side, answer in order, and a failure is raised only once
every piece has ended (vigil.kit.fanout)."""

from __future__ import annotations

import threading

import pytest

from vigil.kit import fanout


def test_pieces_run_side_by_side_and_answer_in_their_order() -> None:
    # Each piece waits until four are running at once: run one after another, they could not.
    together = threading.Barrier(4, timeout=5)

    def piece(n: int) -> int:
        together.wait()
        return n * n

    assert fanout.each([1, 2, 3, 4], piece) == [1, 4, 9, 16]


def test_one_at_a_time_runs_them_in_order_on_the_callers_thread() -> None:
    seen: list[tuple[int, str]] = []

    def piece(n: int) -> int:
        seen.append((n, threading.current_thread().name))
        return n

    with fanout.one_at_a_time():
        assert fanout.each([3, 1, 2], piece) == [3, 1, 2]
    assert seen == [(n, threading.current_thread().name) for n in (3, 1, 2)]
    assert fanout.serial is False


def test_a_failing_piece_is_raised_once_every_piece_has_ended() -> None:
    ended: list[int] = []
    release = threading.Event()

    def piece(n: int) -> int:
        if n == 0:
            raise ValueError("the first piece failed")
        release.wait(5)  # still running when the first has failed
        ended.append(n)
        return n

    threading.Timer(0.05, release.set).start()
    with pytest.raises(ValueError, match="first piece"):
        fanout.each([0, 1, 2], piece)
    assert sorted(ended) == [1, 2]
