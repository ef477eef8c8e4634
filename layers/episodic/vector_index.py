"""Cosine search over every stored chunk vector, held in memory or mapped from disk.

SQLite is the truth; this is a cache of ``episode_vectors`` rebuilt on open and
kept in step by the store. Searching all vectors (not a window of the newest)
is what lets people ask about old things.

Small stores are scanned whole, exactly. From ``APPROXIMATE_FROM`` vectors an HNSW
graph (``approximate_index.py``, attached by ``memory.py`` once built) says which
vectors to score: its nearest, plus every vector added since it was built (scanned
exactly, so nothing new is missed), each scored exactly here. Visibility is applied to
those; a viewer who may see too few of them gets a wider search, and past a quarter of
the graph the exact scan.

Vectors are held as the database keeps them, float16: half the memory of float32 (at
100k episodes, about 250k sentence vectors: 192 MB instead of 384 MB, most of what a
``thoth recall`` process held). The scores are the same to the bit: each float16 value
widens exactly to float32, and every product is float32 as before — only the widening
moved from loading to scoring, a slice at a time into a small buffer. numpy widens
float16 slowly (35 ms for 50k vectors, five times the product itself), so numkong
(usearch's own SIMD kernels, installed with it) does it: 50k vectors widened and scored
in 9 ms against 13 ms for the float32 product (half the bytes read), and the few
thousand candidates the graph finds in 0.6 ms against 0.9 ms (measured on this 2-core
machine, docs/benchmarks.md). int8 would halve it again but changes the scores; the
ranking was held to the same, so float16 it is.

Where a saved graph comes with its vectors (``approximate_index.py``), those are not
read into memory at all: ``map_graph`` gives the graph's keys the first slots, whose
vectors are read from the saved file, memory-mapped, when they are scored. Only vectors
the saved graph lacks (stored since, or changed) are held in memory. So an index has two
tiers of slots: ``[0, mapped)`` in the map, ``[mapped, size)`` in ``_vectors``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from layers.episodic.approximate_index import (
    PRINT_SLICE,
    ApproximateIndex,
    KeyVectors,
    fingerprints,
    widened,
)
from layers.shared.embedding.parallel import cores, map_across_cores, one_blas_thread
from layers.shared.places import Viewer
from layers.shared.places.visibility import CHANNEL_TYPE_CODES, Interner, visible_mask

FloatMatrix = npt.NDArray[np.floating[Any]]
HalfMatrix = npt.NDArray[np.float16]
# Slots to their vectors (float16), as they were when made (a snapshot's).
VectorsOf = Callable[[npt.NDArray[np.int64]], HalfMatrix]
# Below this many vectors one core scores them all sooner than two share the work.
_ROWS_PER_SLICE = 32768
# float16 rows widened at a time for the product (1.5 MB of float32: stays in cache).
_WIDEN_ROWS = 1024
_Scalar = TypeVar("_Scalar", bound=np.generic)
# Below this many vectors the exact scan takes a few ms: no graph is built.
APPROXIMATE_FROM = 50_000
# The graph is first asked for this many times the wanted episodes (several vectors may
# be one episode's, some not visible), then four times as many each round.
FIRST_ASK_PER_EPISODE = 8
MIN_FIRST_ASK = 200


@dataclass(frozen=True)
class _Attached:
    """A graph and what its keys are here: each key's slot (-1: gone), and which of the
    slots there were when it was attached it holds."""

    graph: ApproximateIndex
    slots: npt.NDArray[np.int64]
    in_graph: npt.NDArray[np.bool_]


@dataclass(frozen=True)
class _Tiers:
    """Where slots' vectors are: below ``mapped`` in ``map``, from it in ``memory``."""

    map: HalfMatrix
    memory: HalfMatrix

    @property
    def mapped(self) -> int:
        return len(self.map)

    def of(self, slots: npt.NDArray[np.int64]) -> HalfMatrix:
        """The slots' vectors, in their order (a copy)."""
        mapped = self.mapped
        if mapped == 0:
            return self.memory[slots]
        low = slots < mapped
        if low.all():
            return np.asarray(self.map[slots])
        found = np.empty((len(slots), self.memory.shape[1]), dtype=np.float16)
        found[low] = self.map[slots[low]]
        found[~low] = self.memory[slots[~low] - mapped]
        return found

    def block(self, start: int, end: int) -> HalfMatrix:
        """Slots ``start`` to ``end``, all in one tier (a view)."""
        mapped = self.mapped
        if end <= mapped:
            return self.map[start:end]
        return self.memory[start - mapped : end - mapped]


