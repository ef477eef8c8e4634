"""The background work, one job per queue, each claimed from the database.

Each job takes what is due and no other process holds; when it found nothing it
waits ``poll_s`` before asking again, when it did it asks again at once. Any number
of workers (and a `thoth serve` with BACKGROUND_WORK=inline, for its own work) share
the queues: claims never hand one item to two of them (``FOR UPDATE SKIP LOCKED`` on
PostgreSQL), and an item whose worker died is free again once its hold runs out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bridge.routines.running import RoutineRunner
from bridge.slack_api.followup_posts import post_due_followups
from bridge.slack_api.routine_posts import TICK_EVERY_S
from bridge.slack_api.workspace_client import WorkspaceOf
from bridge.worker.identity_outbox import send_outbox
from layers.identity.forget_sweep import sweep_forgotten
from layers.identity.outbox import IngestOutbox
from layers.identity.protocol import IdentityBackend
from layers.identity.tombstones import Tombstones
from layers.shared.offloaded import Offloaded
from reflection.followups import Followups
from reflection.state import ReflectionState

log = logging.getLogger(__name__)

POLL_S = 1.0
# Runs one claimed reflection (session id, whether it posts a summary); its exit code.
Launch = Callable[[str, bool], int]
# A job's one round: how many items it did (0: wait before the next round).
Job = Callable[[], Awaitable[int]]


@dataclass(frozen=True)
class Queues:
    """What a worker works on; a queue left None is not worked on (reflection off, no
    identity backend, no Slack token)."""

    reflections: Offloaded[ReflectionState] | None
    launch: Launch
    outbox: Offloaded[IngestOutbox] | None
    identity: IdentityBackend | None
    followups: Offloaded[Followups]
    slack: AsyncWebClient | None
    # Installed into many workspaces: the install of a follow-up's workspace.
    workspace_of: WorkspaceOf | None = None
    # Who asked to be forgotten (their earlier turns are never sent).
    tombstones: Offloaded[Tombstones] | None = None
    # The routines, run as turns and posted to Slack (None without a Slack token).
    routines: RoutineRunner | None = None
    # The Slack messages queued while the model was overloaded, answered once it is back
    # (``bridge/pipeline/answer_later_job.py``; None without a Slack token).
    answer_later: Callable[[], Coroutine[Any, Any, list[str]]] | None = None


class Worker:
    def __init__(self, queues: Queues, *, poll_s: float = POLL_S) -> None:
        self._queues = queues
        self._poll_s = poll_s
        self._routines_at = 0.0

    def jobs(self) -> dict[str, Job]:
        queues = self._queues
        jobs: dict[str, Job] = {}
        if queues.reflections is not None:
            jobs["reflections"] = self.reflect_once
        if queues.outbox is not None and queues.identity is not None:
            outbox, identity = queues.outbox, queues.identity
            tombstones = queues.tombstones
            jobs["identity ingest"] = lambda: send_outbox(outbox, identity, tombstones)
        if queues.identity is not None and queues.tombstones is not None:
            jobs["forget sweep"] = self.sweep_once
        if queues.slack is not None:
            followups, slack = queues.followups, queues.slack
            jobs["follow-ups"] = lambda: post_due_followups(
                followups, slack, workspace_of=queues.workspace_of)
        if queues.routines is not None:
            jobs["routines"] = self.routines_once
        if queues.answer_later is not None:
            answer_later = queues.answer_later

            async def answer_queued() -> int:
                return len(await answer_later())

            jobs["answer later"] = answer_queued
        return jobs

    async def run(self, stop: asyncio.Event) -> None:
        """Work until ``stop`` is set; what a job has begun is finished first."""
        await asyncio.gather(
            *(self._every_round(name, job, stop) for name, job in self.jobs().items())
        )

    async def sweep_once(self) -> int:
        """Sweep the forgets that have settled; their people's waiting turns are then free
        for the identity ingest job."""
        assert self._queues.identity is not None and self._queues.tombstones is not None
        return len(await sweep_forgotten(self._queues.tombstones, self._queues.identity))

    async def routines_once(self) -> int:
        """Run the routines that are due, looking every ``TICK_EVERY_S`` (at once again
        after a look that found some: there may be more)."""
        assert self._queues.routines is not None
        now = time.monotonic()
        if now < self._routines_at:
            return 0
        claimed = await self._queues.routines.tick()
        self._routines_at = now if claimed else now + TICK_EVERY_S
        return claimed

    async def reflect_once(self) -> int:
        """Claim the reflection due longest and run it (a process of its own)."""
        assert self._queues.reflections is not None
        claimed = await self._queues.reflections.run(lambda state: state.claim_next())
        if claimed is None:
            return 0
        log.info("reflecting on session %s", claimed.session_id)
        await asyncio.to_thread(self._queues.launch, claimed.session_id, claimed.summary)
        return 1

    async def _every_round(self, name: str, job: Job, stop: asyncio.Event) -> None:
        failing = False
        while not stop.is_set():
            try:
                done = await job()
            except Exception:
                # The database or a service is away: the next round tries again. Said
                # once for the whole outage, not once a round.
                if not failing:
                    log.exception("the %s job failed; it is tried again every round", name)
                failing = True
                done = 0
            else:
                if failing:
                    log.warning("the %s job works again", name)
                failing = False
            if not done:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self._poll_s)
