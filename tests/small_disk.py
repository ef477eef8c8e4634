"""A small disk for the tests (and the bench) of a full one: a tmpfs of a few megabytes
mounted for the test, which the test fills to the last byte with a filler file and frees
again by deleting it.

Decided: mounted where this process sees it (its own mount namespace), not in a private
one. The Thoth under test runs in the test's own process and its worker threads write the
SQLite file, while a mount namespace is joined per thread (``unshare(CLONE_NEWNS)`` moves
only the calling thread; ``setns`` refuses a process with threads); and a path through
another process's namespace (``/proc/PID/root/...``) does not reach SQLite, which
resolves that link to ``/`` and opens the file outside the small disk. A loop-mounted
image would need the same privilege and a free loop device. So: root (CAP_SYS_ADMIN), as
here and in CI; elsewhere the test is skipped and says why. The mount point is inside the
test's own temporary directory and is detached at the end (lazily: a file still open on
it does not keep it mounted); a test killed before that leaves an empty tmpfs behind, no
data of anyone's.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

MB = 1024 * 1024
# umount2's flag: detach now, finish when nothing uses the mount any more.
MNT_DETACH = 2
# The filler is written in large pieces, then smaller ones to take the last bytes.
FILL_PIECES = (1024 * 1024, 64 * 1024, 4096)

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


class MountRefused(Exception):
    """This process may not mount a file system (not root, or no CAP_SYS_ADMIN)."""


class SmallDisk:
    """A tmpfs of ``size_bytes`` at ``path``; ``fill()`` leaves no byte free, ``free()``
    gives it all back."""

    def __init__(self, path: Path, size_bytes: int) -> None:
        self.path = path
        self.size_bytes = size_bytes
        self._fillers: list[Path] = []

    def mount(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        options = f"size={self.size_bytes},mode=0700".encode()
        if _libc.mount(b"tmpfs", os.fsencode(self.path), b"tmpfs", 0, options) != 0:
            code = ctypes.get_errno()
            raise MountRefused(f"mount tmpfs on {self.path}: {os.strerror(code)}")

    def unmount(self) -> None:
        if _libc.umount2(os.fsencode(self.path), MNT_DETACH) != 0:
            code = ctypes.get_errno()
            raise OSError(code, f"umount {self.path}: {os.strerror(code)}")

    def free_bytes(self) -> int:
        found = os.statvfs(self.path)
        return found.f_bavail * found.f_frsize

    def fill(self) -> int:
        """Take every free byte with a filler file (written, so tmpfs holds the pages);
        returns how many bytes it took."""
        filler = self.path / f"filler-{len(self._fillers)}"
        self._fillers.append(filler)
        taken = 0
        with open(filler, "wb", buffering=0) as handle:
            for piece in FILL_PIECES:
                zeros = bytes(piece)
                while True:
                    try:
                        taken += handle.write(zeros)
                    except OSError as error:
                        if error.errno != errno.ENOSPC:
                            raise
                        break
        return taken

    def free(self) -> None:
        """Delete every filler: the disk has its room back at once."""
        for filler in self._fillers:
            filler.unlink(missing_ok=True)
        self._fillers.clear()


@contextmanager
def small_disk(path: Path, size_bytes: int = 8 * MB) -> Iterator[SmallDisk]:
    """A ``SmallDisk`` mounted at ``path`` for the block; raises ``MountRefused`` where
    this process may not mount."""
    disk = SmallDisk(path, size_bytes)
    disk.mount()
    try:
        yield disk
    finally:
        disk.unmount()


@contextmanager
def small_disk_or_skip(path: Path, size_bytes: int = 8 * MB) -> Iterator[SmallDisk]:
    """``small_disk`` for a test: skipped, saying why, where it cannot be mounted."""
    try:
        disk = SmallDisk(path, size_bytes)
        disk.mount()
    except MountRefused as refused:
        pytest.skip(f"a small disk needs root (CAP_SYS_ADMIN) to mount a tmpfs: {refused}")
    try:
        yield disk
    finally:
        disk.unmount()