@dataclass(frozen=True)
class _Unclaimed:
    """A mapped graph's keys by row (sorted), for the loading vectors to claim."""

    rows: npt.NDArray[np.int64]
    keys: npt.NDArray[np.int64]


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
        # float16, as stored: scored after widening to float32 (``_widened``), since
        # numpy has no fast half-precision product.
        self._tiers = _Tiers(np.zeros((0, dim), dtype=np.float16),
                             np.zeros((capacity, dim), dtype=np.float16))
        self._unclaimed: _Unclaimed | None = None
        self._live_mapped = 0
        self._rowids = np.zeros(capacity, dtype=np.int64)
        self._alive = np.zeros(capacity, dtype=np.bool_)
        self._teams = np.zeros(capacity, dtype=np.int32)
        self._channels = np.zeros(capacity, dtype=np.int32)
        self._channel_types = np.zeros(capacity, dtype=np.int8)
        self._users = np.zeros(capacity, dtype=np.int32)
        self._interner = Interner()
        self._rows = np.zeros(capacity, dtype=np.int64)  # each vector's episode_vectors row
        # Each episode's slots: ``first << 8 | count`` while they are consecutive (as an
        # episode's chunks are added), else a list. One int an episode instead of a list
        # and an int a slot: 13 MB less at 100k episodes.
        self._slots: dict[int, int | list[int]] = {}
        self._live = 0
        # Replaced whole by attach (one assignment), so a search that started with one
        # graph reads that graph's own key map throughout.
        self._attached: _Attached | None = None
        self._dead_in_graph = 0
        # Counts adds and removes: what ``_outside`` found holds until the next one.
        self._changes = 0
        self._outside_cache: tuple[_Attached, int, npt.NDArray[np.int64]] | None = None

    def __len__(self) -> int:
        """The number of live chunk vectors."""
        return self._live

    @property
    def dead_slots(self) -> int:
        """Slots of vectors forgotten or replaced, still held in memory (a mapped slot's
        vector holds none)."""
        mapped = self._tiers.mapped
        return (self._size - mapped) - (self._live - self._live_mapped)

    @property
    def dead_in_graph(self) -> int:
        return self._dead_in_graph

    def __contains__(self, episode_rowid: object) -> bool:
        """Whether the episode has vectors here."""
        return episode_rowid in self._slots

    @property
    def episode_count(self) -> int:
        return len(self._slots)

    @property
    def graph(self) -> ApproximateIndex | None:
        return self._attached.graph if self._attached is not None else None

    @property
    def maps_saved_files(self) -> bool:
        """Whether it reads a saved graph's files in place: deleting them would not take
        their vectors off the disk while it lives (memory.py drops it on a forget)."""
        return self._tiers.mapped > 0 or (self.graph is not None and self.graph.restored)

    def map_graph(self, graph: ApproximateIndex) -> None:
        """Take a restored graph with its saved vectors, on an empty index: key i is slot
        i, its vector read from the map. A key's slot comes alive when ``add`` is given
        its row with the same vector (fingerprint); keys nobody claims stay dead."""
        if self._size or graph.vectors is None:
            raise ValueError("a graph is mapped with its vectors, onto an empty index")
        count = len(graph)
        memory = self._tiers.memory
        self._tiers = _Tiers(graph.vectors, memory)
        self._resize(count + len(memory))
        self._size = count
        order = np.argsort(graph.key_rows, kind="stable")
        self._unclaimed = _Unclaimed(graph.key_rows[order], order)
        self._attached = _Attached(graph, np.full(count, -1, dtype=np.int64),
                                   np.zeros(count, dtype=np.bool_))
        self._dead_in_graph = count

    def attach(self, graph: ApproximateIndex) -> None:
        """Search through ``graph`` from now on: its keys are matched to these vectors by
        their rows; a key whose vector is gone here counts as dead."""
        size = self._size
        slots = np.full(len(graph), -1, dtype=np.int64)
        if size:
            order = np.argsort(self._rows[:size], kind="stable")
            sorted_rows = self._rows[:size][order]
            at = np.minimum(np.searchsorted(sorted_rows, graph.key_rows), size - 1)
            found = sorted_rows[at] == graph.key_rows
            slots[found] = order[at[found]]
            # A row now of another vector (or of one forgotten here) is not this key's.
            matched = np.flatnonzero(found)
            same = self._alive[slots[matched]]
            # A slice at a time, as fingerprints() widens them: no copy of the whole matrix.
            for start in range(0, len(matched), PRINT_SLICE):
                part = matched[start : start + PRINT_SLICE]
                same[start : start + PRINT_SLICE] &= (
                    fingerprints(self._tiers.of(slots[part])) == graph.key_prints[part])
            slots[matched[~same]] = -1
        in_graph = np.zeros(size, dtype=np.bool_)
        in_graph[slots[slots >= 0]] = True
        self._attached = _Attached(graph, slots, in_graph)
        self._dead_in_graph = int(np.count_nonzero(slots < 0))

    def graph_vectors(self) -> KeyVectors | None:
        """The attached graph's vectors by key (``save`` writes them), or None when a key
        has no live vector here."""
        attached = self._attached
        if attached is None or bool(np.any(attached.slots < 0)):
            return None
        tiers, slots = self._tiers, attached.slots
        return lambda start, end: tiers.of(slots[start:end])

    def graph_is_stale(self) -> bool:
        """Whether a new graph is owed: a quarter of it dead, or a quarter of the vectors
        added since it was built (each of those is scanned at every search)."""
        if self._attached is None:
            return self._live >= APPROXIMATE_FROM
        in_graph = len(self._attached.graph)
        outside = self._live - (in_graph - self._dead_in_graph)
        return 4 * max(self._dead_in_graph, outside) > max(in_graph, 1)

    def snapshot(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], VectorsOf]:
        """The live vectors' slots and rows, and where their vectors are, to build a graph
        from in another thread (a grown index has a new matrix: this one stays as it is,
        but for vectors forgotten meanwhile, which the graph then holds dead)."""
        live = np.flatnonzero(self._alive[: self._size])
        return live, self._rows[live], self._tiers.of

    def add(self, owners: Sequence[ChunkOwner], vectors: FloatMatrix,
            rows: npt.NDArray[np.int64]) -> None:
        """Append one vector per owner (an episode with several chunks appears several
        times), each with its ``episode_vectors`` row."""
        count = len(owners)
        if vectors.shape != (count, self.dim):
            raise ValueError(f"expected {count} vectors of {self.dim} dims, got {vectors.shape}")
        # Rounded as the store keeps them (float16), so a search gives the same scores
        # before and after a restart reloads the index.
        halves = np.asarray(vectors, dtype=np.float16)
        rows = np.asarray(rows, dtype=np.int64)
        slots = self._claimed(rows, halves)
        new = slots < 0
        fresh = int(np.count_nonzero(new))
        self._reserve(self._size + fresh)
        slots[new] = np.arange(self._size, self._size + fresh)
        self._tiers.memory[slots[new] - self._tiers.mapped] = halves[new]
        self._alive[slots] = True
        self._rows[slots] = rows
        for slot, owner in zip(slots.tolist(), owners, strict=True):
            self._rowids[slot] = owner.episode_rowid
            self._teams[slot] = self._interner.code(owner.team)
            self._channels[slot] = self._interner.code(owner.channel)
            self._channel_types[slot] = CHANNEL_TYPE_CODES[owner.channel_type]  # type: ignore[index]
            self._users[slot] = self._interner.code(owner.user)
            self._hold(owner.episode_rowid, slot)
        self._size += fresh
        self._live += count
        self._changes += 1

    def _hold(self, episode_rowid: int, slot: int) -> None:
        held = self._slots.get(episode_rowid)
        if held is None:
            self._slots[episode_rowid] = slot << 8 | 1
        elif isinstance(held, list):
            held.append(slot)
        elif slot == (held >> 8) + (held & 0xFF) and held & 0xFF < 0xFF:
            self._slots[episode_rowid] = held + 1
        else:
            self._slots[episode_rowid] = [*_listed(held), slot]

    def _slots_of(self, episode_rowid: int) -> list[int]:
        return _listed(self._slots.get(episode_rowid, []))

    def _claimed(self, rows: npt.NDArray[np.int64],
                 halves: HalfMatrix) -> npt.NDArray[np.int64]:
        """Each vector's mapped slot, if a mapped key not yet alive is its row with its
        vector (-1 otherwise); those slots become the graph's."""
        slots = np.full(len(rows), -1, dtype=np.int64)
        unclaimed, attached = self._unclaimed, self._attached
        if unclaimed is None or attached is None or not len(unclaimed.rows) or not len(rows):
            return slots
        at = np.minimum(np.searchsorted(unclaimed.rows, rows), len(unclaimed.rows) - 1)
        hit = np.flatnonzero(unclaimed.rows[at] == rows)
        keys = unclaimed.keys[at[hit]]
        same = ~self._alive[keys] & (fingerprints(halves[hit]) == attached.graph.key_prints[keys])
        hit, keys = hit[same], keys[same]
        slots[hit] = keys
        if attached.graph is self._mapped_graph():
            attached.slots[keys] = keys
            attached.in_graph[keys] = True
            self._dead_in_graph -= len(keys)
        self._live_mapped += len(keys)
        return slots

    def _mapped_graph(self) -> ApproximateIndex | None:
        """The graph whose vectors are mapped, while it is the one searched through."""
        attached = self._attached
        return attached.graph if attached is not None and attached.graph.vectors is (
            self._tiers.map) else None

    def remove(self, episode_rowids: Sequence[int]) -> None:
        """Forget every chunk of these episodes."""
        self._changes += 1
        mapped = self._tiers.mapped
        for rowid in episode_rowids:
            for slot in _listed(self._slots.pop(rowid, [])):
                self._alive[slot] = False
                self._live -= 1
                if slot < mapped:
                    # Read-only, and the saved file is deleted with the forgetting
                    # (memory.py): the map goes when this index does.
                    self._live_mapped -= 1
                else:
                    self._tiers.memory[slot - mapped] = 0.0
                attached = self._attached
                if attached is not None and slot < len(attached.in_graph) and (
                        attached.in_graph[slot]):
                    attached.in_graph[slot] = False
                    self._dead_in_graph += 1

    def search(self, query: FloatMatrix, viewer: Viewer, limit: int) -> list[tuple[int, float]]:
        """The ``limit`` best visible episodes as (rowid, cosine), best first.

        An episode's score is its best chunk's, so a long episode is found by any part.
        """
        size = self._size
        if size == 0 or limit <= 0:
            return []
        vector = np.asarray(query, dtype=np.float32).reshape(self.dim)
        attached = self._attached
        if attached is not None:
            graph = attached.graph
            ask = max(MIN_FIRST_ASK, limit * FIRST_ASK_PER_EPISODE)
            outside = self._outside(attached)
            while 4 * ask <= len(graph):
                keys = graph.nearest(vector, ask)
                slots = attached.slots[keys[keys < len(attached.slots)]]
                candidates = np.concatenate([slots[slots >= 0], outside])
                visible = candidates[self._alive[candidates] & self._visible(viewer, candidates)]
                best = self._best_episodes(visible, widened(self._tiers.of(visible)) @ vector,
                                           limit)
                if len(best) == limit or len(keys) < ask:
                    return best
                ask *= 4
        return self._exact(vector, viewer, limit)

    def _outside(self, attached: _Attached) -> npt.NDArray[np.int64]:
        """The live vectors the graph lacks (stored since it was built), scanned at every
        search: found anew only after an add or a remove, not at each search (an O(n)
        pass, about 3 ms at 2.5M vectors)."""
        changes, cached = self._changes, self._outside_cache
        if cached is not None and cached[0] is attached and cached[1] == changes:
            return cached[2]
        covered = len(attached.in_graph)
        outside = np.concatenate([
            np.flatnonzero(self._alive[:covered] & ~attached.in_graph),
            covered + np.flatnonzero(self._alive[covered : self._size])])
        self._outside_cache = (attached, changes, outside)
        return outside

    def _visible(self, viewer: Viewer,
                 slots: npt.NDArray[np.int64] | slice) -> npt.NDArray[np.bool_]:
        return visible_mask(
            viewer,
            teams=self._teams[slots],
            channels=self._channels[slots],
            channel_types=self._channel_types[slots],
            users=self._users[slots],
            interner=self._interner,
        )

    def _best_episodes(self, slots: npt.NDArray[np.int64], scores: npt.NDArray[np.float32],
                       limit: int) -> list[tuple[int, float]]:
        """The best ``limit`` episodes of these scored vectors, each at its best chunk."""
        best: dict[int, float] = {}
        for position in np.argsort(-scores, kind="stable").tolist():
            rowid = int(self._rowids[slots[position]])
            if rowid not in best:
                best[rowid] = float(scores[position])
                if len(best) == limit:
                    break
        return list(best.items())

    def _exact(self, vector: npt.NDArray[np.float32], viewer: Viewer,
               limit: int) -> list[tuple[int, float]]:
        """Every vector scored (what small stores, and viewers who see little, get)."""
        size = self._size
        mask = self._alive[:size] & self._visible(viewer, slice(0, size))
        visible = int(np.count_nonzero(mask))
        if visible == 0:
            return []
        # Scoring every row and masking afterwards is cheaper than gathering the
        # visible rows first: the gather would copy most of the matrix.
        scores = self._scores(vector, size)
        scores[~mask] = -np.inf
        # A few extra chunks, since several may belong to one episode.
        take = min(visible, limit * 4)
        top = np.argpartition(-scores, take - 1)[:take] if take < size else np.arange(size)
        top = top[mask[top]]
        return self._best_episodes(top, scores[top], limit)

    def holds(self, episode_rowid: int, vectors: FloatMatrix) -> bool:
        """Whether these are exactly the episode's vectors here (stored vectors are
        float16, held as the same values)."""
        slots = self._slots_of(episode_rowid)
        if not slots or len(slots) != len(vectors):
            return False
        return bool(np.array_equal(self._tiers.of(np.array(slots, dtype=np.int64)),
                                   np.asarray(vectors, dtype=np.float16)))

    def similarities(self, query: FloatMatrix, rowids: Sequence[int]) -> dict[int, float]:
        """Each listed episode's cosine with the query (its best chunk's); an episode
        with no vector here is left out. Visibility is the caller's: these rowids came
        from a search that applied it."""
        vector = np.asarray(query, dtype=np.float32).reshape(self.dim)
        found: dict[int, float] = {}
        for rowid in rowids:
            slots = self._slots_of(rowid)
            if slots:
                held = self._tiers.of(np.array(slots, dtype=np.int64))
                found[rowid] = float(np.max(widened(held) @ vector))
        return found

    def _scores(self, query: npt.NDArray[np.float32], size: int) -> npt.NDArray[np.float32]:
        """Every stored vector's cosine with the query; a large matrix in one slice per core."""
        scores = np.empty(size, dtype=np.float32)
        slices = max(1, min(cores(), size // _ROWS_PER_SLICE))
        bounds = np.linspace(0, size, slices + 1).astype(int)
        tiers = self._tiers

        def score(part: int) -> None:
            # One buffer per slice: each core widens into its own. A block never spans
            # the two tiers.
            buffer = np.empty((_WIDEN_ROWS, self.dim), dtype=np.float32)
            start, stop = int(bounds[part]), int(bounds[part + 1])
            while start < stop:
                end = min(start + _WIDEN_ROWS, stop)
                if start < tiers.mapped < end:
                    end = tiers.mapped
                block = widened(tiers.block(start, end), buffer[: end - start])
                np.dot(block, query, out=scores[start:end])
                start = end

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
        if needed > len(self._rowids):
            self._resize(needed)

    def _reserve(self, needed: int) -> None:
        capacity = len(self._rowids)
        if needed > capacity:
            self._resize(max(needed, capacity * 2))

    def _resize(self, new_capacity: int) -> None:
        """Room for ``new_capacity`` slots; the mapped ones need no room in memory."""
        tiers = self._tiers
        self._tiers = _Tiers(tiers.map, _grow(tiers.memory, new_capacity - tiers.mapped))
        self._rowids = _grow(self._rowids, new_capacity)
        self._alive = _grow(self._alive, new_capacity)
        self._teams = _grow(self._teams, new_capacity)
        self._channels = _grow(self._channels, new_capacity)
        self._channel_types = _grow(self._channel_types, new_capacity)
        self._users = _grow(self._users, new_capacity)
        self._rows = _grow(self._rows, new_capacity)


def _listed(held: int | list[int]) -> list[int]:
    """An episode's slots as ``_slots`` holds them, as a list."""
    if isinstance(held, list):
        return held
    return list(range(held >> 8, (held >> 8) + (held & 0xFF)))


def _grow(array: npt.NDArray[_Scalar], capacity: int) -> npt.NDArray[_Scalar]:
    grown = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
    grown[: array.shape[0]] = array
    return grown
