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
from typing import Concatenate, Generic, ParamSpec, TypeVar

Store = TypeVar("Store")
Result = TypeVar("Result")
Arguments = ParamSpec("Arguments")


class Offloaded(Generic[Store]):
    __slots__ = ("_store",)

    def __init__(self, store: Store) -> None:
        self._store = store

    async def run(
        self,
        use: Callable[Concatenate[Store, Arguments], Result],
        /,
        *args: Arguments.args,
        **kwargs: Arguments.kwargs,
    ) -> Result:
        """``use(store, *args, **kwargs)`` in a worker thread: one hop, however many calls
        ``use`` makes. ``use`` is a function of the store (``lambda sessions: …``, or a
        method of its class with the arguments after it: ``run(IngestOutbox.hold, id,
        until)``, as a loop passes its variable)."""
        return await asyncio.to_thread(use, self._store, *args, **kwargs)
