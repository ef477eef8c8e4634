"""The memory console's page latency over HTTP, with a store of many episodes.

Builds (or reuses, with --workdir) a store of synthetic episodes made from the LoCoMo
turns (``recall_speed.build_store``) — SQLite, or PostgreSQL started as the tests start it
and filled by COPY (``--engine postgresql``) — serves the console on 127.0.0.1 as `thoth
console` does (uvicorn, in its own thread), signs in with the one-time link, and times
whole requests from a client: the episode search (LoCoMo questions, the operator's view),
the browse of one channel's newest, an episode's page, a person's page (``--facts``
identity facts about them), the overview and the notes page. Prints p50 and p95 in ms,
and the first page's weight.

    python bench/console_pages.py --episodes 100000 --requests 200
    python bench/console_pages.py --engine postgresql --episodes 1000000 --workdir DIR
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
import numpy as np
from pydantic import SecretStr
from starlette.applications import Starlette

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from recall_speed import (  # noqa: E402
    PostgresDatabases,
    build_store,
    load_locomo,
    percentile,
    sqlite_store,
)

from bridge.app import build  # noqa: E402
from bridge.console.serving import console_mount, sign_in_link  # noqa: E402
from bridge.console.sign_in import OneTimeLogin  # noqa: E402
from bridge.settings import Settings  # noqa: E402
from bridge.web.server import WebServer  # noqa: E402
from layers.identity.local.store import ObservationStore  # noqa: E402
from layers.identity.protocol import Person  # noqa: E402
from layers.shared.embedding.embedder import MiniLMEmbedder  # noqa: E402

WARM_UP = 10


def timed(client: httpx.Client, url: str, query: dict[str, str] | None = None
          ) -> tuple[float, int]:
    started = time.perf_counter()
    response = client.get(url, params=query)
    elapsed = (time.perf_counter() - started) * 1000
    response.raise_for_status()
    return elapsed, len(response.content)


def database_url(args: argparse.Namespace, workdir: Path) -> str:
    """A PostgreSQL database holding ``args.episodes`` episodes (built the first time)."""
    postgres = PostgresDatabases(workdir / "postgres", args.pg_shared_buffers)
    url = postgres.existing(args.episodes)
    if url is None:
        url = postgres.fresh()
        print(f"building a PostgreSQL store of {args.episodes:,} episodes…", file=sys.stderr)
        build_store("postgresql", url, args.episodes, MiniLMEmbedder(), "copy",
                    workdir / "locomo-turn-units.npz")
        postgres.built(args.episodes, url)
    return url


def with_facts(settings: Settings, person: Person, count: int) -> None:
    """``count`` identity facts about ``person`` (the local backend's), once."""
    app = build(settings)
    try:
        observations = ObservationStore(app.db)
        vector = np.ones(384, np.float32) / np.sqrt(384)
        for n in range(len(observations.current(person)), count):
            observations.add(person, f"fact {n} about the bench person: likes topic {n}", None,
                             vector, source="message", session_id=None, now=1_700_000_000.0 + n)
    finally:
        app.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--facts", type=int, default=200,
                        help="identity facts about the person whose page is timed")
    parser.add_argument("--workdir", type=Path, help="keep the built store here (reused)")
    parser.add_argument("--pg-shared-buffers", default="6GB")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.workdir or Path(scratch) / "stores"
        workdir.mkdir(parents=True, exist_ok=True)
        home = Path(scratch) / "home"
        home.mkdir()
        settings = Settings(_env_file=None, thoth_home=home)  # type: ignore[call-arg]
        if args.engine == "sqlite":
            shutil.copy(sqlite_store(workdir, args.episodes), home / "thoth.db")
        else:
            settings = settings.model_copy(
                update={"database_url": SecretStr(database_url(args, workdir))})
        person = Person("T1", "UBENCH")
        with_facts(settings, person, args.facts)
        app = build(settings)
        login = OneTimeLogin()
        server = WebServer(Starlette(routes=[console_mount(app, login)]),
                           host="127.0.0.1", port=0)
        server.start()
        try:
            link = sign_in_link("127.0.0.1", server.port, login)
            base = link.split("/login/")[0]
            rounds = args.requests + WARM_UP
            with httpx.Client(follow_redirects=True, timeout=60) as client:
                first_ms, first_bytes = timed(client, link)
                css_ms, css_bytes = timed(client, f"{base}/static/console.css")
                _, questions = load_locomo()
                asked = random.Random(7).sample(questions, rounds)
                pages = {
                    "episode search (the operator's view)": [
                        timed(client, f"{base}/episodes", {"q": q})[0] for q in asked],
                    "a channel's newest (browse)": [
                        timed(client, f"{base}/episodes", {"channel": f"C{n % 7}"})[0]
                        for n in range(rounds)],
                    "an episode's page": [
                        timed(client, f"{base}/episodes/syn-{n * 7919 % args.episodes}")[0]
                        for n in range(rounds)],
                    f"a person's page ({args.facts} facts)": [
                        timed(client, f"{base}/people",
                              {"team": person.team, "user": person.user})[0]
                        for _ in range(rounds)],
                    "overview (counts, spend)": [
                        timed(client, f"{base}/")[0] for _ in range(rounds)],
                    "notes": [timed(client, f"{base}/notes")[0] for _ in range(rounds)],
                }
        finally:
            server.stop()
            app.close()
    engine = "SQLite" if args.engine == "sqlite" else "PostgreSQL"
    print(f"console pages, {args.episodes:,} episodes on {engine}, {args.requests} requests"
          " each, whole HTTP requests from a client on 127.0.0.1 (ms)")
    print(f"{'page':<40} {'p50':>8} {'p95':>8}")
    for label, values in pages.items():
        measured = values[WARM_UP:]
        print(f"{label:<40} {statistics.median(measured):>8.1f}"
              f" {percentile(measured, 0.95):>8.1f}")
    print(f"first page: {first_bytes / 1024:.1f} KB of HTML + {css_bytes / 1024:.1f} KB of CSS"
          f" ({first_ms + css_ms:.0f} ms with sign-in); no script, no other request")


if __name__ == "__main__":
    main()
