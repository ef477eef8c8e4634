"""Observations per person in the database: add (deduplicated, superseding), list, forget."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from layers.identity.protocol import Person
from layers.identity.scope import session_predicate, unplaced_visible
from layers.shared.places import Viewer
from layers.shared.storage.connection import Connection
from layers.shared.storage.database import Database

VECTOR_DTYPE = np.dtype("<f2")
# MiniLM cosine above which two observations say the same thing in other words.
DUPLICATE_COSINE = 0.9


@dataclass(frozen=True)
class Observation:
    id: str
    text: str
    slot: str | None
    vector: npt.NDArray[np.float32]
    source: str
    created_at: float
    last_seen_at: float
    session_id: str | None = None


def normalized_hash(text: str) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return hashlib.sha256(" ".join(words).encode()).hexdigest()


class ObservationStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    def add(
        self,
        person: Person,
        text: str,
        slot: str | None,
        vector: npt.NDArray[np.float32],
        *,
        source: str,
        session_id: str | None,
        now: float,
    ) -> str | None:
        """Store one observation; returns its id, or None if it was already known.

        A duplicate only refreshes the known one's ``last_seen_at``. A new value in a
        taken slot supersedes the old one, however similar their words ("prefers
        bullet points" and "does not like bullet points" are close in meaning space).
        """
        digest = normalized_hash(text)
        with self._db.write() as conn:
            current = self._current(conn, person)
            for observation in current:
                if _duplicate(observation, text, digest, slot, vector):
                    conn.execute(
                        "UPDATE identity_observations SET last_seen_at = ? WHERE id = ?",
                        (now, observation.id),
                    )
                    return None
            new_id = uuid.uuid4().hex
            conn.execute(
                'INSERT INTO identity_observations (id, team, "user", text, norm_hash, slot,'
                " vector, source, session_id, created_at, last_seen_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    new_id,
                    person.team,
                    person.user,
                    text,
                    digest,
                    slot,
                    vector.astype(VECTOR_DTYPE).tobytes(),
                    source,
                    session_id,
                    now,
                    now,
                ),
            )
            if slot is not None:
                conn.execute(
                    "UPDATE identity_observations SET superseded_by = ?, superseded_at = ?"
                    ' WHERE team = ? AND "user" = ? AND slot = ? AND id != ?'
                    " AND superseded_by IS NULL",
                    (new_id, now, person.team, person.user, slot, new_id),
                )
        return new_id

    def current(self, person: Person, viewer: Viewer | None = None) -> list[Observation]:
        """The person's standing observations; with ``viewer``, only those it may read."""
        with self._db.read() as conn:
            if viewer is None:
                return self._current(conn, person)
            predicate, params = session_predicate(viewer, person)
            unplaced = unplaced_visible(viewer, person)
            rows = conn.execute(
                f"SELECT {_OBSERVATION_COLUMNS} FROM identity_observations o"
                " LEFT JOIN sessions s ON s.id = o.session_id"
                ' WHERE o.team = :team AND o."user" = :user AND o.superseded_by IS NULL'
                f" AND ((s.id IS NOT NULL AND {predicate}) OR (s.id IS NULL AND :unplaced))"
                " ORDER BY o.created_at",
                {**params, "team": person.team, "user": person.user, "unplaced": unplaced},
            ).fetchall()
            return [_observation(row) for row in rows]

    def history(self, person: Person) -> list[tuple[str, str, str | None]]:
        """Every observation, superseded ones included: (id, text, superseded_by)."""
        with self._db.read() as conn:
            rows = conn.execute(
                "SELECT id, text, superseded_by FROM identity_observations"
                ' WHERE team = ? AND "user" = ? ORDER BY created_at',
                (person.team, person.user),
            ).fetchall()
        return [(str(a), str(b), c) for a, b, c in rows]

    def forget(self, person: Person, observation_id: str | None = None) -> int:
        """Delete one observation (with what it superseded) or all of the person's."""
        with self._db.write() as conn:
            if observation_id is None:
                cursor = conn.execute(
                    'DELETE FROM identity_observations WHERE team = ? AND "user" = ?',
                    (person.team, person.user),
                )
            else:
                cursor = conn.execute(
                    'DELETE FROM identity_observations WHERE team = ? AND "user" = ?'
                    " AND (id = ? OR superseded_by = ?)",
                    (person.team, person.user, observation_id, observation_id),
                )
        return cursor.rowcount

    @staticmethod
    def _current(conn: Connection, person: Person) -> list[Observation]:
        rows = conn.execute(
            f"SELECT {_OBSERVATION_COLUMNS} FROM identity_observations o"
            ' WHERE o.team = ? AND o."user" = ? AND o.superseded_by IS NULL'
            " ORDER BY o.created_at",
            (person.team, person.user),
        ).fetchall()
        return [_observation(row) for row in rows]


_OBSERVATION_COLUMNS = (
    "o.id, o.text, o.slot, o.vector, o.source, o.created_at, o.last_seen_at, o.session_id"
)


def _observation(row: Sequence[Any]) -> Observation:
    return Observation(
        str(row[0]),
        str(row[1]),
        row[2],
        np.frombuffer(row[3], dtype=VECTOR_DTYPE).astype(np.float32),
        str(row[4]),
        float(row[5]),
        float(row[6]),
        None if row[7] is None else str(row[7]),
    )


_SIGNATURE = re.compile(
    r"\b(not|no|never|n't|without|\d+|monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"january|february|march|april|may|june|july|august|september|october|november|december)\b"
)


def _signature(text: str) -> frozenset[str]:
    """Negations, numbers and dates: MiniLM barely sees them, but they change the meaning."""
    return frozenset(_SIGNATURE.findall(text.lower().replace("n't", " n't")))


def _duplicate(
    known: Observation,
    text: str,
    digest: str,
    slot: str | None,
    vector: npt.NDArray[np.float32],
) -> bool:
    if digest == normalized_hash(known.text):
        return True
    if slot is not None:
        return False  # same slot, other words: a new value, which supersedes
    if known.slot is not None or _signature(known.text) != _signature(text):
        return False
    return float(known.vector @ vector) >= DUPLICATE_COSINE
