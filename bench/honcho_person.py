"""Requests and time to learn about, and to forget, a person Honcho knows 300 facts of (issue 29).

Runs the Honcho backend through the real ``honcho-ai`` SDK against the loopback Honcho
(``tests/servers/honcho_api.py``) on 127.0.0.1. The person's facts are put straight into
the server's state, 100 to a creation time (as Honcho stamps a batch), so the backend
under test starts from what a real server would hold. Prints, for each step, the HTTP
requests the backend made, the wall time, and whether the outcome was right: an
``observe`` of one new fact, a second ``observe`` right after, then "forget me".

    python bench/honcho_person.py [--facts 300]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from layers.identity.honcho import HonchoIdentity, person_peer_id  # noqa: E402
from layers.identity.ids import honcho_id  # noqa: E402
from layers.identity.protocol import Person  # noqa: E402
from layers.identity.scope import ReadableSessions  # noqa: E402
from layers.layer_tables import LAYER_SCHEMAS  # noqa: E402
from layers.shared.storage.engines import open_sqlite  # noqa: E402
from tests.servers.honcho_api import FakeHoncho  # noqa: E402

PERSON = Person("T1", "U1", "Dana")
WORKSPACE = honcho_id("T1")
BATCH = 100


def seed(server: FakeHoncho, facts: int) -> None:
    """``facts`` conclusions about the person, in batches that share a creation time."""
    peer = person_peer_id(PERSON)
    with server._lock:
        workspace = server.workspaces[WORKSPACE]
        start = datetime.now(UTC) - timedelta(days=1)
        for number in range(facts):
            stamp = (start + timedelta(seconds=number // BATCH)).isoformat()
            conclusion_id = f"cncl_seed{number:05d}"
            workspace.conclusions[conclusion_id] = {
                "id": conclusion_id, "content": f"Dana knows fact number {number}",
                "observer_id": peer, "observed_id": peer, "session_id": None,
                "level": "explicit", "source_ids": None, "times_derived": 1,
                "created_at": stamp,
            }


async def measured(
    server: FakeHoncho, label: str, step: Callable[[], Awaitable[Any]], check: Callable[[], str]
) -> None:
    before = len(server.requests)
    started = time.perf_counter()
    await step()
    elapsed = time.perf_counter() - started
    print(f"{label:<28} {len(server.requests) - before:>5} requests {elapsed * 1000:>9.1f} ms"
          f"   {check()}")


async def run(facts: int) -> None:
    with FakeHoncho() as server, tempfile.TemporaryDirectory() as home:
        db = open_sqlite(Path(home) / "thoth.db", schemas=LAYER_SCHEMAS)

        def client(workspace: str) -> object:
            from honcho import Honcho

            return Honcho(api_key="hch-bench", base_url=server.url, workspace_id=workspace,
                          timeout=30, max_retries=0)

        backend = HonchoIdentity(client, workspace_id=None, server_url=server.url,
                                 readable_sessions=ReadableSessions(db))
        await backend.warm_up(PERSON.team)
        await backend.facts(PERSON)  # the person's peer exists before the seeding
        seed(server, facts)

        def stored() -> list[dict[str, Any]]:
            return server.stored_conclusions(WORKSPACE)

        def count() -> str:
            return f"{len(stored())} facts stored"

        await measured(server, "observe (first)", lambda: backend.observe(
            PERSON, ["Dana prefers tea"], session_id=None, source="bench"), count)
        await measured(server, "observe (again, new fact)", lambda: backend.observe(
            PERSON, ["Dana rides a bike"], session_id=None, source="bench"), count)
        await measured(server, "observe (a known fact)", lambda: backend.observe(
            PERSON, ["Dana knows fact number 7"], session_id=None, source="bench"), count)
        await measured(server, "facts (list all)", lambda: backend.facts(PERSON),
                       lambda: f"{len({c['id'] for c in stored()})} distinct stored")
        await measured(server, "forget me", lambda: backend.forget_person(PERSON),
                       lambda: f"{len(stored())} facts left")
        db.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=300)
    args = parser.parse_args()
    print(f"a person with {args.facts} facts, loopback Honcho on 127.0.0.1")
    asyncio.run(run(args.facts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
