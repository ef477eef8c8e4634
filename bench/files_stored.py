"""Extracting and storing shared text files: files a second (issue 50).

Each of ``--files`` text files of ``--kb`` KB (log lines, every one different) is read as
a turn reads it (``bridge.files.reading.read``: its kind told by its bytes, a long one
cut to its head and tail) and kept with an episode, ``--batch`` episodes a write, in a new
SQLite file with the real MiniLM model: redacted, its words indexed, its first windows
embedded (``layers/episodic/chunking.py`` ``FILE_WINDOWS``). Printed: files, wall seconds,
files a second, of which reading, redacting and embedding, and the database's size.

    python bench/files_stored.py [--files 1000] [--kb 50] [--batch 16]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from bridge.files.reading import Read, read  # noqa: E402
from bridge.files.shared_file import SharedFile  # noqa: E402
from bridge.pipeline.shared_files import kept_files  # noqa: E402
from layers.episodic.episode import Episode  # noqa: E402
from layers.episodic.memory import EpisodicMemory  # noqa: E402
from layers.layer_tables import LAYER_SCHEMAS  # noqa: E402
from layers.shared.embedding.embedder import MiniLMEmbedder  # noqa: E402
from layers.shared.storage.engines import open_sqlite  # noqa: E402

SERVICES = ("billing", "checkout", "search", "auth", "ledger", "mailer", "reports")
LEVELS = ("INFO", "INFO", "INFO", "WARN", "ERROR")


def log_file(number: int, size: int, rng: random.Random) -> bytes:
    """A log of about ``size`` bytes whose lines differ from every other file's."""
    lines: list[str] = []
    written = 0
    while written < size:
        service = rng.choice(SERVICES)
        line = (f"2026-11-{1 + number % 28:02d}T{rng.randrange(24):02d}:{rng.randrange(60):02d}"
                f" {rng.choice(LEVELS)} {service}[{rng.randrange(1, 9)}] request"
                f" {rng.getrandbits(48):012x} took {rng.randrange(2, 900)} ms for tenant"
                f" t{rng.randrange(10_000)} ({service} shard {number % 17})")
        lines.append(line)
        written += len(line) + 1
    return "\n".join(lines).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--kb", type=int, default=50)
    parser.add_argument("--batch", type=int, default=16)
    args = parser.parse_args()
    rng = random.Random(50)
    logs = [log_file(number, args.kb * 1024, rng) for number in range(args.files)]
    embedder = MiniLMEmbedder()
    embedder.load()
    with tempfile.TemporaryDirectory() as folder:
        db = open_sqlite(Path(folder) / "thoth.db", schemas=LAYER_SCHEMAS)
        memory = EpisodicMemory(db, embedder)
        reading = 0.0
        started = time.perf_counter()
        for start in range(0, len(logs), args.batch):
            began = time.perf_counter()
            read_now = [read(SharedFile(f"service-{number}.log", data, "text/plain"))
                        for number, data in enumerate(logs[start:start + args.batch], start)]
            reading += time.perf_counter() - began
            assert all(isinstance(file, Read) for file in read_now)
            memory.remember([
                Episode(id=f"f{start + offset}", user_text="the overnight logs", summary="",
                        created_at=1_790_000_000.0 + start + offset, team="T1", channel="C1",
                        files=kept_files([file]))
                for offset, file in enumerate(read_now)])
        wall = time.perf_counter() - started
        size_mb = (Path(folder) / "thoth.db").stat().st_size / 1024 / 1024
        db.close()
    print(f"{'files':>6} {'KB each':>8} {'wall':>8} {'files/s':>8} {'reading':>8}"
          f" {'database':>9}")
    print(f"{args.files:>6} {args.kb:>8} {wall:>7.1f}s {args.files / wall:>8.1f}"
          f" {reading:>7.2f}s {size_mb:>7.0f} MB")


if __name__ == "__main__":
    main()
