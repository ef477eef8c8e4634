"""The memory console's page latency over HTTP, with a store of many episodes.

Builds (or reuses, with --workdir) a SQLite store of synthetic episodes made from the
LoCoMo turns (``recall_speed.build_store``), serves the console on 127.0.0.1 as `thoth
console` does (uvicorn, in its own thread), signs in with the one-time link, and times
whole requests from a client: the episode search (LoCoMo questions, the operator's view),
the overview and the notes page. Prints p50 and p95 in ms, and the first page's weight.

    python bench/console_pages.py --episodes 100000 --requests 200
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from starlette.applications import Starlette

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from recall_speed import load_locomo, percentile, sqlite_store  # noqa: E402

from bridge.app import build  # noqa: E402
from bridge.console.serving import console_mount, sign_in_link  # noqa: E402
from bridge.console.sign_in import OneTimeLogin  # noqa: E402
from bridge.settings import Settings  # noqa: E402
from bridge.slack.http_server import WebServer  # noqa: E402

WARM_UP = 10


def timed(client: httpx.Client, url: str, query: str | None = None) -> tuple[float, int]:
    started = time.perf_counter()
    response = client.get(url, params=None if query is None else {"q": query})
    elapsed = (time.perf_counter() - started) * 1000
    response.raise_for_status()
    return elapsed, len(response.content)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--workdir", type=Path, help="keep the built store here (reused)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.workdir or Path(scratch) / "stores"
        workdir.mkdir(parents=True, exist_ok=True)
        source = sqlite_store(workdir, args.episodes)
        home = Path(scratch) / "home"
        home.mkdir()
        shutil.copy(source, home / "thoth.db")
        app = build(Settings(_env_file=None, thoth_home=home))  # type: ignore[call-arg]
        login = OneTimeLogin()
        server = WebServer(Starlette(routes=[console_mount(app, login)]),
                           host="127.0.0.1", port=0)
        server.start()
        try:
            link = sign_in_link("127.0.0.1", server.port, login)
            base = link.split("/login/")[0]
            with httpx.Client(follow_redirects=True, timeout=30) as client:
                first_ms, first_bytes = timed(client, link)
                css_ms, css_bytes = timed(client, f"{base}/static/console.css")
                _, questions = load_locomo()
                asked = random.Random(7).sample(questions, args.requests + WARM_UP)
                search = [timed(client, f"{base}/episodes", q)[0] for q in asked][WARM_UP:]
                overview = [timed(client, f"{base}/")[0]
                            for _ in range(args.requests + WARM_UP)][WARM_UP:]
                notes = [timed(client, f"{base}/notes")[0]
                         for _ in range(args.requests + WARM_UP)][WARM_UP:]
        finally:
            server.stop()
            app.close()
    print(f"console pages, {args.episodes:,} episodes on SQLite, {args.requests} requests"
          " each, whole HTTP requests from a client on 127.0.0.1 (ms)")
    print(f"{'page':<40} {'p50':>8} {'p95':>8}")
    for label, values in (("episode search (the operator's view)", search),
                          ("overview (counts, spend)", overview), ("notes", notes)):
        print(f"{label:<40} {statistics.median(values):>8.1f} {percentile(values, 0.95):>8.1f}")
    print(f"first page: {first_bytes / 1024:.1f} KB of HTML + {css_bytes / 1024:.1f} KB of CSS"
          f" ({first_ms + css_ms:.0f} ms with sign-in); no script, no other request")


if __name__ == "__main__":
    main()
