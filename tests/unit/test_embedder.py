import asyncio
import threading

import numpy as np

from layers.shared.embedding.embedder import embed_off_loop
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
