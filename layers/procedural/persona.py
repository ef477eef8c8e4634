"""The persona stack: seven Markdown files read in a fixed order, cached until they change.

The files come from the brain (``THOTH_HOME/brain/persona``) when it exists and
from the shipped ``persona/`` otherwise. A file over its size budget is cut, with
a warning, so one runaway file cannot crowd the rest out of the prompt.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path

from layers.procedural.memory_notes import AGENT_NOTE

log = logging.getLogger(__name__)

PERSONA_FILES: tuple[str, ...] = (
    "IDENTITY.md",
    "SOUL.md",
    "RULES.md",
    "AGENTS.md",
    "USER.md",
    "MEMORY.md",
    "TOOLS.md",
)
# About 3 000 tokens a file: the whole stack stays a fraction of the context.
MAX_FILE_CHARS = 12_000


@dataclass(frozen=True)
class PersonaFile:
    name: str
    text: str
    truncated: bool = False


@dataclass(frozen=True)
class Persona:
    files: tuple[PersonaFile, ...]

    def render(self) -> str:
        """The stack as one block, each file under its own heading."""
        return "\n\n".join(f'<persona-file name="{f.name}">\n{f.text}\n</persona-file>'
                           for f in self.files if f.text.strip())

    def file(self, name: str) -> str:
        return next((f.text for f in self.files if f.name == name), "")


class PersonaLoader:
    """Reads the persona stack, re-reading only when a file's mtime or size changes."""

    def __init__(self, directories: tuple[Path, ...]) -> None:
        # The first directory that exists wins, so a brain overrides the shipped copy.
        self._directories = directories
        self._lock = threading.Lock()
        self._signature: tuple[object, ...] | None = None
        self._persona = Persona(())

    def directory(self) -> Path | None:
        return next((d for d in self._directories if d.is_dir()), None)

    def load(self) -> Persona:
        directory = self.directory()
        if directory is None:
            log.warning("no persona directory among %s", [str(d) for d in self._directories])
            return Persona(())
        paths = [directory / name for name in PERSONA_FILES]
        signature = (directory, *(_stat(path) for path in paths))
        with self._lock:
            if signature != self._signature:
                self._persona = Persona(tuple(_read(path) for path in paths if path.is_file()))
                self._signature = signature
            return self._persona


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size)


def _read(path: Path) -> PersonaFile:
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.name == "MEMORY.md":
        # Its dated lines record kept notes, each said in one place: they reach a prompt
        # from the database, only where they may be read (layers/notes/). What a person
        # wrote here by hand is the operators' own and stays.
        text = "".join(line for line in text.splitlines(keepends=True)
                       if not AGENT_NOTE.match(line))
    if len(text) <= MAX_FILE_CHARS:
        return PersonaFile(path.name, text)
    log.warning(
        "persona file %s is %d characters; only the first %d are used",
        path,
        len(text),
        MAX_FILE_CHARS,
    )
    return PersonaFile(path.name, text[:MAX_FILE_CHARS], truncated=True)
