"""Periodic jobs of a long-running process (`thoth chat`, `thoth serve`) on apscheduler.

Each job is a plain method tested on its own; ``schedule`` only schedules them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from bridge.session_end import SessionEnd
from layers.episodic.memory import EpisodicMemory
from layers.identity.forget_sweep import sweep_forgotten
from layers.identity.ingest_queue import IngestQueue
from layers.identity.protocol import IdentityBackend
from layers.identity.tombstones import Tombstones
from layers.procedural.drafts import SkillDrafts
from layers.shared.offloaded import Offloaded
from layers.shared.storage.leases import Leases

if TYPE_CHECKING:
    # Only a type here: every command builds the app, few run a scheduler.
    from apscheduler.schedulers.base import BaseScheduler

log = logging.getLogger(__name__)

OnTurnLoop = Callable[[Coroutine[Any, Any, list[str]]], list[str]]

DRAFT_SWEEP_HOURS = 1
IDLE_SWEEP = "idle-sweep"
# Longer than a sweep takes; a replica that dies sweeping holds it this long at most
# (a reflection is claimed on its own as well: two sweeps never run one twice).
SWEEP_LEASE_S = 600.0
RETENTION_SWEEP_HOURS = 24


@dataclass(frozen=True)
class Housekeeping:
    """What the periodic jobs act on (built once, in ``bridge/app.py``)."""

    drafts: SkillDrafts
    episodic: EpisodicMemory
    session_end: SessionEnd
    # None when reflection is off: no session is ended for it.
    reflection_idle_s: float | None
    # 0: episodes are kept forever.
    retention_days: int
    # With replicas on one database, one of them sweeps at a time.
    leases: Leases
    # Forgets to sweep once the identity backend has settled (none without a backend).
    tombstones: Offloaded[Tombstones] | None = None
    identity: IdentityBackend | None = None
    identity_ingest: IngestQueue | None = None
    # What answers the Slack messages queued while the model was overloaded (made when
    # scheduled: it needs Slack's client; None without Slack).
    answer_later: Callable[[], Callable[[], Coroutine[Any, Any, list[str]]] | None] | None = None
    answer_later_every_s: float = 2.0

    def schedule(self, scheduler: BaseScheduler, on_turn_loop: OnTurnLoop) -> None:
        """Expire week-old skill drafts hourly, apply episode retention daily, and every
        minute end idle sessions and run the reflections that are due, and sweep the
        forgets that have settled.

        ``on_turn_loop`` runs a coroutine on the loop the turns run on and waits for it:
        ending a session waits for that loop's background writes.
        """
        now = datetime.now(UTC)
        every = {"next_run_time": now, "coalesce": True, "max_instances": 1,
                 "replace_existing": True}
        if self.reflection_idle_s is not None:
            scheduler.add_job(self.reflect_idle_sessions, "interval", args=[on_turn_loop],
                              minutes=1, id="reflection-sweep", **every)
        if self.tombstones is not None and self.identity is not None:
            scheduler.add_job(lambda: on_turn_loop(self.sweep_forgotten()), "interval",
                              minutes=1, id="forget-sweep", **every)
        scheduler.add_job(self.expire_drafts, "interval", hours=DRAFT_SWEEP_HOURS,
                          id="expire-skill-drafts", **every)
        answering = self.answer_later() if self.answer_later is not None else None
        if answering is not None:
            # Every replica looks: each queued message is claimed by one of them.
            scheduler.add_job(lambda: on_turn_loop(answering()), "interval",
                              seconds=self.answer_later_every_s, id="answer-later", **every)
        if self.retention_days > 0:
            scheduler.add_job(self.episodic.purge_older_than, "interval",
                              args=[self.retention_days], hours=RETENTION_SWEEP_HOURS,
                              id="episode-retention", **every)

    async def sweep_forgotten(self) -> list[str]:
        """Sweep the forgets that have settled, then send the turns that waited for them
        (on the turns' loop, where the ingest queue runs)."""
        if self.tombstones is None or self.identity is None:
            return []
        swept = await sweep_forgotten(self.tombstones, self.identity)
        if swept and self.identity_ingest is not None:
            await self.identity_ingest.take_up_outbox()
        return swept

    def expire_drafts(self) -> None:
        expired = self.drafts.expire()
        if expired:
            log.info("expired %d skill drafts older than seven days", expired)

    def reflect_idle_sessions(self, on_turn_loop: OnTurnLoop) -> list[str]:
        """Sessions idle past REFLECTION_IDLE_MIN end; due reflections run (one process each)."""
        if self.reflection_idle_s is None or not self.leases.take(IDLE_SWEEP, SWEEP_LEASE_S):
            return []
        try:
            ending = self.session_end.end_idle(idle_s=self.reflection_idle_s, now=time.time())
            return on_turn_loop(ending)
        finally:
            self.leases.give_back(IDLE_SWEEP)
