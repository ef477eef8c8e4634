"""Where a reply goes: each transport implements ``ReplySink``."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from bridge.model.protocol import Source

log = logging.getLogger(__name__)

StepStatus = Literal["pending", "in_progress", "complete", "error"]


class ReplyStopped(Exception):
    """The person stopped the reply (Slack's Stop button): its output ends here.

    Raised by ``ReplySink.stream``; the turn is kept in the transcript as stopped,
    not replayed and not stored as an episode.
    """


@dataclass(frozen=True)
class Step:
    """Work the agent does on the way to a reply (searching memory, loading a skill)."""

    id: str
    title: str
    status: StepStatus


class ReplySink(Protocol):
    """Shows a reply as it is made: a thinking status, steps, streamed text, the final text."""

    async def thinking(self) -> None:
        """Show that an answer is on its way (Slack: the thread's status line)."""
        ...

    async def progress(self, step: Step) -> None:
        """Show a step starting or ending (Slack: a task in the stream, or the status)."""
        ...

    async def stream(self, text: str) -> None:
        """Show the next piece of the reply; raises ``ReplyStopped`` once the person stopped it."""
        ...

    async def finish(self, text: str, *, ok: bool, sources: Sequence[Source] = ()) -> None:
        """The reply is complete; ``text`` is all of it (or the failure message), and
        ``sources`` the web pages it rests on, shown under it (Slack: links)."""
        ...


async def show_step(sink: ReplySink, step: Step, *, stop: bool = False) -> None:
    """A step on the sink; showing it never fails the turn.

    A Stop is passed on when ``stop`` (between model rounds); while context is gathered
    it shows up at the next text instead.
    """
    try:
        await sink.progress(step)
    except ReplyStopped:
        if stop:
            raise
    except Exception:
        log.exception("showing step %s failed; the turn goes on", step.id)


class CollectedReply:
    """A ``ReplySink`` for a turn no one watches: keeps the final text, shows nothing."""

    def __init__(self) -> None:
        self.text = ""
        self.ok = False
        self.sources: list[Source] = []

    async def thinking(self) -> None:
        return None

    async def progress(self, step: Step) -> None:
        return None

    async def stream(self, text: str) -> None:
        return None

    async def finish(self, text: str, *, ok: bool, sources: Sequence[Source] = ()) -> None:
        self.text, self.ok, self.sources = text, ok, list(sources)
