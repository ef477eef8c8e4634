"""Test stand-ins that implement the real Protocols (no patching of real code)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from bridge.model.protocol import Source
from bridge.pipeline.reply_sink import Step

_WORD = re.compile(r"\w+")


class TopicEmbedder:
    """Dense vectors around a topic per first word, as sentence embeddings cluster (the
    hashing embedder's sparse vectors tie too often for a nearest-neighbour graph)."""

    model_id = "test/topic-embedder"
    dim = 384

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        rows = []
        for text in texts:
            words = text.lower().split()
            topic = np.random.default_rng(sum(map(ord, words[0]))).normal(size=self.dim)
            detail = np.random.default_rng(sum(map(ord, text)) * 7919).normal(size=self.dim)
            vector = topic + 0.3 * detail
            rows.append(vector / np.linalg.norm(vector))
        return np.array(rows, dtype=np.float32)


class HashingEmbedder:
    """A deterministic bag-of-words embedder: texts sharing words get similar vectors.

    Fast and model-free, for tests about storage and visibility rather than meaning.
    It records every batch it was asked to embed.
    """

    model_id = "test/hashing-embedder"
    dim = 384

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls.append(list(texts))
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
                vectors[row, int.from_bytes(digest, "little") % self.dim] += 1.0
            norm = float(np.linalg.norm(vectors[row]))
            if norm:
                vectors[row] /= norm
        return vectors


class RecordingSink:
    """A ``ReplySink`` that keeps everything it was shown, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.pieces: list[str] = []
        self.final: str | None = None
        self.ok: bool | None = None
        self.sources: list[Source] = []

    async def thinking(self) -> None:
        self.events.append(("thinking", ""))

    async def progress(self, step: Step) -> None:
        self.events.append(("progress", f"{step.id} {step.title} {step.status}"))

    async def stream(self, text: str) -> None:
        self.events.append(("stream", text))
        self.pieces.append(text)

    async def finish(self, text: str, *, ok: bool, sources: Sequence[Source] = ()) -> None:
        self.events.append(("finish", text))
        self.final = text
        self.ok = ok
        self.sources = list(sources)


class ScriptedModel:
    """A ``LanguageModel`` that plays a queue of outcomes and records every request.

    Each entry is text to stream (as one or more pieces), a ``ModelResult`` to return,
    or an exception to raise (after streaming ``partial`` pieces, if given).
    """

    def __init__(self, *script: object, name: str = "scripted-model") -> None:
        self.script = list(script)
        self.requests: list[object] = []
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def memory_only(self) -> bool:
        return False

    async def respond(self, request: object, on_text: object) -> object:
        from bridge.model.protocol import ModelResult

        self.requests.append(request)
        step = self.script.pop(0)
        if isinstance(step, tuple):  # (pieces streamed first, exception)
            pieces, error = step
            for piece in pieces:
                await on_text(piece)  # type: ignore[operator]
            raise error
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, ModelResult):
            return step
        text = str(step)
        await on_text(text)  # type: ignore[operator]
        return ModelResult(text=text, model=self._name)

    async def aclose(self) -> None:
        return None
