"""Skills that fit a message, by embedding similarity (what the offline responder shows)."""

from __future__ import annotations

import threading

import numpy as np
import numpy.typing as npt

from layers.procedural.skills import Skill, SkillLibrary
from layers.shared.embedding.embedder import Embedder

# MiniLM cosines: unrelated texts sit around 0.0-0.2, a request and the description
# of the procedure it needs around 0.35 and up.
MATCH_THRESHOLD = 0.3


class SkillMatcher:
    def __init__(
        self, library: SkillLibrary, embedder: Embedder, *, threshold: float = MATCH_THRESHOLD
    ) -> None:
        self._library = library
        self._embedder = embedder
        self._threshold = threshold
        self._lock = threading.Lock()
        self._cached: tuple[tuple[str, ...], npt.NDArray[np.float32]] | None = None

    def match(self, text: str, k: int = 3) -> list[Skill]:
        skills = list(self._library.skills().values())
        if not skills or not text.strip():
            return []
        matrix = self._descriptions(skills)
        query = self._embedder.embed([text])[0]
        scores = matrix @ query
        order = np.argsort(-scores)[:k]
        return [skills[i] for i in order if scores[i] >= self._threshold]

    def _descriptions(self, skills: list[Skill]) -> npt.NDArray[np.float32]:
        key = tuple(f"{s.slug}\n{s.description}" for s in skills)
        with self._lock:
            if self._cached is None or self._cached[0] != key:
                texts = [f"{s.manifest.title}: {s.description}" for s in skills]
                self._cached = (key, self._embedder.embed(texts))
            return self._cached[1]
