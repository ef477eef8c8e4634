"""What a command that failed says: one line on stderr, and its exit code.

Exit codes: 0 success, 1 configuration or backend problem, 2 bad input (usage,
malformed files, empty queries). Anything else a command raises is a bug, and is raised
with its traceback.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from layers.shared.errors import BackendUnavailable, BadInput, ConfigurationError
from layers.shared.storage.database import DatabaseDamaged

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2


Refusal = BadInput | ConfigurationError | BackendUnavailable


def refused(error: Refusal) -> tuple[str, int]:
    """The line and exit code of a refusal (of the input, the settings, a backend)."""
    return f"error: {error}", EXIT_BAD_INPUT if isinstance(error, BadInput) else EXIT_FAILURE


def said(error: BaseException, db_path: Path) -> tuple[str, int] | None:
    """The line and exit code of ``error``, a refusal or the database at ``db_path``
    failing; None where it is not one a command says."""
    if isinstance(error, Refusal):
        return refused(error)
    if isinstance(error, sqlite3.OperationalError):
        if not error.sqlite_errorname.startswith("SQLITE_READONLY"):
            return None
        # THOTH_HOME turned read-only while the command ran.
        return (f"error: the database {db_path} cannot be written ({error}): make"
                " THOTH_HOME writable, or set it to a writable directory", EXIT_FAILURE)
    if isinstance(error, sqlite3.DatabaseError) and not isinstance(error,
                                                                   sqlite3.IntegrityError):
        # Damage found past the file's header, in pages a command reads. (An integrity
        # error is a broken rule of ours, not a damaged file.)
        return f"error: {DatabaseDamaged(db_path, error)}", EXIT_FAILURE
    return None
