"""A sync store as a coroutine sees it: every use runs in a worker thread.

The stores are sync (SQLite has no async driver in the standard library, and a call is
well under a millisecond unless it waits for the write lock), and a call made straight
from a coroutine stalls every conversation on its loop while it waits. A consumer that
runs on a loop is therefore given ``Offloaded(store)``, built by the composition root,
never the store: it has no sync method to call by mistake, only ``run``, which must be
awaited (mypy says so when it is not), and ``stream``, whose items are made there too.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Concatenate, Generic, ParamSpec, TypeVar

Store = TypeVar("Store")
Result = TypeVar("Result")
Item = TypeVar("Item")
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

    async def stream(
        self,
        use: Callable[Concatenate[Store, Arguments], Iterator[Item]],
        /,
        *args: Arguments.args,
        **kwargs: Arguments.kwargs,
    ) -> AsyncIterator[Item]:
        """The items of ``use(store, *args, **kwargs)``, each made in a worker thread as it
        is asked for: an answer too large to hold (an export of every episode) is read a
        page at a time while the loop serves everyone else. Nothing runs until the first
        item is asked for; an item should be a page, not a row, since each is one hop.
        A stream given up (its reader left) is dropped, not closed in a thread: ``use``
        holds no connection across a yield (``EpisodeStore.iter_episodes`` does not)."""
        items = await asyncio.to_thread(lambda: iter(use(self._store, *args, **kwargs)))
        while found := await asyncio.to_thread(_next, items):
            yield found[0]


def _next(items: Iterator[Item]) -> list[Item]:
    """The next item as a list of one, [] at the end: a StopIteration cannot be raised
    through the future ``asyncio.to_thread`` answers with."""
    for item in items:
        return [item]
    return []
