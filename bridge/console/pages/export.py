"""Export: the episodes a person may see as JSON lines (the operator: every one, as
`thoth episodes export` writes them), and the brain as a git bundle (the operator's).

Decided: a file is built whole before it is sent (a hundred thousand episodes are some
tens of MB); each export is written to the audit log.
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

from bridge.access.signed_in import SignedInPerson
from bridge.console.dependencies import ConsoleDependencies, ConsoleStores
from bridge.console.pages.episodes import viewer_of
from layers.episodic.jsonl import episode_to_json
from layers.shared.redaction import redact


async def episodes_jsonl(parts: ConsoleDependencies, user: SignedInPerson, origin: str) -> str:
    viewer = await viewer_of(parts, user)

    def export(stores: ConsoleStores) -> str:
        lines = [
            # Redacted again on the way out, in case an older row predates a pattern.
            episode_to_json(replace(episode, user_text=redact(episode.user_text),
                                    summary=redact(episode.summary))) + "\n"
            for episode in stores.episodic.store.iter_episodes(viewer=viewer)
        ]
        stores.audit.record(actor=user.actor, action="export.episodes", target="episodes",
                            origin=origin, detail=f"{len(lines)} episodes")
        return "".join(lines)

    return await parts.stores.run(export)


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
