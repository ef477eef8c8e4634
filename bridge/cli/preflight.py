"""What `thoth chat` and `thoth serve` check before they run any turn.

Decided: both refuse to start, in one line and before anything is written, when
THOTH_HOME cannot be written (a read-only mount, a home owned by someone else): every
turn writes its session and transcript, the background jobs write episodes, identity
and the brain, and each would otherwise fail on its own, later, in a log. And when the
brain cannot take a commit (mid-merge, mid-rebase, a detached HEAD, not a
repository): a session's reflection could not save what it learnt, and the person
would not know until the learning was lost. Commands that never write the brain
(recall, export, people) run as usual; `thoth doctor` names the problem. (A damaged
database is refused by every command, when it is opened: ``open_sqlite``.)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from layers.shared.errors import ConfigurationError

if TYPE_CHECKING:
    from bridge.app import Thoth


def check_ready_for_turns(app: Thoth) -> None:
    home = app.settings.thoth_home
    unwritable = [path for path in _written_by_turns(app) if not os.access(path, os.W_OK)]
    if unwritable:
        names = ", ".join(str(path.relative_to(home)) if path != home else "the folder itself"
                          for path in unwritable)
        raise ConfigurationError(
            f"THOTH_HOME {home} cannot be written ({names}): chat and serve keep sessions,"
            " episodes and the brain there; make it writable, or set THOTH_HOME to a"
            " writable directory"
        )
    if app.brain_problem:
        raise ConfigurationError(app.brain_problem)


def _written_by_turns(app: Thoth) -> list[Path]:
    # os.access, not a trial write: it answers for root on a read-only mount too, and
    # leaves nothing behind. SQLite alone would not tell: it opens a read-only file
    # whose WAL files exist, and fails only at the first write.
    db = app.settings.db_path
    paths = [app.settings.thoth_home, db, db.with_name(db.name + "-wal"),
             db.with_name(db.name + "-shm"), app.brain.path, app.brain.path / ".git"]
    return [path for path in paths if path.exists()]
