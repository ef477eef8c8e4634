"""Episodic recall speed on this machine, with synthetic episodes.

Prints, per store size (default 10k, 100k, 1M episodes):
- recall latency p50/p95, excluding the query's embedding (``EpisodicMemory.search``:
  vector search + FTS5 BM25 + fusion + loading the hits), over real LoCoMo questions;
- peak RSS of the process (model loaded, index in memory).
And once: query embedding p50/p95, and import throughput through
``EpisodicMemory.remember`` (redaction + chunking + embedding + SQLite), which is
what ``thoth episodes import`` runs.

Synthetic episodes are real LoCoMo turns plus a few random words from the same
vocabulary and two from a long Zipf-distributed tail of made-up terms (the names,
tickets and codenames a real workspace accumulates; LoCoMo alone has only ~2,600
distinct words). Half the questions carry one such term. Vectors are the turn's
real MiniLM embedding plus small noise, so both searches see realistic
distributions without embedding a million texts.
Each size runs in its own process so its peak RSS is its own.

    python bench/recall_speed.py [--sizes 10000,100000,1000000] [--queries 300]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bridge.schemas import ALL_SCHEMAS  # noqa: E402
from layers.episodic.embedder import MiniLMEmbedder  # noqa: E402
from layers.episodic.episode import Episode, Viewer  # noqa: E402
from layers.episodic.memory import EpisodicMemory, RecallQuery  # noqa: E402
from layers.episodic.store import StoredChunks  # noqa: E402
from layers.storage.database import Database  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev5.json"
TEAM = "bench"
BATCH = 5_000


def load_locomo() -> tuple[list[str], list[str]]:
    """All turn texts and all questions of the LoCoMo sample."""
    samples = json.loads(DATA.read_text())
    turns: list[str] = []
    questions: list[str] = []
    for sample in samples:
        conversation = sample["conversation"]
        for key, value in conversation.items():
            if key.startswith("session_") and isinstance(value, list):
                turns.extend(turn["text"] for turn in value)
        questions.extend(qa["question"] for qa in sample["qa"])
    return turns, questions


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def rare_term(rng: np.random.Generator) -> str:
    """A made-up term from a Zipf tail: a few are common, most are rare."""
    return f"term{int(rng.zipf(1.2)) % 500_000}"


def build_store(path: Path, size: int, embedder: MiniLMEmbedder, seed: int = 7) -> float:
    """Fill a database with ``size`` synthetic episodes; returns seconds taken."""
    turns, _ = load_locomo()
    base = embedder.embed(turns)
    vocabulary = sorted({word for text in turns for word in text.split()})
    rng = np.random.default_rng(seed)
    picker = random.Random(seed)
    db = Database.open(path, schemas=ALL_SCHEMAS)
    memory = EpisodicMemory(db, embedder)
    started = time.perf_counter()
    now = time.time()
    for start in range(0, size, BATCH):
        count = min(BATCH, size - start)
        which = rng.integers(0, len(turns), count)
        noise = rng.normal(0, 0.04, (count, base.shape[1])).astype(np.float32)
        vectors = base[which] + noise
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        items = []
        for offset in range(count):
            number = start + offset
            extra = " ".join([*picker.choices(vocabulary, k=4), rare_term(rng), rare_term(rng)])
            kind = picker.random()
            channel_type = "public" if kind < 0.9 else ("private" if kind < 0.95 else "im")
            episode = Episode(
                id=f"syn-{number}",
                user_text=f"{turns[which[offset]]} {extra}",
                summary="",
                created_at=now - picker.uniform(0, 3 * 365) * 86_400,
                team=TEAM,
                channel=f"C{number % 50}",
                channel_type=channel_type,  # type: ignore[arg-type]
                user=f"U{number % 200}",
            )
            items.append(StoredChunks(episode, vectors[offset : offset + 1]))
        memory.store.insert(items)
    db.close()
    return time.perf_counter() - started


def store_path(workdir: Path, size: int) -> Path:
    return workdir / f"bench-{size}.db"


def measure_size(size: int, queries: int, workdir: Path) -> dict[str, float]:
    """Run in a child process of its own (so its peak RSS is recall's): load, time recall."""
    embedder = MiniLMEmbedder()
    embedder.load()
    path = store_path(workdir, size)
    _, questions = load_locomo()
    asked = random.Random(1).sample(questions, min(queries, len(questions)))
    rng = np.random.default_rng(3)
    asked = [f"{q} {rare_term(rng)}" if i % 2 else q for i, q in enumerate(asked)]
    vectors = embedder.embed(asked)
    memory = EpisodicMemory(Database.open(path, schemas=ALL_SCHEMAS), embedder)
    started = time.perf_counter()
    memory.search(RecallQuery("warm up", Viewer(TEAM, "C1")), vectors[0], k=10)
    load_seconds = time.perf_counter() - started
    timings = []
    for number, (question, vector) in enumerate(zip(asked, vectors, strict=True)):
        viewer = Viewer(TEAM, f"C{number % 50}", "public", f"U{number % 200}")
        started = time.perf_counter()
        memory.search(RecallQuery(question, viewer), vector, k=10)
        timings.append((time.perf_counter() - started) * 1000)
    return {
        "size": size,
        "index_load_s": load_seconds,
        "p50_ms": statistics.median(timings),
        "p95_ms": percentile(timings, 0.95),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def measure_embedding_and_import(queries: int, workdir: Path) -> dict[str, float]:
    embedder = MiniLMEmbedder()
    embedder.load()
    turns, questions = load_locomo()
    single = []
    for question in random.Random(2).sample(questions, min(queries, len(questions))):
        started = time.perf_counter()
        embedder.embed([question])
        single.append((time.perf_counter() - started) * 1000)
    with tempfile.TemporaryDirectory() as scratch:
        return time_import(embedder, turns, Path(scratch)) | {
            "embed_p50_ms": statistics.median(single),
            "embed_p95_ms": percentile(single, 0.95),
        }


def time_import(embedder: MiniLMEmbedder, turns: list[str], scratch: Path) -> dict[str, float]:
    memory = EpisodicMemory(Database.open(scratch / "import.db", schemas=ALL_SCHEMAS), embedder)
    episodes = [
        Episode(id=f"imp-{i}", user_text=text, summary="", created_at=time.time())
        for i, text in enumerate(turns[:3000])
    ]
    started = time.perf_counter()
    memory.remember(episodes)
    seconds = time.perf_counter() - started
    return {"import_per_s": len(episodes) / seconds, "import_n": len(episodes)}


def child(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--embedding", action="store_true")
    parser.add_argument("--build", action="store_true")
    args = parser.parse_args(argv)
    if args.build:
        embedder = MiniLMEmbedder()
        seconds = build_store(store_path(args.workdir, args.size), args.size, embedder)
        result = {"build_s": seconds}
    elif args.embedding:
        result = measure_embedding_and_import(args.queries, args.workdir)
    else:
        result = measure_size(args.size, args.queries, args.workdir)
    print(json.dumps(result))


def run_child(arguments: list[str]) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", *arguments],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"benchmark child failed: {done.stderr.strip().splitlines()[-1:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--workdir", type=Path, help="keep the databases here (reused if present)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.workdir or Path(scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        common = ["--queries", str(args.queries), "--workdir", str(workdir)]
        embed = run_child(["--embedding", *common])
        print(
            f"query embedding  p50 {embed['embed_p50_ms']:.1f} ms"
            f"  p95 {embed['embed_p95_ms']:.1f} ms   (target p50 <= 20 ms)"
        )
        print(
            f"import           {embed['import_per_s']:.0f} episodes/s over {embed['import_n']:.0f}"
            " (redact + embed + store; target >= 200/s)"
        )
        print()
        print(
            f"{'episodes':>10} {'p50 ms':>8} {'p95 ms':>8} {'peak RSS MB':>12}"
            f" {'index load s':>13} {'build s':>8}"
        )
        for size in (int(s) for s in args.sizes.split(",")):
            build_seconds = 0.0
            if not store_path(workdir, size).exists():
                build_seconds = run_child(["--build", "--size", str(size), *common])["build_s"]
            row = run_child(["--size", str(size), *common])
            print(
                f"{size:>10,} {row['p50_ms']:>8.2f} {row['p95_ms']:>8.2f}"
                f" {row['peak_rss_mb']:>12.0f} {row['index_load_s']:>13.1f} {build_seconds:>8.1f}"
            )
        print("targets: p50 <= 10 ms at 100k, <= 60 ms at 1M; peak RSS <= 800 MB at 100k")


if __name__ == "__main__":
    main()
