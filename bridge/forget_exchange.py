"""Forgetting one exchange wherever Thoth kept it — the one way 🗑️, "Forget this" and the
console's Forget do it: the episode (text and vector), its turn in the transcript (so it
is neither replayed nor reflected on), the notes still waiting that were drawn from its
session, and a line in the audit log."""

from __future__ import annotations

from typing import Protocol

from layers.episodic.memory import EpisodicMemory
from layers.notes.governance import NoteGovernance
from layers.shared.audit.log import AuditLog
from layers.working.transcript import TranscriptStore


class ExchangeStores(Protocol):
    @property
    def episodic(self) -> EpisodicMemory: ...

    @property
    def transcript(self) -> TranscriptStore: ...

    @property
    def notes(self) -> NoteGovernance: ...

    @property
    def audit(self) -> AuditLog: ...


def forget_exchange(stores: ExchangeStores, episode_id: str, *, actor: str, who: str,
                    origin: str) -> bool:
    """False when there is no such episode (forgotten already). Run it in a thread."""
    episode = stores.episodic.store.get(episode_id)
    if episode is None or not stores.episodic.forget(episode_id):
        return False
    if episode.session_id:
        stores.transcript.forget_turn(episode.session_id, episode.created_at, episode.user_text)
        stores.notes.reject_pending_of(episode.session_id, by=f"{who} (forgot the exchange)")
    stores.audit.record(actor=actor, action="episode.forget", target=f"episode:{episode_id}",
                        origin=origin)
    return True
