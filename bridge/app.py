"""The composition root: ``build(settings)`` creates each client once and passes it down."""

from __future__ import annotations

from dataclasses import dataclass

from bridge.settings import Settings
from layers.episodic.embedder import Embedder, MiniLMEmbedder
from layers.episodic.memory import EpisodicMemory
from layers.episodic.ranking import Priors
from layers.storage.database import Database


@dataclass
class Thoth:
    """Everything a transport or command needs, built once."""

    settings: Settings
    db: Database
    embedder: Embedder
    episodic: EpisodicMemory

    def close(self) -> None:
        self.db.close()


def build(settings: Settings, *, embedder: Embedder | None = None) -> Thoth:
    """Open the database (running migrations) and wire the layers together.

    The embedding model loads lazily, on the first text to embed, so commands
    that never embed (``init``, ``export``) start fast.
    """
    db = Database.open(settings.db_path)
    chosen_embedder = embedder or MiniLMEmbedder()
    episodic = EpisodicMemory(db, chosen_embedder, Priors(tau_days=settings.recall_tau_days))
    return Thoth(settings=settings, db=db, embedder=chosen_embedder, episodic=episodic)
