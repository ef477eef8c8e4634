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
    # The second has started when the first fails: it is waited for, not left running.
    started = threading.Event()
    finished: list[str] = []

    def failing() -> None:
        assert started.wait(5)
        raise ValueError("the first failed")

    def slow() -> None:
        started.set()
        threading.Event().wait(0.05)
        finished.append("second")

    with pytest.raises(ValueError, match="the first failed"):
        at_once(failing, slow)
    assert finished == ["second"]


def test_one_then_other_stays_on_this_thread() -> None:
    here = threading.current_thread().name
    assert one_then_other(lambda: threading.current_thread().name,
                          lambda: threading.current_thread().name) == (here, here)


def test_at_once_raises_the_second_error_when_only_the_second_fails() -> None:
    def failing() -> None:
        raise KeyError("the second failed")

    with pytest.raises(KeyError, match="the second failed"):
        at_once(lambda: "first", failing)


def test_at_once_runs_the_second_here_when_every_thread_is_busy(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from concurrent.futures import ThreadPoolExecutor

    import layers.episodic.round_trips as round_trips

    # One thread, held until the test lets it go: the second cannot start there.
    busy = ThreadPoolExecutor(max_workers=1)
    release = threading.Event()
    busy.submit(release.wait)
    monkeypatch.setattr(round_trips, "_pool", busy)
    try:
        first, second = at_once(lambda: "first", lambda: threading.current_thread().name)
        assert (first, second) == ("first", threading.current_thread().name)
    finally:
        release.set()
        busy.shutdown()
