import threading

import pytest

from layers.episodic.round_trips import at_once, one_then_other


def test_at_once_runs_the_second_on_another_thread_while_the_first_runs() -> None:
    # Each waits for the other to have started: one after the other, they would time out.
    both_started = threading.Barrier(2, timeout=5)

    def first() -> str:
        both_started.wait()
        return threading.current_thread().name

    def second() -> str:
        both_started.wait()
        return threading.current_thread().name

    first_thread, second_thread = at_once(first, second)
    assert first_thread == threading.current_thread().name
    assert second_thread.startswith("thoth-round-trips")


def test_at_once_raises_the_first_error_after_the_second_has_finished() -> None:
    finished: list[str] = []

    def failing() -> None:
        raise ValueError("the first failed")

    def slow() -> None:
        threading.Event().wait(0.05)
        finished.append("second")

    with pytest.raises(ValueError, match="the first failed"):
        at_once(failing, slow)
    assert finished == ["second"]


def test_one_then_other_stays_on_this_thread() -> None:
    here = threading.current_thread().name
    assert one_then_other(lambda: threading.current_thread().name,
                          lambda: threading.current_thread().name) == (here, here)
