"""Shared files are read on one thread of the reader's own, never on the event loop."""

from __future__ import annotations

import asyncio
import threading

from bridge.files.reader import FileReader
from bridge.files.reading import Limits, Read, Unread
from bridge.files.shared_file import SharedFile


def test_files_are_read_in_order_on_the_readers_one_thread() -> None:
    reader = FileReader(Limits(max_bytes=1024 * 1024))
    seen: set[str] = set()
    original = reader._read_one

    def noting(file: SharedFile) -> Read | Unread:
        seen.add(threading.current_thread().name)
        return original(file)

    reader._read_one = noting  # type: ignore[method-assign]

    async def both() -> list[tuple[Read | Unread, ...]]:
        return list(await asyncio.gather(*(reader.read_all([
            SharedFile(f"{n}.txt", f"note {n}".encode()),
            Unread("gone.pdf", "Slack holds no copy of it"),
            SharedFile("big.log", b"x" * (1024 * 1024 + 1))]) for n in range(3))))

    try:
        results = asyncio.run(both())
    finally:
        reader.close()
    assert len(seen) == 1 and next(iter(seen)).startswith("file-reader")
    for n, (note, gone, big) in enumerate(results):
        assert isinstance(note, Read) and note.text == f"note {n}"
        assert isinstance(gone, Unread) and gone.why == "Slack holds no copy of it"
        assert isinstance(big, Unread) and "over the 1 MB files may be" in big.line()
