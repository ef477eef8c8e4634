"""Named, ordered, forward-only schema migrations, declared by each table's owner.

Each owner (a layer, the Slack bridge, reflection, the model's spend) declares its
tables as a ``Schema`` in its own ``schema.py``: its migrations, numbered from 1 in
order. Each migration runs once, in its own transaction, and is recorded in
``schema_migrations`` by owner and number. Never edit a migration that has shipped:
add the next one. The process's composition root decides which schemas a database
carries (``bridge/schemas.py``); the storage layer knows none of them.

A second SQL dialect (PostgreSQL) is a second text per migration, chosen by the
engine that runs it; the names, order and record stay one.
"""

from __future__ import annotations

from dataclasses import dataclass

# How either engine records a migration it ran (the same SQL on both).
RECORD_MIGRATION = (
    "INSERT INTO schema_migrations (owner, version, name, applied_at) VALUES (?, ?, ?, ?)"
)


@dataclass(frozen=True)
class Migration:
    version: int  # within its owner's schema, from 1
    name: str
    sql: str  # SQLite's text
    postgres: str | None = None  # PostgreSQL's text (None: not ported yet)


@dataclass(frozen=True)
class Schema:
    """One owner's tables, as the migrations that make them."""

    owner: str
    migrations: tuple[Migration, ...]

    def __post_init__(self) -> None:
        versions = [migration.version for migration in self.migrations]
        if versions != list(range(1, len(versions) + 1)):
            raise ValueError(f"{self.owner}: migrations must be numbered 1, 2, … in order")


# Databases made before each owner declared its own schema recorded one sequence for
# all of them; what each of those versions was, so they are never run again.
LEGACY_VERSIONS: dict[int, tuple[tuple[str, int, str], ...]] = {
    1: (("episodic", 1, "episodes"),),
    2: (("working", 1, "sessions_transcript"), ("model_usage", 1, "model_usage")),
    3: (("procedural", 1, "skill_drafts"),),
    4: (("identity", 1, "identity_observations"),),
    5: (("slack", 1, "slack_bridge"),),
    6: (("reflection", 1, "reflection"),),
    7: (("slack", 2, "slack_ai_app"),),
    8: (("identity", 2, "identity_outbox"),),
}
