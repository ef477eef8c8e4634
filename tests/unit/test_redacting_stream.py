"""A reply redacted while it streams: no piece of a secret is shown, however it is cut."""

from __future__ import annotations

import pytest

from layers.shared.redaction import redact
from layers.shared.redaction.stream import RedactingStream
from tests.secret_corpus import SECRETS, Seeded


def _streamed(text: str, size: int) -> tuple[str, list[str]]:
    stream = RedactingStream(hold_chars=40)
    shown = [stream.feed(text[i : i + size]) for i in range(0, len(text), size)]
    shown.append(stream.end())
    return "".join(shown), [piece for piece in shown if piece]


@pytest.mark.parametrize("size", [1, 3, 7, 50])
@pytest.mark.parametrize("seeded", SECRETS[::5], ids=lambda seeded: seeded.kind)
def test_the_shown_text_is_the_redacted_text(seeded: Seeded, size: int) -> None:
    text = f"Sure, I noted it.\n{seeded.text}\nAnything else? " + "more words " * 8
    shown, _ = _streamed(text, size)
    assert shown == redact(text)
    assert seeded.secret not in shown


def test_text_is_released_by_lines_and_long_lines_by_words() -> None:
    stream = RedactingStream(hold_chars=40)
    assert stream.feed("first line\nsecond li") == "first line\n"
    assert stream.feed("ne goes on") == ""
    released = stream.feed(" and on and on past the hold")
    assert released.endswith(" ") and "second line goes on" in released
    assert stream.end() == "hold"


def test_a_pem_block_is_held_until_it_ends() -> None:
    pem = next(seeded for seeded in SECRETS if seeded.kind == "rsa private key")
    stream = RedactingStream()
    lines = pem.text.splitlines(keepends=True)
    shown = [stream.feed(line) for line in lines]
    body_lines = pem.secret.splitlines()[1:-1]
    assert not any(body in "".join(shown) for body in body_lines)
    assert "".join(shown) + stream.end() == redact(pem.text)


@pytest.mark.parametrize("size", [1, 7, 64])
def test_a_long_reply_of_every_kind_streams_as_it_redacts_whole(size: int) -> None:
    # PEM blocks among one-line secrets: lines settle only once a block has ended.
    text = "\n".join(f"{number}. {seeded.text}" for number, seeded in enumerate(SECRETS))
    shown, pieces = _streamed(text, size)
    assert shown == redact(text)
    assert len(pieces) > len(SECRETS) // 2  # released as it came, not all at the end
