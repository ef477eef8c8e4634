"""The corpus of realistic secrets: every kind is redacted, ordinary text is left alone."""

from __future__ import annotations

import pytest

from layers.shared.redaction import redact
from tests.secret_corpus import ORDINARY, SECRETS, Seeded


def test_the_corpus_is_broad() -> None:
    assert len({seeded.kind for seeded in SECRETS}) >= 44


@pytest.mark.parametrize("seeded", SECRETS, ids=lambda seeded: seeded.kind)
def test_no_part_of_the_secret_survives(seeded: Seeded) -> None:
    out = redact(seeded.text)
    assert "[REDACTED:" in out
    # Not the secret, nor any eight characters of it: no half-matched tail is left.
    pieces = {seeded.secret[i : i + 8] for i in range(len(seeded.secret) - 7)}
    assert not [piece for piece in pieces if piece in out], out


@pytest.mark.parametrize("seeded", SECRETS, ids=lambda seeded: seeded.kind)
def test_the_words_around_the_secret_stay(seeded: Seeded) -> None:
    before, _, after = seeded.text.partition(seeded.secret)
    out = redact(seeded.text)
    # Key names and sentences are kept; only the secret (and at most a sentence's
    # last punctuation mark) is replaced.
    assert out.startswith(before[: max(0, len(before) - 1)])
    assert out.endswith(after[1:]) or not after[1:]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_unchanged(text: str) -> None:
    assert redact(text) == text


def test_every_secret_in_one_message() -> None:
    text = "\n".join(seeded.text for seeded in SECRETS)
    out = redact(text)
    assert all(seeded.secret not in out for seeded in SECRETS)
    assert redact(out) == out
