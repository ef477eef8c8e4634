"""Where a reply goes: each transport implements ``ReplySink``."""

from __future__ import annotations

from typing import Protocol


class ReplySink(Protocol):
    """Shows a reply as it is made: a thinking status, streamed text, the final text."""

    async def thinking(self) -> None:
        """Show that an answer is on its way (Slack: the thread's status line)."""
        ...

    async def stream(self, text: str) -> None:
        """Show the next piece of the reply."""
        ...

    async def finish(self, text: str, *, ok: bool) -> None:
        """The reply is complete; ``text`` is all of it (or the failure message)."""
        ...
