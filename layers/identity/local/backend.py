"""The local identity backend: no server, observations from each person's own words."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt

from layers.identity.local.extraction import extract
from layers.identity.local.store import Observation, ObservationStore
from layers.identity.protocol import Fact, Forgotten, Person, TurnMessages
from layers.shared.embedding.embedder import Embedder
from layers.shared.offloaded import Offloaded
from layers.shared.places import Viewer
from layers.shared.redaction import redact
from layers.shared.storage.database import Database

# A user model is a short block: the few observations closest to the message.
USER_MODEL_SIZE = 5
# Relevance first; recency (half-life 30 days) only orders close calls.
RECENCY_WEIGHT = 0.05
RECENCY_HALF_LIFE_S = 30 * 86_400


class LocalIdentity:
    name = "local"
    # Facts are drawn from a turn as it is ingested, never later: a forget settles at once.
    settle_s = 0.0

    def __init__(
        self, db: Database, embedder: Embedder, *, clock: Callable[[], float] = time.time
    ) -> None:
        self._store = ObservationStore(db)
        # The backend's coroutines reach the store only through a thread.
        self._observations = Offloaded(self._store)
        self._embedder = embedder
        self._clock = clock

    @property
    def store(self) -> ObservationStore:
        """The store itself, for the commands (no loop)."""
        return self._store

    async def ingest(self, turn: TurnMessages) -> None:
        # Only the person's message: the reply is the agent's paraphrase, not their word.
        statements = extract(redact(turn.user_text))
        if statements:
            await self._observations.run(
                self._add,
                turn.person,
                [(s.text, s.slot) for s in statements],
                "message",
                turn.session_id,
            )

    async def observe(
        self, person: Person, observations: list[str], *, session_id: str | None, source: str
    ) -> list[str]:
        texts: list[tuple[str, str | None]] = [
            (redact(text).strip(), None) for text in observations if text.strip()
        ]
        if not texts:
            return []
        return await self._observations.run(self._add, person, texts, source, session_id)

    async def user_model(self, person: Person, message: str, viewer: Viewer) -> str | None:
        return await self._observations.run(self._user_model, person, message, viewer)

    async def facts(self, person: Person, viewer: Viewer | None = None) -> list[Fact]:
        current = await self._observations.run(ObservationStore.current, person, viewer)
        return [Fact(o.id, o.text, o.created_at, o.source, o.session_id) for o in current]

    async def forget(self, person: Person, fact_id: str | None = None) -> int:
        return await self._observations.run(ObservationStore.forget, person, fact_id)

    async def forget_person(self, person: Person) -> Forgotten:
        # The local backend keeps no messages: the observations are all it holds.
        return Forgotten(await self.forget(person))

    async def forget_conversations(self, team: str, session_ids: Sequence[str]) -> int:
        return 0  # no messages kept: each person's observations go with forget_person

    async def sweep(self, person: Person, since: float) -> int:
        return 0  # nothing is derived after a turn is ingested: nothing comes late

    async def warm_up(self, team: str) -> None:
        return None  # SQLite and the shared embedder: nothing to open

    async def check(self) -> str:
        return "local backend (SQLite, no server)"

    def _add(
        self,
        store: ObservationStore,
        person: Person,
        texts: list[tuple[str, str | None]],
        source: str,
        session_id: str | None,
    ) -> list[str]:
        """Store what is new; returns the ids it made (a duplicate makes none)."""
        vectors = self._embedder.embed([text for text, _ in texts])
        now = self._clock()
        made = [
            store.add(person, text, slot, vector, source=source, session_id=session_id, now=now)
            for (text, slot), vector in zip(texts, vectors, strict=True)
        ]
        return [new_id for new_id in made if new_id is not None]

    def _user_model(
        self, store: ObservationStore, person: Person, message: str, viewer: Viewer
    ) -> str | None:
        current = store.current(person, viewer)
        if not current:
            return None
        chosen = current
        if len(current) > USER_MODEL_SIZE:
            query = self._embedder.embed([message])[0]
            now = self._clock()
            chosen = sorted(current, key=lambda o: -_score(o, query, now))[:USER_MODEL_SIZE]
        name = person.name or person.user
        lines = [f"- {name} {o.text} ({_day(o.created_at)})" for o in chosen]
        return "\n".join(lines)


def _score(observation: Observation, query: npt.NDArray[np.float32], now: float) -> float:
    age = max(0.0, now - observation.last_seen_at)
    recency = float(0.5 ** (age / RECENCY_HALF_LIFE_S))
    return float(observation.vector @ query) + RECENCY_WEIGHT * recency


def _day(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).date().isoformat()
