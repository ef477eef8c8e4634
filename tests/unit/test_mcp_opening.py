"""What the MCP server serves is opened once, whichever thread asks first."""

from __future__ import annotations

import threading
import time

import anyio
import pytest

from bridge.mcp.opening import Opening


def test_callers_that_ask_at_once_share_one_opening() -> None:
    opened: list[int] = []

    def open_it() -> str:
        opened.append(threading.get_ident())
        time.sleep(0.05)  # long enough for every other caller to be waiting on it
        return "memory"

    opening = Opening(open_it)
    assert not opening.is_open

    async def everyone() -> list[str]:
        answers: list[str] = []

        async def ask() -> None:
            answers.append(await opening())

        async with anyio.create_task_group() as group:
            for _ in range(5):
                group.start_soon(ask)
        return answers

    assert anyio.run(everyone) == ["memory"] * 5
    assert len(opened) == 1 and opening.is_open
    # Not on the event loop's thread.
    assert opened[0] != threading.get_ident()


def test_a_failed_opening_fails_again_for_the_next_caller() -> None:
    tries: list[None] = []

    def open_it() -> str:
        tries.append(None)
        raise RuntimeError(f"try {len(tries)}")

    opening = Opening(open_it)
    with pytest.raises(RuntimeError, match="try 1"):
        opening.opened()
    with pytest.raises(RuntimeError, match="try 2"):
        anyio.run(opening)
    assert not opening.is_open


def test_then_builds_once_on_an_opening_and_at_once_on_what_is_open() -> None:
    built: list[str] = []

    def parts(memory: str) -> str:
        built.append(memory)
        return f"tools of {memory}"

    later = Opening(lambda: "memory").then(parts)
    assert built == []
    assert later.opened() == later.opened() == "tools of memory"
    assert built == ["memory"]

    now = Opening.of("open memory").then(parts)
    assert now.is_open and built == ["memory", "open memory"]
    assert anyio.run(now) == "tools of open memory"
