"""Periodic jobs of a long-running process (`thoth chat`, `thoth serve`) on apscheduler.

Each job is a plain method tested on its own; this module only schedules them.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from apscheduler.schedulers.base import BaseScheduler

from bridge.app import Thoth

log = logging.getLogger(__name__)

DRAFT_SWEEP_HOURS = 1
RETENTION_SWEEP_HOURS = 24


def schedule_housekeeping(app: Thoth, scheduler: BaseScheduler) -> None:
    """Expire week-old skill drafts hourly and apply episode retention daily, from now."""
    now = datetime.now(UTC)
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
