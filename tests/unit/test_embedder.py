import asyncio
import threading

import numpy as np

from layers.shared.embedding.embedder import ATTENTION_CELLS, _batches, embed_off_loop
from tests.fakes import HashingEmbedder


class ThreadRecordingEmbedder(HashingEmbedder):
    """Records which thread each embed call ran on."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[int] = []

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.threads.append(threading.get_ident())
        return super().embed(texts)


def test_embedding_runs_off_the_event_loop_thread() -> None:
    embedder = ThreadRecordingEmbedder()

    async def main() -> tuple[int, np.ndarray]:
        vectors = await embed_off_loop(embedder, ["deploy on friday"])
        return threading.get_ident(), vectors

    loop_thread, vectors = asyncio.run(main())
    assert vectors.shape == (1, 384)
    assert embedder.threads and embedder.threads[0] != loop_thread


def test_batches_hold_many_short_texts_or_a_few_long_ones() -> None:
    short = np.array([12] * 40 + [64] * 5, dtype=np.int64)
    batches = _batches(short, 32)
    # Longest first; 32 texts at most, and every text once.
    assert [len(batch) for batch in batches] == [32, 13]
    assert sorted(int(i) for batch in batches for i in batch) == list(range(45))
    assert int(batches[0][0]) >= 40  # a 64-piece text leads
    long = np.array([256] * 8 + [20], dtype=np.int64)
    sizes = [len(batch) for batch in _batches(long, 32)]
    # A batch's attention scores stay within the budget: two windows of 256 at a time.
    assert sizes[:4] == [2, 2, 2, 2]
    for batch in _batches(long, 32):
        assert len(batch) * int(long[batch].max()) ** 2 <= max(ATTENTION_CELLS, 256 * 256)
