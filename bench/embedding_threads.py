"""Query embedding latency and bulk throughput, by how the cores are used, quiet and loaded.

One query's embedding (what every turn and every recall waits for) and a bulk batch
(what an import does) are timed two ways: Thoth's policy (BLAS on one thread; bulk
batches spread over the cores by ``layers/shared/embedding/parallel.py``) and BLAS on every
core with batches in turn (what a plain numpy program does) — first on a quiet
machine, then with another process keeping one core busy. Printed: p50/p95 per query
in ms, and texts per second in bulk. The policy is chosen on these figures.

    python bench/embedding_threads.py [--queries 200] [--bulk 512]
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from threadpoolctl import threadpool_limits  # noqa: E402

from layers.shared.embedding.embedder import MiniLMEmbedder  # noqa: E402
from layers.shared.embedding.parallel import cores  # noqa: E402

QUERY = "what did we decide about the staging database backups last week?"
TURN = ("We moved the staging database to pelican-db-7 and the nightly backups now run at "
        "02:00 UTC; restore drills are on the first Monday of the month. ")
BATCH = 32


def _busy(stop: multiprocessing.synchronize.Event) -> None:
    while not stop.is_set():
        sum(range(10_000))


def _queries(embedder: MiniLMEmbedder, count: int) -> tuple[float, float]:
    times = []
    for number in range(count):
        started = time.perf_counter()
        embedder.embed([f"{QUERY} ({number})"])
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


def _bulk(embedder: MiniLMEmbedder, count: int, *, spread: bool) -> float:
    texts = [f"{TURN} ({number})" for number in range(count)]
    started = time.perf_counter()
    if spread:
        embedder.embed(texts)
    else:
        model = embedder.load()
        for start in range(0, count, BATCH):
            model.encode(texts[start : start + BATCH])
    return count / (time.perf_counter() - started)


def _measure(embedder: MiniLMEmbedder, args: argparse.Namespace, *, policy: bool) -> str:
    _queries(embedder, 10)  # warm
    p50, p95 = _queries(embedder, args.queries)
    rate = _bulk(embedder, args.bulk, spread=policy)
    return f"{p50:>8.1f}ms {p95:>8.1f}ms {rate:>7.0f} texts/s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--bulk", type=int, default=512)
    args = parser.parse_args()
    embedder = MiniLMEmbedder(batch_size=BATCH)
    embedder.load()
    print(f"{cores()} cores")
    print(f"{'condition':<10} {'way':<22} {'query p50':>10} {'query p95':>10} {'bulk':>15}")
    for condition in ("quiet", "loaded"):
        stop = multiprocessing.Event()
        busy = multiprocessing.Process(target=_busy, args=(stop,))
        if condition == "loaded":
            busy.start()
        try:
            print(f"{condition:<10} {'policy (BLAS 1 thread)':<22} "
                  f"{_measure(embedder, args, policy=True)}")
            with threadpool_limits(limits=cores(), user_api="blas"):
                print(f"{condition:<10} {f'BLAS {cores()} threads':<22} "
                      f"{_measure(embedder, args, policy=False)}")
        finally:
            stop.set()
            if busy.is_alive():
                busy.join()


if __name__ == "__main__":
    main()
