"""The bridge's loop: a scheduler job waiting on it never outlives the shutdown."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading

import pytest

from bridge.slack.runner import TurnRunner


def test_a_job_waiting_on_the_loop_is_cancelled_by_shutdown_and_refused_after() -> None:
    runner = TurnRunner()
    runner.start()
    started = threading.Event()
    outcome: list[BaseException] = []

    async def sweep() -> list[str]:
        started.set()
        await asyncio.sleep(3600)  # a drain or a reflection that outlasts the shutdown
        return []

    def job() -> None:
        try:
            runner.wait_for(sweep())
        except BaseException as error:  # noqa: BLE001 - what the job thread would see
            outcome.append(error)

    thread = threading.Thread(target=job)
    thread.start()
    assert started.wait(timeout=10)
    runner.shutdown(0.2)
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], concurrent.futures.CancelledError)

    async def late() -> None:
        return None

    with pytest.raises(RuntimeError, match="shutting down"):
        runner.wait_for(late())
