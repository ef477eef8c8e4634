"""How long redaction takes, on ordinary text and on text full of secrets.

``redact()`` runs on every write and every way out, so its cost on ordinary text
(no secret at all) is the figure that matters; the corpus figure is the worst case.
Printed: microseconds per call and per kilobyte, best of ``--repeat`` runs.

    python bench/redaction.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import sys
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from layers.shared.redaction import redact  # noqa: E402
from layers.shared.redaction.stream import RedactingStream  # noqa: E402
from tests.secret_corpus import ORDINARY, SECRETS  # noqa: E402


def _measure(name: str, text: str, repeat: int) -> None:
    calls = max(1, 200_000 // max(1, len(text)))
    best = min(timeit.repeat(lambda: redact(text), number=calls, repeat=repeat)) / calls
    per_kb = best / (len(text.encode()) / 1024)
    print(f"{name:<36} {len(text):>6} chars {best * 1e6:>9.1f} us/call {per_kb * 1e6:>7.1f} us/KB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    # A long reply: this project's docs, prose full of the words that announce
    # secrets (token, key, password) and of URLs, ids and code.
    readme = "".join(path.read_text(encoding="utf-8")
                     for path in sorted((ROOT / "docs").glob("*.md")))
    _measure("one Slack message (ordinary)", ORDINARY[0], args.repeat)
    _measure("the false-positive corpus, a line each", "\n".join(ORDINARY), args.repeat)
    _measure("a 4 KB reply (the docs' first 4 KB)", readme[:4096], args.repeat)
    _measure("a 40 KB reply (the docs' first 40 KB)", readme[:40960], args.repeat)
    _measure(f"all {len(SECRETS)} corpus secrets", "\n".join(s.text for s in SECRETS), args.repeat)
    stream = "".join(f"{line}\n" for line in readme[:40960].splitlines())
    pieces = [stream[i : i + 20] for i in range(0, len(stream), 20)]
    best = min(timeit.repeat(lambda: _stream(pieces), number=1, repeat=3))
    print(f"{'the 40 KB reply streamed, 20-char pieces':<36} {len(stream):>6} chars"
          f" {best * 1e3:>9.1f} ms in all")


def _stream(pieces: list[str]) -> str:
    stream = RedactingStream()
    shown = [stream.feed(piece) for piece in pieces]
    return "".join(shown) + stream.end()

if __name__ == "__main__":
    main()
