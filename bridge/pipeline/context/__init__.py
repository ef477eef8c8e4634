"""What heads a turn's message: one list of context sources, as the tools are one ToolBox.

A source is one module here: its name (the block's, and the log's), its deadline and
how it gathers its block for a turn. ``bridge/app.py`` fills the registry in DESIGN.md's
order ("One turn"), and the prompt shows the blocks in that order without knowing any of
them by name, so a new memory source read into the prompt is its module and one line
there. Every source runs concurrently under its own deadline; one that fails or is late
is logged and left out, never fatal (``deadlines.py``).

The persona, the skill index and the transcript are not sources: they are the prompt's
structure (the system prompt, the replayed conversation, its cache breakpoints).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from bridge.pipeline.deadlines import MissedDeadlines, within_deadline
from bridge.pipeline.reply_sink import ReplySink, Step, show_step
from bridge.pipeline.turn import Turn
from layers.working.budget import TrimmedTranscript


@dataclass(frozen=True)
class ContextBlock:
    """One block of a turn's context, as the model reads it."""

    # The block's section name (``ModelRequest.section``: the offline responder reads
    # "related-episodes" and "user-model" by it).
    name: str
    text: str
    # The episodes the block puts before the model: recorded after the reply as recalled
    # (``AfterReply.recalled``), which recall's ranking learns from.
    recalled: tuple[str, ...] = ()


@dataclass(frozen=True)
class ContextAsk:
    """What a source may know of the turn it gathers for."""

    turn: Turn
    session_id: str
    first_turn: bool
    # The session's transcript, read once for the prompt while the sources run (a future,
    # so that any number of sources may wait for it); None when it was late or failed.
    # Read it with ``transcript()``.
    trimmed: asyncio.Future[TrimmedTranscript | None]

    async def transcript(self) -> TrimmedTranscript | None:
        # Shielded: a source that misses its deadline must not cancel the prompt's read.
        return await asyncio.shield(self.trimmed)


class ContextSource(Protocol):
    @property
    def name(self) -> str:
        """The block's name, and the source's in the logs."""
        ...

    @property
    def deadline_s(self) -> float:
        """How long the turn waits for it before going on without it."""
        ...

    @property
    def step(self) -> str | None:
        """What the person sees while it runs (a step on the sink), or None for nothing."""
        ...

    @property
    def first_turn_only(self) -> bool:
        """Asked on a session's first turn only (related episodes: DESIGN.md)."""
        ...

    async def gather(self, ask: ContextAsk) -> ContextBlock | None:
        """The block for this turn, or None when there is nothing to say."""
        ...


class ContextSources:
    """The registry: a process's context sources, in the order their blocks are shown."""

    def __init__(self, sources: Iterable[ContextSource | None] = ()) -> None:
        """A None is a source the process lacks (no identity layer, episodic memory off)."""
        self._sources = [source for source in sources if source is not None]

    async def gather(
        self, ask: ContextAsk, sink: ReplySink, misses: MissedDeadlines
    ) -> Sequence[ContextBlock]:
        """Every source's block, concurrently, in the registry's order; the ones that
        had nothing, failed or were late are left out."""
        blocks = await asyncio.gather(
            *(_block(source, ask, sink, misses) for source in self._sources))
        return [block for block in blocks if block is not None]


async def _block(
    source: ContextSource, ask: ContextAsk, sink: ReplySink, misses: MissedDeadlines
) -> ContextBlock | None:
    if source.first_turn_only and not ask.first_turn:
        return None
    step = source.step
    if step is not None:
        await show_step(sink, Step(source.name, step, "in_progress"))
    # Boxed, so that "nothing to say" (None inside) is told apart from failed or late.
    kept = await within_deadline(source.name, source.deadline_s, _boxed(source, ask), misses)
    if step is not None:
        await show_step(sink, Step(source.name, step, "error" if kept is None else "complete"))
    return None if kept is None else kept[0]


async def _boxed(source: ContextSource, ask: ContextAsk) -> tuple[ContextBlock | None]:
    return (await source.gather(ask),)


def tagged(tag: str, body: str) -> str:
    """A block as the persona's rules name it: ``<tag>`` … ``</tag>``."""
    return f"<{tag}>\n{body}\n</{tag}>"
