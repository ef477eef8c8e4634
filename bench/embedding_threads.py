"""Query embedding latency and bulk throughput, by torch thread count, quiet and loaded.

One query's embedding (what every turn and every recall waits for) and a bulk batch
(what an import does) are timed with torch's default threads and with one thread,
first on a quiet machine, then with another process keeping one core busy. Printed:
p50/p95 per query in ms, and texts per second in bulk. The thread policy in
``layers/episodic/embedder.py`` is chosen on these figures.

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

import torch  # noqa: E402

from layers.episodic.embedder import MiniLMEmbedder  # noqa: E402

QUERY = "what did we decide about the staging database backups last week?"
TURN = ("We moved the staging database to pelican-db-7 and the nightly backups now run at "
        "02:00 UTC; restore drills are on the first Monday of the month. ")


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


def _bulk(embedder: MiniLMEmbedder, count: int) -> float:
    texts = [f"{TURN} ({number})" for number in range(count)]
    started = time.perf_counter()
    embedder.embed(texts)
    return count / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--bulk", type=int, default=512)
    args = parser.parse_args()
    default_threads = torch.get_num_threads()
    embedders = {str(default_threads): MiniLMEmbedder(threads=default_threads),
                 "1": MiniLMEmbedder(threads=1), "policy": MiniLMEmbedder()}
    for embedder in embedders.values():
        embedder.load()
    print(f"{'condition':<10} {'threads':>7} {'query p50':>10} {'query p95':>10} {'bulk':>12}")
    for condition in ("quiet", "loaded"):
        stop = multiprocessing.Event()
        busy = multiprocessing.Process(target=_busy, args=(stop,))
        if condition == "loaded":
            busy.start()
        try:
            for threads, embedder in embedders.items():
                _queries(embedder, 10)  # warm
                p50, p95 = _queries(embedder, args.queries)
                rate = _bulk(embedder, args.bulk)
                print(f"{condition:<10} {threads:>7} {p50:>8.1f}ms {p95:>8.1f}ms"
                      f" {rate:>7.0f} texts/s")
        finally:
            stop.set()
            if busy.is_alive():
                busy.join()


if __name__ == "__main__":
    main()
