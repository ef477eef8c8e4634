"""Shared files read off the event loop, one at a time, on one thread of their own.

Decided: one thread, not the loop's default pool. Reading a screenshot decodes it whole
(2560x1440 is 11 MB of pixels, and a copy to scale it), and the C allocator keeps such
blocks in the arena of the thread that freed them: spread over the default pool's
threads, each one came to hold its own (a serve process grew 120 MB more for three
screenshots a message, bench/files_delivery.py). On one thread the memory is one
file's, reused; files of two messages at once wait a fraction of a second for each
other. A file that breaks the reader costs that file, never the turn.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import cast

from bridge.files.reading import Limits, Read, Unread, read
from bridge.files.shared_file import SharedFile

log = logging.getLogger(__name__)


def _libc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, where the process runs on glibc (None elsewhere)."""
    try:
        return cast("Callable[[int], int]", ctypes.CDLL("libc.so.6").malloc_trim)
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _libc_trim()


def _give_back_freed_memory() -> None:
    """Return the pixels just freed to the system: glibc keeps a freed block of the
    thread's arena for reuse, and a decoded screenshot is tens of MB that the process
    needs again only when the next file comes."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


class FileReader:
    """Reads files within ``limits`` (FILE_MAX_MB), on its own thread."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="file-reader")

    async def read_all(self, files: Sequence[SharedFile | Unread]) -> tuple[Read | Unread, ...]:
        """Each file read (an ``Unread`` passed on as it is), in order."""
        return await asyncio.get_running_loop().run_in_executor(
            self._thread, self._read_each, list(files))

    def close(self) -> None:
        self._thread.shutdown(wait=False, cancel_futures=True)

    def _read_each(self, files: Sequence[SharedFile | Unread]) -> tuple[Read | Unread, ...]:
        read_now = tuple(file if isinstance(file, Unread) else self._read_one(file)
                         for file in files)
        _give_back_freed_memory()
        return read_now

    def _read_one(self, file: SharedFile) -> Read | Unread:
        try:
            return read(file, self.limits)
        except Exception:
            # ``read`` answers a bad file with Unread; this is a bug in it, not the file's.
            log.exception("reading a shared file failed")
            return Unread(file.name, "reading it failed", len(file.data), file.mimetype,
                          file.permalink)
