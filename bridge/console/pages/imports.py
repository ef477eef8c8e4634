"""Import: what Export wrote, taken back — episodes as JSON lines (as `thoth episodes
import` reads them: all or nothing, each line checked first), and the brain as a git
bundle, taken only when it continues this brain's history (a fast-forward). The
operator's and the founders': an import writes memory for every place.

Decided: an uploaded file is spooled to a temporary file and read line by line, so its
size does not weigh on memory; each import is written to the audit log.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import BinaryIO

from bridge.access.signed_in import SignedInPerson
from bridge.console.dependencies import ConsoleDependencies, ConsoleStores
from layers.episodic.importing import import_episodes


async def episodes_from(parts: ConsoleDependencies, user: SignedInPerson, upload: BinaryIO,
                        named: str, origin: str) -> str:
    """Import the uploaded episodes; what was done, in one line (``BadInput`` when
    nothing was, saying why)."""

    def load(stores: ConsoleStores) -> str:
        with _spooled(upload) as path:
            imported = import_episodes(stores.episodic, path, named=named, skip_bad=False)
        stores.audit.record(actor=user.actor, action="episodes.import", target=named,
                            origin=origin, detail=f"{len(imported.stored)} episodes")
        return f"imported {len(imported.stored)} episodes"

    return await parts.stores.run(load)


async def brain_from(parts: ConsoleDependencies, user: SignedInPerson, upload: BinaryIO,
                     origin: str) -> str:
    def load(stores: ConsoleStores) -> str:
        with _spooled(upload) as path:
            sha = stores.brain.fast_forward_to_bundle(path)
        if sha is None:
            return "the bundle holds nothing this brain lacks"
        stores.audit.record(actor=user.actor, action="brain.import", target=f"commit:{sha}",
                            origin=origin)
        return f"the brain is now at {sha[:12]}"

    return await parts.stores.run(load)


class _spooled:
    """The upload as a file on disk, removed afterwards."""

    def __init__(self, upload: BinaryIO) -> None:
        self._upload = upload
        self._directory = tempfile.TemporaryDirectory(prefix="thoth-import-")

    def __enter__(self) -> Path:
        path = Path(self._directory.name) / "upload"
        self._upload.seek(0)
        with path.open("wb") as copy:
            shutil.copyfileobj(self._upload, copy)
        return path

    def __exit__(self, *exc: object) -> None:
        self._directory.cleanup()
