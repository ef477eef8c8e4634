"""`/attach PATH` in `thoth chat` (and `thoth chat --file PATH`): a local file read as a
Slack file is (``bridge/files/reading.py``), to go with the next message.

Terminal-only, so not in the command table Slack shares (``bridge/commands/table.py``):
Slack's files come with their message. A path that is not a file to read is refused in
one line (``BadInput``) and the chat goes on; a file that is there but cannot be read (a
password-protected PDF, bytes of no kind Thoth reads, over FILE_MAX_MB) goes with the
message by its name, as such a Slack file does, and its line says why.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from bridge.files.reading import Limits, Read, Unread, over_the_cap, read
from bridge.files.shared_file import SharedFile
from layers.shared.errors import BadInput

ATTACH = "/attach"
# Files a message carries at most, as a Slack message does (issue 50).
MOST_FILES = 8


def attach_path(line: str) -> str | None:
    """The path an `/attach PATH` line names ('' when it names none); None for a line
    that is not one."""
    name, _, rest = line.strip().partition(" ")
    return rest.strip() if name == ATTACH else None


def local_file(path_text: str, limits: Limits) -> Read | Unread:
    """The file at ``path_text``, read; ``BadInput`` when there is no file to read there."""
    path = _path(path_text)
    try:
        with path.open("rb") as opened:
            # A file over the cap is refused by its size, not read into memory first.
            too_large = over_the_cap(path.name, os.fstat(opened.fileno()).st_size, limits)
            if too_large is not None:
                return too_large
            data = opened.read()
    except OSError as error:
        raise _unreadable(path_text, error) from error
    # The terminal has no permalink: the file is on this machine's disk.
    return read(SharedFile(path.name, data, None, permalink=None), limits)


def check_path(path_text: str) -> None:
    """``BadInput`` when ``path_text`` is not a file to read (`--file`, checked before the
    chat starts)."""
    path = _path(path_text)
    try:
        path.open("rb").close()
    except OSError as error:
        raise _unreadable(path_text, error) from error


def check_room(count: int) -> None:
    """``BadInput`` when a message already carries ``count`` files, as many as it may."""
    if count >= MOST_FILES:
        raise BadInput(f"a message carries at most {MOST_FILES} files; send it, then"
                       " attach the rest")


def attached_line(file: Read | Unread) -> str:
    """What the chat says of a file attached: that it is, or why it cannot be read."""
    return file.line() if isinstance(file, Unread) else f"attached {file.name}"


def _path(path_text: str) -> Path:
    """The path as typed, or as a shell reads it (a terminal's drag and drop quotes or
    escapes it); ``BadInput`` for none, a missing one or a directory."""
    if not path_text:
        raise BadInput(f"{ATTACH} needs a path: {ATTACH} PATH")
    path = Path(path_text).expanduser()
    if not path.exists():
        try:
            words = shlex.split(path_text)
        except ValueError:
            words = []
        if len(words) == 1:
            path = Path(words[0]).expanduser()
    if not path.exists():
        raise BadInput(f"cannot attach {path_text}: there is no such file")
    if path.is_dir():
        raise BadInput(f"cannot attach {path_text}: it is a directory, not a file")
    return path


def _unreadable(path_text: str, error: OSError) -> BadInput:
    return BadInput(f"cannot attach {path_text}: it cannot be read"
                    f" ({error.strerror or error})")
