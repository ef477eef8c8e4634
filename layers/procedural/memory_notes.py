"""MEMORY.md: the readable, committed record of the kept memory notes.

A note is kept in the database (``layers/notes/``: its place, author, status) once a
founder approves it; keeping it also appends one redacted, dated line here with its
provenance (who, where, why, who approved), a commit in the brain. Prompts never read
these lines (a note reaches a prompt only where its source could be read, from the
database); lines a person wrote by hand in MEMORY.md are the operators' own and stay
in the persona. Past ``MAX_NOTE_LINES`` notes the oldest move to
``persona/archive/MEMORY-<date>.md``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime

from layers.procedural.brain import MEMORY_FILE, Author, Brain
from layers.shared.errors import BadInput
from layers.shared.redaction import redact

MAX_NOTE_LINES = 60
MAX_NOTE_CHARS = 180
ARCHIVE_DIR = "persona/archive"
NOTE_PREFIX = "- "
# Only the agent's own dated notes count toward the budget and move to the archive;
# bullets a person wrote by hand stay put.
AGENT_NOTE = re.compile(r"^- \d{4}-\d{2}-\d{2} · ")
_NOTE = AGENT_NOTE

Clock = Callable[[], float]


@dataclass(frozen=True)
class MemoryNote:
    text: str
    who: str  # the person who asked for it, or approved it
    where: str  # "#general", "a DM", "terminal"
    why: str  # "🧠 reaction", "reflection on session …"
    # The founder who kept it (the commit's Approved-by); None: the person who asked.
    approved_by: str | None = None


class MemoryNotes:
    def __init__(
        self, brain: Brain, *, max_lines: int = MAX_NOTE_LINES, clock: Clock = time.time
    ) -> None:
        self._brain = brain
        self._max_lines = max_lines
        self._clock = clock

    def writing(self) -> AbstractContextManager[None]:
        """The brain's write lock (every process's): a decision on a note and its line
        here are one step, whichever process or thread makes it."""
        return self._brain.writing()

    def append(self, notes: Sequence[MemoryNote]) -> str | None:
        """Add the notes (one commit); returns the commit sha, None if nothing changed."""
        now = self._clock()
        return self._append([_line(note, now) for note in notes if note.text.strip()], notes)

    def _append(self, lines: list[str], notes: Sequence[MemoryNote]) -> str | None:
        if not lines:
            raise BadInput("a memory note needs some text")
        memory = self._brain.path / MEMORY_FILE
        with self._brain.writing():
            self._brain.check()
            # Appended, never rewritten: whatever a person wrote by hand stays where it is.
            text = memory.read_text(encoding="utf-8") if memory.exists() else "# Memory\n"
            kept = text.rstrip("\n").splitlines()
            kept += [line for line in lines if line not in kept]
            changes: dict[str, str | None] = {}
            notes_at = [i for i, line in enumerate(kept) if _NOTE.match(line)]
            overflow = len(notes_at) - self._max_lines
            if overflow > 0:
                moved = set(notes_at[:overflow])
                changes.update(self._archive([kept[i] for i in sorted(moved)]))
                kept = [line for i, line in enumerate(kept) if i not in moved]
            changes[MEMORY_FILE] = "\n".join(kept) + "\n"
            first = notes[0]
            who, where, why = (redact(part) for part in (first.who, first.where, first.why))
            approver = redact(first.approved_by or first.who)
            summary = redact(first.text).strip().splitlines()[0][:60]
            return self._brain.apply(
                changes,
                f"Remember: {summary}\n\nWhy: {why}, asked by {who} in {where}.\n"
                f"Approved-by: {approver}",
                author=Author(approver),
            )

    def append_one(self, note: MemoryNote) -> tuple[str, str | None]:
        """Add one note; returns the exact line (to remove it later) and the sha (None when
        the same line was there already)."""
        line = _line(note, self._clock())
        return line, self._append([line], [note])

    def remove(self, line: str, *, who: str, why: str) -> str | None:
        """Take one note line out of MEMORY.md again (a 🧠 reaction removed); a commit."""
        memory = self._brain.path / MEMORY_FILE
        with self._brain.writing():
            self._brain.check()
            if not memory.exists():
                return None
            lines = memory.read_text(encoding="utf-8").rstrip("\n").splitlines()
            if line not in lines:
                return None
            lines.remove(line)
            who, why = redact(who), redact(why)
            return self._brain.apply(
                {MEMORY_FILE: "\n".join(lines) + "\n"},
                f"Forget a memory note\n\nWhy: {why}, by {who}.\nApproved-by: {who}",
                author=Author(who),
            )

    def recent(self, count: int = 20) -> list[str]:
        """The newest notes, newest last (what reflection checks to avoid duplicates)."""
        memory = self._brain.path / MEMORY_FILE
        if not memory.exists():
            return []
        lines = memory.read_text(encoding="utf-8").splitlines()
        return [line for line in lines if _NOTE.match(line)][-count:]

    def _archive(self, entries: list[str]) -> dict[str, str | None]:
        day = datetime.fromtimestamp(self._clock(), UTC).date().isoformat()
        relative = f"{ARCHIVE_DIR}/MEMORY-{day}.md"
        archive = self._brain.path / relative
        existing = archive.read_text(encoding="utf-8") if archive.exists() else (
            f"# Memory archive ({day})\n\nNotes moved out of MEMORY.md, oldest first.\n\n"
        )
        return {relative: existing + "\n".join(entries) + "\n"}


def _line(note: MemoryNote, now: float) -> str:
    day = datetime.fromtimestamp(now, UTC).date().isoformat()
    text = " ".join(redact(note.text).split())
    if len(text) > MAX_NOTE_CHARS:
        text = text[: MAX_NOTE_CHARS - 1] + "…"
    who, where, why = (" ".join(redact(part).split()) for part in (note.who, note.where, note.why))
    return f"{NOTE_PREFIX}{day} · {text} ({who}, {where}; {why})"
