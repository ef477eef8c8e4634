"""An error or a reason as one line for a log or a health page: redacted, its whitespace
folded, cut to a length. Redacted whole before it is cut: a secret cut in two would no
longer look like one."""

from __future__ import annotations

from layers.shared.redaction import redact

MAX_CHARS = 200


def one_line(why: str | BaseException, *, max_chars: int = MAX_CHARS) -> str:
    """``why`` in one redacted line; an exception without a message is named."""
    text = (str(why).strip() or type(why).__name__) if isinstance(why, BaseException) else why
    line = redact(" ".join(text.split()))
    return line if len(line) <= max_chars else line[: max_chars - 1] + "…"
