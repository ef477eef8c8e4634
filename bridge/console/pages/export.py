"""Export: the episodes a person may see as JSON lines (the operator: every one, as
`thoth episodes export` writes them), and the brain as a git bundle (the operator's).

Decided: the episodes are streamed, a page of them at a time, each page read in a worker
thread (``Offloaded.stream``): a million episodes are gigabytes, never held at once. Each
export is written to the audit log as it starts, so one cut short is on record too (how
many episodes it held is not known then). The brain's bundle is built whole: git writes
it to a file first, and it is the size of the brain, not of memory.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

from bridge.access.signed_in import SignedInPerson
from bridge.console.dependencies import ConsoleDependencies, ConsoleStores
from bridge.console.pages.episodes import viewer_of
from layers.episodic.jsonl import episode_to_json
from layers.episodic.memory import redacted
from layers.shared.places import Viewer

# Episodes a chunk of the export: one page read from the database (about a megabyte).
PAGE = 1000


async def episodes_jsonl(parts: ConsoleDependencies, user: SignedInPerson,
                         origin: str) -> AsyncIterator[str]:
    """The export's body, read as it is sent."""
    viewer = await viewer_of(parts, user)
    await parts.stores.run(lambda stores: stores.audit.record(
        actor=user.actor, action="export.episodes", target="episodes", origin=origin,
        detail="every episode" if viewer.sees_everything else "the episodes they may see"))
    return parts.stores.stream(episode_pages, viewer)


def episode_pages(stores: ConsoleStores, viewer: Viewer) -> Iterator[str]:
    """The JSON lines of the episodes ``viewer`` may see, oldest first, as `thoth episodes
    export` writes them, ``PAGE`` to a chunk: one hop to a thread and one write a page."""
    page: list[str] = []
    for episode in stores.episodic.store.iter_episodes(batch_size=PAGE, viewer=viewer):
        # Redacted again on the way out, in case an older row predates a pattern.
        page.append(episode_to_json(redacted(episode)) + "\n")
        if len(page) == PAGE:
            yield "".join(page)
            page = []
    if page:
        yield "".join(page)


async def brain_bundle(parts: ConsoleDependencies, user: SignedInPerson, origin: str) -> bytes:
    """Every commit of the brain, as `git clone brain.bundle` reads it."""

    def export(stores: ConsoleStores) -> bytes:
        with tempfile.TemporaryDirectory() as scratch:
            bundle = Path(scratch) / "brain.bundle"
            subprocess.run(["git", "-C", str(stores.brain.path), "bundle", "create",
                            str(bundle), "--all"], check=True, capture_output=True, timeout=60)
            data = bundle.read_bytes()
        stores.audit.record(actor=user.actor, action="export.brain", target="brain",
                            origin=origin, detail=f"{len(data)} bytes")
        return data

    return await parts.stores.run(export)
