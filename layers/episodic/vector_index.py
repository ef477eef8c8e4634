"""Exact cosine search over every stored chunk vector, held in memory.

SQLite is the truth; this is a cache of ``episode_vectors`` rebuilt on open and
kept in step by the store. Searching all vectors (not a window of the newest)
is what lets people ask about old things.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from layers.embedding.parallel import cores, map_across_cores, one_blas_thread
from layers.places import Viewer
from layers.places.visibility import CHANNEL_TYPE_CODES, Interner, visible_mask

FloatMatrix = npt.NDArray[np.floating[Any]]
# Below this many vectors one core scores them all sooner than two share the work.
_ROWS_PER_SLICE = 32768
_Scalar = TypeVar("_Scalar", bound=np.generic)


@dataclass(frozen=True)
class ChunkOwner:
    """Where the episode a chunk belongs to was said (what visibility needs)."""

    episode_rowid: int
    team: str
    channel: str
    channel_type: str
    user: str | None


class VectorIndex:
    """Growable arrays of unit vectors plus the visibility codes of their episodes."""

    def __init__(self, dim: int, capacity: int = 1024) -> None:
        one_blas_thread()
        self.dim = dim
        self._size = 0
        # float32: numpy has no fast half-precision product (torch's float16 was no
        # faster than this at a million vectors, measured: 74 against 78 ms).
        self._vectors = np.zeros((capacity, dim), dtype=np.float32)
        self._rowids = np.zeros(capacity, dtype=np.int64)
        self._alive = np.zeros(capacity, dtype=np.bool_)
        self._teams = np.zeros(capacity, dtype=np.int32)
        self._channels = np.zeros(capacity, dtype=np.int32)
        self._channel_types = np.zeros(capacity, dtype=np.int8)
        self._users = np.zeros(capacity, dtype=np.int32)
        self._interner = Interner()
        self._slots: dict[int, list[int]] = {}
        self._live = 0

    def __len__(self) -> int:
        """The number of live chunk vectors."""
        return self._live

    def __contains__(self, episode_rowid: object) -> bool:
        """Whether the episode has vectors here."""
        return episode_rowid in self._slots

    @property
    def episode_count(self) -> int:
        return len(self._slots)

    def add(self, owners: Sequence[ChunkOwner], vectors: FloatMatrix) -> None:
        """Append one vector per owner (an episode with several chunks appears several times)."""
        count = len(owners)
        if vectors.shape != (count, self.dim):
            raise ValueError(f"expected {count} vectors of {self.dim} dims, got {vectors.shape}")
        self._reserve(self._size + count)
        start, end = self._size, self._size + count
        # Rounded as the store keeps them (float16), so a search gives the same scores
        # before and after a restart reloads the index.
        self._vectors[start:end] = np.asarray(vectors).astype(np.float16)
        self._alive[start:end] = True
        for offset, owner in enumerate(owners):
            slot = start + offset
            self._rowids[slot] = owner.episode_rowid
            self._teams[slot] = self._interner.code(owner.team)
            self._channels[slot] = self._interner.code(owner.channel)
            self._channel_types[slot] = CHANNEL_TYPE_CODES[owner.channel_type]  # type: ignore[index]
            self._users[slot] = self._interner.code(owner.user)
            self._slots.setdefault(owner.episode_rowid, []).append(slot)
        self._size = end
        self._live += count

    def remove(self, episode_rowids: Sequence[int]) -> None:
        """Forget every chunk of these episodes."""
        for rowid in episode_rowids:
            for slot in self._slots.pop(rowid, []):
                self._alive[slot] = False
                self._live -= 1
                self._vectors[slot] = 0.0

    def search(self, query: FloatMatrix, viewer: Viewer, limit: int) -> list[tuple[int, float]]:
        """The ``limit`` best visible episodes as (rowid, cosine), best first.

        An episode's score is its best chunk's, so a long episode is found by any part.
        """
        size = self._size
        if size == 0 or limit <= 0:
            return []
        mask = self._alive[:size] & visible_mask(
            viewer,
            teams=self._teams[:size],
            channels=self._channels[:size],
            channel_types=self._channel_types[:size],
            users=self._users[:size],
            interner=self._interner,
        )
        visible = int(np.count_nonzero(mask))
        if visible == 0:
            return []
        # Scoring every row and masking afterwards is cheaper than gathering the
        # visible rows first: the gather would copy most of the matrix.
        scores = self._scores(np.asarray(query, dtype=np.float32).reshape(self.dim), size)
        scores[~mask] = -np.inf
        # A few extra chunks, since several may belong to one episode.
        take = min(visible, limit * 4)
        top = np.argpartition(-scores, take - 1)[:take] if take < size else np.arange(size)
        top = top[np.argsort(-scores[top], kind="stable")]
        best: dict[int, float] = {}
        for slot in top.tolist():
            score = float(scores[slot])
            if score == -np.inf:
                break
            rowid = int(self._rowids[slot])
            if rowid not in best:
                best[rowid] = score
                if len(best) == limit:
                    break
        return list(best.items())

    def holds(self, episode_rowid: int, vectors: FloatMatrix) -> bool:
        """Whether these are exactly the episode's vectors here (stored vectors are
        float16, held as the same values)."""
        slots = self._slots.get(episode_rowid)
        if not slots or len(slots) != len(vectors):
            return False
        return bool(np.array_equal(self._vectors[slots], np.asarray(vectors, dtype=np.float32)))

    def similarities(self, query: FloatMatrix, rowids: Sequence[int]) -> dict[int, float]:
        """Each listed episode's cosine with the query (its best chunk's); an episode
        with no vector here is left out. Visibility is the caller's: these rowids came
        from a search that applied it."""
        vector = np.asarray(query, dtype=np.float32).reshape(self.dim)
        found: dict[int, float] = {}
        for rowid in rowids:
            slots = self._slots.get(rowid)
            if slots:
                found[rowid] = float(np.max(self._vectors[slots] @ vector))
        return found

    def _scores(self, query: npt.NDArray[np.float32], size: int) -> npt.NDArray[np.float32]:
        """Every stored vector's cosine with the query; a large matrix in one slice per core."""
        scores = np.empty(size, dtype=np.float32)
        slices = max(1, min(cores(), size // _ROWS_PER_SLICE))
        bounds = np.linspace(0, size, slices + 1).astype(int)

        def score(part: int) -> None:
            start, end = bounds[part], bounds[part + 1]
            np.dot(self._vectors[start:end], query, out=scores[start:end])

        if slices == 1:
            score(0)
        else:
            for _ in map_across_cores(score, range(slices)):
                pass
        return scores

    def reserve(self, needed: int) -> None:
        """Make room for ``needed`` vectors in all, exactly (loading a known count).

        Growing by doubling would leave up to half the matrix unused and, while it
        grows, hold the old and the new matrix at once.
        """
        if needed > self._vectors.shape[0]:
            self._resize(needed)

    def _reserve(self, needed: int) -> None:
        capacity = self._vectors.shape[0]
        if needed > capacity:
            self._resize(max(needed, capacity * 2))

    def _resize(self, new_capacity: int) -> None:
        self._vectors = _grow(self._vectors, new_capacity)
        self._rowids = _grow(self._rowids, new_capacity)
        self._alive = _grow(self._alive, new_capacity)
        self._teams = _grow(self._teams, new_capacity)
        self._channels = _grow(self._channels, new_capacity)
        self._channel_types = _grow(self._channel_types, new_capacity)
        self._users = _grow(self._users, new_capacity)


def _grow(array: npt.NDArray[_Scalar], capacity: int) -> npt.NDArray[_Scalar]:
    grown = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
    grown[: array.shape[0]] = array
    return grown
