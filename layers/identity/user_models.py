"""The user model for a turn: skipped for very short messages, cached briefly per person.

A chatty thread ("ok", "thanks", "and then?") should not pay a backend call on
every line, and a person's model changes slowly: something a person just said
about themselves reaches their model within ``CACHE_SECONDS``. An empty model is
not cached, so a newcomer's first facts show up on their next turn.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from layers.identity.protocol import IdentityBackend, Person
from layers.shared.places import Viewer

CACHE_SECONDS = 120.0
MIN_WORDS = 3


class UserModels:
    def __init__(
        self,
        backend: IdentityBackend,
        *,
        ttl_s: float = CACHE_SECONDS,
        min_words: int = MIN_WORDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._backend = backend
        self._ttl_s = ttl_s
        self._min_words = min_words
        self._clock = clock
        self._cache: dict[str, tuple[float, str | None]] = {}

    async def for_message(self, person: Person, message: str, viewer: Viewer) -> str | None:
        """The user model for a turn at ``viewer``'s place (cached per person and place)."""
        key = (f"{person.key}|{viewer.team}|{viewer.channel}|{viewer.channel_type}|{viewer.user}"
               f"|{viewer.confined}")
        cached = self._cache.get(key)
        fresh = cached is not None and self._clock() - cached[0] < self._ttl_s
        if cached is not None and (fresh or len(message.split()) < self._min_words):
            return cached[1]
        if len(message.split()) < self._min_words:
            return None
        model = await self._backend.user_model(person, message, viewer)
        if model:
            self._cache[key] = (self._clock(), model)
        return model

    def forget(self, person: Person) -> None:
        """Drop the cached models (after the person asked to be forgotten)."""
        for key in [key for key in self._cache if key.split("|", 1)[0] == person.key]:
            del self._cache[key]
