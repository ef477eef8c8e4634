"""A sync store as a coroutine sees it: every use runs in a worker thread.

The stores are sync (SQLite has no async driver in the standard library, and a call is
well under a millisecond unless it waits for the write lock), and a call made straight
from a coroutine stalls every conversation on its loop while it waits. A consumer that
runs on a loop is therefore given ``Offloaded(store)``, built by the composition root,
never the store: it has no sync method to call by mistake, only ``run``, which must be
awaited (mypy says so when it is not).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

Store = TypeVar("Store")
Result = TypeVar("Result")


class Offloaded(Generic[Store]):
    __slots__ = ("_store",)

    def __init__(self, store: Store) -> None:
        self._store = store

    async def run(self, use: Callable[[Store], Result]) -> Result:
        """``use(store)`` in a worker thread: one hop, however many calls ``use`` makes."""
        return await asyncio.to_thread(use, self._store)
