"""`thoth worker`: reflections, follow-ups, routines and identity ingest from the database.

Runs with `thoth serve` replicas set to BACKGROUND_WORK=workers, on one DATABASE_URL
(docs/deployment.md). SIGTERM or Ctrl-C: no new claims, what was begun finishes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from typing import TYPE_CHECKING, Any, TextIO

from bridge.app import Thoth
from bridge.reflection_launcher import run_reflection
from layers.identity.outbox import IngestOutbox
from layers.procedural.brain_peers import FOLLOW_EVERY_S, BrainFollower
from layers.shared.offloaded import Offloaded

if TYPE_CHECKING:
    from bridge.worker.worker import Worker


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "worker", help="run reflections, follow-ups and identity ingest from the queues"
    )
    parser.set_defaults(handler=run_worker, long_running=True)


def run_worker(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    # Slack's SDK is loaded by the commands that use it, not by every `thoth` start.
    from bridge.worker.worker import Queues, Worker

    settings = app.settings
    # Installed into many workspaces, each follow-up goes with its own one's token.
    slack, workspace_of = app.slack.client, app.slack.workspace_of

    def launch(session_id: str, summary: bool) -> int:
        code, _ = run_reflection(settings, session_id, summary=summary, claimed=True)
        return code

    worker = Worker(
        Queues(
            reflections=None if settings.reflection_disabled else Offloaded(app.reflections),
            launch=launch,
            outbox=Offloaded(IngestOutbox(app.db)) if app.identity is not None else None,
            identity=app.identity,
            followups=Offloaded(app.followups),
            slack=slack,
            workspace_of=workspace_of,
            tombstones=Offloaded(app.tombstones),
            # Any worker or replica may run a routine: each run is claimed once.
            routines=app.routine_runner(),
            # Turns the overloaded model could not answer, answered once it is back.
            answer_later=(app.housekeeping.answer_later()
                          if app.housekeeping.answer_later is not None else None),
        )
    )
    jobs = ", ".join(worker.jobs()) or "nothing (every queue is turned off)"
    print(f"Thoth worker on {app.db.where}: {jobs}", file=out, flush=True)
    asyncio.run(_until_stopped(worker, app.brain_follower(), app))
    return 0


async def _until_stopped(worker: Worker, follower: BrainFollower | None, app: Thoth) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    # Reflections read the persona and skills from this worker's clone of the brain.
    following = None if follower is None else asyncio.create_task(_follow(follower, stop))
    await worker.run(stop)
    if following is not None:
        await following
    # A routine's turn leaves writes behind it (its episode's neighbours, identity ingest).
    await app.drain()


async def _follow(follower: BrainFollower, stop: asyncio.Event) -> None:
    while not stop.is_set():
        await asyncio.to_thread(follower.step)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), FOLLOW_EVERY_S)
