"""Ending a session: the one way `/done` (terminal and Slack) and the idle sweep do it.

In order: mark it ended (a message arriving from now on opens a new session), let its
last writes land (reflection reads its episodes), queue its reflection, and launch it —
a process of its own, under a timeout (``reflection_launcher.py``). With
BACKGROUND_WORK=workers the reflection is only queued: a `thoth worker` claims it.
With reflection off, the session only ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from layers.shared.offloaded import Offloaded
from layers.working.sessions import SessionStore
from reflection.state import ReflectionState

# Waits for the turns' background writes; returns how many did not finish.
Drain = Callable[[], Awaitable[int]]
# Runs one reflection (session id, whether to post or print its summary); returns its
# exit code and what it printed.
Reflect = Callable[[str, bool], tuple[int, str]]


@dataclass(frozen=True)
class Ended:
    session_id: str
    reflected: bool
    # What the reflection printed (its summary, when asked for one).
    printed: str = ""


class SessionEnd:
    def __init__(
        self,
        sessions: Offloaded[SessionStore],
        reflections: Offloaded[ReflectionState] | None,
        *,
        drain: Drain,
        reflect: Reflect | None,
    ) -> None:
        """``reflections`` is None when reflection is off; ``reflect`` None when
        `thoth worker` processes run the reflections queued here."""
        self._sessions = sessions
        self._reflections = reflections
        self._drain = drain
        self._reflect = reflect

    async def end_open(self, key: str) -> Ended | None:
        """End the open session under ``key`` and reflect on it now, with a summary;
        None when no session is open there (an idle sweep may have ended it)."""
        session = await self._sessions.run(lambda sessions: sessions.find_open(key))
        if session is None:
            return None
        ending = session.id
        await self._sessions.run(lambda sessions: sessions.end(ending))
        await self._drain()
        if self._reflections is None:
            return Ended(session.id, reflected=False)
        await self._reflections.run(lambda reflections: reflections.queue(ending, summary=True))
        if self._reflect is None:
            # A worker reflects, and posts the summary in the thread.
            return Ended(session.id, reflected=True)
        _, printed = await asyncio.to_thread(self._reflect, session.id, True)
        return Ended(session.id, reflected=True, printed=printed.strip())

    async def end_idle(self, *, idle_s: float, now: float) -> list[str]:
        """End the sessions idle longer than ``idle_s`` at ``now``, then run every
        reflection that is due (theirs, and earlier ones to retry); returns those."""
        def end_idle(sessions: SessionStore) -> list[str]:
            idle = sessions.idle_since(now - idle_s)
            for session in idle:
                sessions.end(session.id, now=now)
            return [session.id for session in idle]

        ended = await self._sessions.run(end_idle)
        if ended:
            await self._drain()
        if self._reflections is None:
            return []
        await self._reflections.run(
            lambda reflections: [reflections.queue(session_id) for session_id in ended])
        if self._reflect is None:
            return []
        due = await self._reflections.run(lambda reflections: reflections.due())
        for session_id in due:
            await asyncio.to_thread(self._reflect, session_id, False)
        return due
