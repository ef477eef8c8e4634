"""A command's stdout and stderr, redacted on the way out.

Everything a command prints passes here: answers, lists (`people show`, `skills
show`, `episodes export` to stdout), error lines and log records (the log handler
writes to the same stream). Stored text is redacted when written, but a row written
before a pattern existed, or a message quoting what a person typed, is caught here.
"""

from __future__ import annotations

import io
from typing import TextIO


class RedactedOutput(io.TextIOBase):
    def __init__(self, target: TextIO) -> None:
        self._target = target

    def write(self, text: str) -> int:
        # Imported at the first write: the secret catalogue takes 0.1 s to load, and
        # `thoth mcp` writes nothing here before it answers its client's handshake.
        from layers.shared.redaction import redact

        # Callers write whole lines or whole streamed pieces (themselves cut where
        # nothing can be split), so each write is redacted on its own.
        self._target.write(redact(text))
        return len(text)

    def show_once(self, secret_line: str) -> None:
        """Write a line unredacted: a secret made for the person at the terminal, shown
        this once and kept nowhere (a new MCP token)."""
        self._target.write(secret_line + "\n")
        self._target.flush()

    def flush(self) -> None:
        self._target.flush()

    def isatty(self) -> bool:
        return self._target.isatty()

    def fileno(self) -> int:
        # input() uses readline only when stdout is the terminal's own descriptor.
        return self._target.fileno()

    def writable(self) -> bool:
        return True

    # input() also wants both as strings, or it gives up on readline.
    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._target, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str:  # type: ignore[override]
        return getattr(self._target, "errors", None) or "strict"


def show_once(out: TextIO, secret_line: str) -> None:
    """``secret_line`` on a line of its own, past the redaction where ``out`` has one (a
    command's output does; a test's plain buffer does not)."""
    if isinstance(out, RedactedOutput):
        out.show_once(secret_line)
    else:
        print(secret_line, file=out)
