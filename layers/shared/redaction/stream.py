"""Redact a text that arrives in pieces (a streamed reply) before any of it is shown.

A secret can be cut across pieces ("xoxb-12" + "34..."), and some rules need what came
before ("the wifi password is" + " CorrectHorse42"), so a piece is never redacted
alone: the whole text so far is, and only what can no longer change is released —
everything up to its last line break, or, on a long line, up to its last space.
What was released is never taken back: if redacting more text would change it (it
cannot for the rules we have, whose matches end at a line break or, for a PEM
block without its END line, swallow everything after it), the rest waits for the end.
"""

from __future__ import annotations

import os

from layers.shared.redaction import redact

# A line longer than this is released up to its last space rather than held whole.
HOLD_CHARS = 400


class RedactingStream:
    def __init__(self, hold_chars: int = HOLD_CHARS) -> None:
        self._hold_chars = hold_chars
        self._pieces: list[str] = []
        # The text since the last line whose redaction is settled, and how much of the
        # window's redaction is released. Settled lines are never redacted again, so
        # a long reply costs each line a redaction or two, not one per line after it.
        self._window = ""
        self._shown = ""
        self._held = 0
        # Everything released, in order: once the text has ended it is the whole text
        # redacted, so `text` need not redact the reply a second time.
        self._released: list[str] = []
        self._ended = False

    def feed(self, piece: str) -> str:
        """Take the next piece; return what may be shown now (often nothing)."""
        self._pieces.append(piece)
        self._ended = False
        self._window += piece
        self._held += len(piece)
        if "\n" not in piece and self._held < self._hold_chars:
            return ""
        redacted = redact(self._window)
        if not redacted.startswith(self._shown):
            return ""
        cut = redacted.rfind("\n") + 1
        if cut <= len(self._shown) and self._held >= self._hold_chars:
            cut = max(redacted.rfind(" "), redacted.rfind("\t")) + 1
        if cut <= len(self._shown):
            return ""
        released = redacted[len(self._shown) : cut]
        self._released.append(released)
        self._held = len(redacted) - cut
        self._shown = redacted[:cut]
        self._settle()
        return released

    def end(self) -> str:
        """The text is complete: return the rest of it, redacted."""
        redacted = redact(self._window)
        if redacted.startswith(self._shown):
            rest = redacted[len(self._shown) :]
            self._released.append(rest)
            self._ended = True
        else:
            # Never expected (see the module's note); shown again from where they part
            # rather than leaving a secret out or the reply cut.
            rest = "\n" + redacted[len(os.path.commonprefix([self._shown, redacted])) :]
        self._window, self._shown, self._held = "", "", 0
        return rest

    @property
    def text(self) -> str:
        """All of the text so far, redacted."""
        if self._ended:
            return "".join(self._released)
        return redact("".join(self._pieces))

    def _settle(self) -> None:
        """Drop the window's released lines, if their redaction no longer depends on it.

        It does not when they open a block that has not ended (a PEM key's BEGIN line),
        which redacting them alone tells: their redaction then differs from the shown.
        """
        lines_end = self._window.rfind("\n") + 1
        shown_lines_end = self._shown.rfind("\n") + 1
        if not lines_end or not shown_lines_end:
            return
        if redact(self._window[:lines_end]) == self._shown[:shown_lines_end]:
            self._window = self._window[lines_end:]
            self._shown = self._shown[shown_lines_end:]
