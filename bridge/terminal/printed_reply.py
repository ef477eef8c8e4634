"""Prints a reply to the terminal as it streams."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from bridge import messages
from bridge.model.protocol import Source
from bridge.pipeline.reply_sink import Step
from layers.shared.redaction import redact


class TerminalSink:
    """Streams text to ``out``; a reply that did not stream (a failure) is printed whole.

    When the reader goes (``thoth chat | head -1``), writing stops quietly and ``closed``
    says so: the turn itself is still answered and stored, and the chat then ends.
    """

    def __init__(self, out: TextIO, *, prefix: str = "") -> None:
        self._out = out
        self._prefix = prefix
        self._streamed = False
        self.closed = False

    def _write(self, *texts: str) -> None:
        if self.closed:
            return
        try:
            for text in texts:
                self._out.write(text)
            self._out.flush()
        except BrokenPipeError:
            self.closed = True

    async def thinking(self) -> None:
        self._streamed = False

    async def progress(self, step: Step) -> None:
        # The terminal shows the answer only; steps are for Slack's task timeline.
        return None

    async def stream(self, text: str) -> None:
        if not self._streamed:
            self._streamed = True
            self._write(self._prefix)
        self._write(text)

    async def finish(self, text: str, *, ok: bool, sources: Sequence[Source] = ()) -> None:
        if self._streamed and not ok:
            # Text had streamed before the failure: the failure gets its own line.
            self._write("\n")
        if not self._streamed or not ok:
            self._write(self._prefix + text)
        self._write("\n")
        if sources:
            # Plain lines: a terminal makes the addresses clickable itself.
            self._write(f"{messages.SOURCES}:\n", *(
                f"  {redact(source.title)} — {redact(source.url)}\n" for source in sources))
