"""The brain's work-tree files, replaced as one set that a failed commit puts back whole.

The persona and skills are read from the work tree, so a file cut short by a full disk
(or a process killed mid-write) would be served as it is. Each file is therefore
written beside the repository (``.git/thoth-writing/``, on the same filesystem, where
``git status`` never sees it), flushed to disk, and renamed over the old one: a reader
sees the old file or the new, whole.

Decided: a failed change is put back by *renaming*, not by writing the old texts again
nor by ``git checkout``. Before a file is replaced, its old version gets a second name
(a hard link, no data copied) in the same scratch folder; putting back renames that over
the new file. A rename needs no free space, so it works on the full disk that made the
commit fail, where writing the old text again (or git writing the blob out of HEAD)
would fail the same way; and it brings back what the file held, a person's uncommitted
edit included, which ``git checkout HEAD`` would throw away.

A process killed in the middle leaves the scratch folder behind: the next writer empties
it (``clear_leftovers``). The files it had already replaced stay, each whole, as changes
not yet committed, which the interrupted writer's retry commits (as before this module).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import uuid
from pathlib import Path

SCRATCH = "thoth-writing"


class FileSet:
    """The files one commit changes, each replaced atomically; ``put_back`` or ``keep``."""

    def __init__(self, root: Path, git_dir: Path) -> None:
        self._root = root
        self._scratch = git_dir / SCRATCH
        # (target, its old version's second name, or None if there was no file)
        self._replaced: list[tuple[Path, Path | None]] = []
        self._made_folders: list[Path] = []

    def write(self, path: str, text: str | None) -> None:
        """Replace (or, with None, delete) ``path`` under the root."""
        target = self._root / path
        self._scratch.mkdir(mode=0o700, exist_ok=True)
        backup = self._keep_old(target)
        if text is None:
            if backup is not None:
                target.unlink()
                self._replaced.append((target, backup))
                self._remove_empty_folders(target.parent)
            return
        new = self._written_aside(text, mode=target.stat().st_mode if backup else None)
        try:
            self._make_folders(target.parent)
            os.replace(new, target)
        except BaseException:
            new.unlink(missing_ok=True)
            if backup is not None:
                backup.unlink(missing_ok=True)
            raise
        self._replaced.append((target, backup))

    def put_back(self) -> None:
        """Every file as it was before the first ``write``: renames only."""
        for target, backup in reversed(self._replaced):
            if backup is not None:
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(backup, target)
            else:
                target.unlink(missing_ok=True)
                self._remove_empty_folders(target.parent)
        self._replaced.clear()
        for folder in reversed(self._made_folders):
            self._remove_empty_folders(folder)

    def keep(self) -> None:
        """The change is committed: drop the old versions' second names."""
        for _, backup in self._replaced:
            if backup is not None:
                backup.unlink(missing_ok=True)
        self._replaced.clear()

    def _keep_old(self, target: Path) -> Path | None:
        if not target.is_file():
            return None
        backup = self._scratch / f"old-{uuid.uuid4().hex}"
        os.link(target, backup)  # a second name, no data copied
        return backup

    def _written_aside(self, text: str, *, mode: int | None) -> Path:
        handle, name = tempfile.mkstemp(prefix="new-", dir=self._scratch)
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(text.encode("utf-8"))
                file.flush()
                # A full disk shows here at the latest, before the old file is touched.
                os.fsync(file.fileno())
            # mkstemp's 0600 suits the private brain; a replaced file keeps its own mode.
            if mode is not None:
                os.chmod(name, mode & 0o7777)
        except BaseException:
            Path(name).unlink(missing_ok=True)
            raise
        return Path(name)

    def _make_folders(self, folder: Path) -> None:
        missing: list[Path] = []
        while not folder.exists():
            missing.append(folder)
            folder = folder.parent
        for made in reversed(missing):
            made.mkdir()
            self._made_folders.append(made)

    def _remove_empty_folders(self, folder: Path) -> None:
        # Git tracks no folders: an emptied one would only be litter.
        while folder != self._root and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent


def clear_leftovers(git_dir: Path) -> None:
    """Empty the scratch folder a killed writer left (its writer's lock is ours now)."""
    scratch = git_dir / SCRATCH
    if not scratch.is_dir():
        return
    for leftover in scratch.iterdir():
        with contextlib.suppress(OSError):
            leftover.unlink()
