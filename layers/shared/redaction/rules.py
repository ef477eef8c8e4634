"""One redaction rule, and how it replaces what it finds."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

MARKER_PREFIX = "[REDACTED:"

# A value that already is a marker is left alone; this is what makes redact idempotent.
NOT_A_MARKER = r"(?!\[REDACTED:)"


def marker(kind: str) -> str:
    return f"{MARKER_PREFIX}{kind}]"


@dataclass(frozen=True, slots=True)
class Rule:
    kind: str
    pattern: re.Pattern[str]
    # Lower-case substrings of which every match contains at least one; a rule whose
    # triggers are all absent is skipped without running its regex (the fast path).
    # Empty: the rule always runs.
    triggers: tuple[str, ...] = ()
    # The group holding the secret; 0 replaces the whole match, a named group keeps
    # the surrounding key name, quotes and URL parts.
    group: int | str = 0
    # Decides whether a candidate really is a secret (its entropy, its shape); the
    # candidate is left as it is when this says no.
    accept: Callable[[str], bool] | None = None
    # Where in the match the secret lies, for library patterns whose groups do not say.
    span: Callable[[re.Match[str]], tuple[int, int]] | None = None
    # Whether a match may run over a line break (a PEM block). Every other rule is
    # run line by line, and only on the lines holding one of its triggers.
    spans_lines: bool = False

    def apply(self, text: str) -> str:
        pieces: list[str] = []
        done = 0
        for match in self.pattern.finditer(text):
            start, end = self.span(match) if self.span else match.span(self.group)
            if start < done or start == end:
                continue
            if text.startswith(MARKER_PREFIX, start):
                continue
            if self.accept is not None and not self.accept(text[start:end]):
                continue
            pieces.append(text[done:start])
            pieces.append(marker(self.kind))
            done = end
        if not pieces:
            return text
        pieces.append(text[done:])
        return "".join(pieces)
