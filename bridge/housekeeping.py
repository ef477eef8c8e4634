"""Periodic jobs of a long-running process (`thoth chat`, `thoth serve`) on apscheduler.

Each job is a plain method tested on its own; this module only schedules them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from typing import Any

from apscheduler.schedulers.base import BaseScheduler

from bridge.app import Thoth

log = logging.getLogger(__name__)

OnTurnLoop = Callable[[Coroutine[Any, Any, list[str]]], list[str]]

DRAFT_SWEEP_HOURS = 1
RETENTION_SWEEP_HOURS = 24


def schedule_housekeeping(app: Thoth, scheduler: BaseScheduler, on_turn_loop: OnTurnLoop) -> None:
    """Expire week-old skill drafts hourly, apply episode retention daily, and every
    minute end idle sessions and run the reflections that are due.

    ``on_turn_loop`` runs a coroutine on the loop the turns run on and waits for it:
    ending a session waits for that loop's background writes.
    """
    now = datetime.now(UTC)
    if not app.settings.reflection_disabled:
        scheduler.add_job(
            reflect_idle_sessions,
            "interval",
            args=[app, on_turn_loop],
            minutes=1,
            id="reflection-sweep",
            next_run_time=now,
            coalesce=True,
            max_instances=1,
            replace_existing=True,
        )
    scheduler.add_job(
        _expire_drafts,
        "interval",
        args=[app],
        hours=DRAFT_SWEEP_HOURS,
        id="expire-skill-drafts",
        next_run_time=now,
        coalesce=True,
        max_instances=1,
        replace_existing=True,
    )
    if app.settings.episode_retention_days > 0:
        scheduler.add_job(
            app.episodic.purge_older_than,
            "interval",
            args=[app.settings.episode_retention_days],
            hours=RETENTION_SWEEP_HOURS,
            id="episode-retention",
            next_run_time=now,
            coalesce=True,
            max_instances=1,
            replace_existing=True,
        )


def _expire_drafts(app: Thoth) -> None:
    expired = app.drafts.expire()
    if expired:
        log.info("expired %d skill drafts older than seven days", expired)


def reflect_idle_sessions(app: Thoth, on_turn_loop: OnTurnLoop) -> list[str]:
    """Sessions idle past REFLECTION_IDLE_MIN end; due reflections run (one process each)."""
    idle_s = app.settings.reflection_idle_min * 60
    return on_turn_loop(app.session_end.end_idle(idle_s=idle_s, now=time.time()))
