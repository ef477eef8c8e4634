"""The memory console's page latency over HTTP, with a store of many episodes.

Builds (or reuses, with --workdir) a store of synthetic episodes made from the LoCoMo
turns, as ``recall_speed.py`` makes them (each turn's real MiniLM unit vectors plus a
little noise: nothing is embedded per episode). On two cores 100k took 18 s on SQLite,
after the LoCoMo turns' own embedding (about 25 s, the first time only), and the vector
graph, built in the background after the first search, 46 s (both kept in --workdir
and restored by the next run, in about 4 s; nothing is timed until the graph is ready).
The episodes: one workspace, 50 people with their names (``user_name``), 30 public
channels (75% of episodes), 8 private ones (10%) and each person's DM with Thoth (15%),
over a year. SQLite, or PostgreSQL started as the tests start it and filled by COPY
(``--engine postgresql``). One of the 50 (the bench person, about 2% of the episodes
said) is given ``--facts`` identity facts, ``--notes`` memory notes (some kept, some
rejected) and ``--tokens`` MCP tokens.

The console is served on 127.0.0.1 as `thoth console` serves it (uvicorn, in its own
thread), and whole requests are timed from a client, signed in as the operator (the
one-time link) and as the bench person, a member (a session cookie signed as a Slack
sign-in signs it, Slack saying they are in two of the private channels): the episode
browse with no words (the first page, and the pages past ``--depth`` reached by following
each page's Older link), a channel's newest, the episode search (LoCoMo questions; a
person's name and a word), an episode's page, the person's whole page (facts, notes,
what they said, tokens), their "forget everything" confirmation (which counts what would
go), the overview and the notes page. Each route is asked 10 times untimed first (the
deep browse: the first ``--depth`` pages), then ``--requests`` times. Prints p50 and p95
in ms beside the target (p95 <= 200 ms at 100k episodes for browse, search and the
person's page), and the first page's weight.

Report with the figures whether the machine was quiet (``uptime``'s load average before
and after the run): a busy neighbour slows the query's embedding, and so the search, by
30% or more.

    python bench/console_pages.py --episodes 100000 --requests 200
    python bench/console_pages.py --engine postgresql --episodes 1000000 --workdir DIR
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import html
import json
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from base64 import b64encode
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urljoin

import httpx
import itsdangerous
import numpy as np
import psycopg
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.routing import Mount

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from recall_speed import (  # noqa: E402
    BATCH,
    PostgresDatabases,
    TurnUnits,
    copy_into_postgres,
    load_locomo,
    open_database,
    percentile,
    rare_term,
    turn_units,
)

from bridge.access.signed_in import SignedInPerson  # noqa: E402
from bridge.app import Thoth, build  # noqa: E402
from bridge.console import csrf  # noqa: E402
from bridge.console.dependencies import console_dependencies  # noqa: E402
from bridge.console.serving import PATH, sign_in_link  # noqa: E402
from bridge.console.sign_in import OneTimeLogin  # noqa: E402
from bridge.console.web_app import SESSION_COOKIE, console_app  # noqa: E402
from bridge.settings import Settings  # noqa: E402
from bridge.slack_api.memberships import SlackMemberships  # noqa: E402
from bridge.web.server import WebServer  # noqa: E402
from layers.episodic.episode import Episode  # noqa: E402
from layers.episodic.memory import EpisodicMemory  # noqa: E402
from layers.episodic.store import StoredChunks  # noqa: E402
from layers.identity.local.store import ObservationStore  # noqa: E402
from layers.identity.protocol import Person  # noqa: E402
from layers.shared.embedding.embedder import MiniLMEmbedder  # noqa: E402
from layers.shared.places import Place  # noqa: E402
from layers.shared.places.memberships import Memberships  # noqa: E402

WARM_UP = 10
# The vector graph of a fresh home is built in the background after the first search.
GRAPH_WAIT_S = 1_800
TARGET_MS = 200.0
SECRET = "bench-console-secret-" + "s" * 32
TEAM = "T0BENCH01"
NAMES = (
    "Dana", "Ari", "Erin", "Sam", "Noor", "Kai", "Lena", "Omar", "Priya", "Tomas", "Yuki",
    "Zara", "Ben", "Chloe", "Diego", "Ema", "Farid", "Gita", "Hugo", "Ines", "Jonas", "Kemi",
    "Liam", "Maya", "Nils", "Olga", "Pablo", "Quinn", "Rosa", "Sanjay", "Tara", "Uma",
    "Victor", "Wen", "Ximena", "Yara", "Zeke", "Amir", "Bea", "Cato", "Dora", "Eli", "Fay",
    "Gus", "Hana", "Ivo", "Jade", "Kofi", "Lior", "Mei"
)
PEOPLE = [(f"U{number:08d}", name) for number, name in enumerate(NAMES)]
PUBLIC = [f"C{number:08d}" for number in range(30)]
PRIVATE = [f"G{number:08d}" for number in range(8)]
# The bench person: their page, their forget page, and the member's view.
USER, USER_NAME = PEOPLE[7]
THEIR_PRIVATE = frozenset(PRIVATE[:2])


def console_batches(size: int, turns: list[str], units: TurnUnits,
                    seed: int = 11) -> Iterator[list[StoredChunks]]:
    """``size`` episodes, ``BATCH`` at a time, with their turn's unit vectors (as
    ``recall_speed.synthetic_batches``), spread over people, channels and a year."""
    vocabulary = sorted({word for text in turns for word in text.split()})
    rng = np.random.default_rng(seed)
    picker = random.Random(seed)
    now = time.time()
    for start in range(0, size, BATCH):
        count = min(BATCH, size - start)
        which = rng.integers(0, len(turns), count)
        items = []
        for offset in range(count):
            first, end = units.offsets[which[offset]], units.offsets[which[offset] + 1]
            noise = rng.normal(0, 0.04, (end - first, units.vectors.shape[1]))
            vectors = (units.vectors[first:end] + noise).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            extra = " ".join([*picker.choices(vocabulary, k=4), rare_term(rng), rare_term(rng)])
            user, name = picker.choice(PEOPLE)
            kind = picker.random()
            if kind < 0.75:
                channel, channel_type = picker.choice(PUBLIC), "public"
            elif kind < 0.85:
                channel, channel_type = picker.choice(PRIVATE), "private"
            else:
                channel, channel_type = "D" + user[1:], "im"
            episode = Episode(
                id=f"syn-{start + offset}", user_text=f"{turns[which[offset]]} {extra}",
                summary="", created_at=now - picker.uniform(0, 365) * 86_400, team=TEAM,
                channel=channel, channel_type=channel_type,  # type: ignore[arg-type]
                user=user, user_name=name)
            items.append(StoredChunks(episode, vectors))
        yield items


def build_store(engine: str, target: str, size: int, cache: Path) -> float:
    """Fill an empty database with ``size`` episodes; returns the seconds it took."""
    embedder = MiniLMEmbedder()
    started = time.perf_counter()
    turns, _ = load_locomo()
    batches = console_batches(size, turns, turn_units(embedder, turns, cache))
    db = open_database(engine, target)  # the migrations make the tables
    if engine == "postgresql":
        db.close()
        copy_into_postgres(target, batches, embedder.model_id, size)
        with psycopg.connect(target, autocommit=True) as conn:
            conn.execute("VACUUM (ANALYZE) episodes")
            conn.execute("VACUUM (ANALYZE) episode_vectors")
    else:
        store = EpisodicMemory(db, embedder).store
        for items in batches:
            store.insert(items)
        db.close()
    return time.perf_counter() - started


def stored(args: argparse.Namespace, workdir: Path) -> tuple[str, float]:
    """The store of ``args.episodes`` (a SQLite file's path, or a PostgreSQL URL), built
    the first time, and the seconds building took (0: it was there)."""
    cache = workdir / "locomo-turn-units.npz"
    if args.engine == "sqlite":
        path = workdir / f"console-{args.episodes}.db"
        if path.exists():
            return str(path), 0.0
        print(f"building a store of {args.episodes:,} episodes…", file=sys.stderr)
        building = path.with_suffix(".building")
        building.unlink(missing_ok=True)
        seconds = build_store("sqlite", str(building), args.episodes, cache)
        building.rename(path)
        return str(path), seconds
    postgres = PostgresDatabases(workdir / "console-postgres", args.pg_shared_buffers)
    url = postgres.existing(args.episodes)
    if url is not None:
        return url, 0.0
    url = postgres.fresh()
    print(f"building a PostgreSQL store of {args.episodes:,} episodes…", file=sys.stderr)
    seconds = build_store("postgresql", url, args.episodes, cache)
    postgres.built(args.episodes, url)
    return url, seconds


def about_the_person(app: Thoth, args: argparse.Namespace) -> None:
    """Facts, notes in several states and MCP tokens for the bench person."""
    person = Person(TEAM, USER)
    observations = ObservationStore(app.db)
    vector = np.ones(384, np.float32) / np.sqrt(384)
    for n in range(args.facts):
        observations.add(person, f"{USER_NAME} likes topic {n} and works on project {n % 7}",
                         None, vector, source="message", session_id=f"bench-session-{n % 9}",
                         now=1_700_000_000.0 + n)
    for n in range(args.notes):
        place = Place(TEAM, PUBLIC[n % len(PUBLIC)], "public")
        note = app.notes.propose(f"{USER_NAME}'s team ships release {n} on Thursdays", place,
                                 user=USER, author_name=USER_NAME, source="🧠 reaction",
                                 session_id=None, speakers=[USER])
        if n % 3:
            app.notes.decide(note.id, keep=n % 3 == 1, by="operator")
    for n in range(args.tokens):
        app.mcp_tokens.make(TEAM, USER, label=f"laptop {n}", made_by=f"slack:{USER}",
                            origin="bench")


class InTwoPrivateChannels(SlackMemberships):
    """What Slack would say of the bench person: two of the eight private channels."""

    def __init__(self) -> None:
        super().__init__(None)

    async def of(self, team: str, user: str) -> Memberships:
        await asyncio.sleep(0)
        return Memberships(private=THEIR_PRIVATE if user == USER else frozenset())


def member_cookie() -> str:
    """The bench person's session, signed as the console signs a Slack sign-in's."""
    member = SignedInPerson(f"slack:{USER}", USER_NAME, sees_everything=False,
                            founder=False, team=TEAM, user=USER)
    session = {**member.as_session(), csrf.SESSION_KEY: "bench-form-token"}
    return itsdangerous.TimestampSigner(SECRET).sign(
        b64encode(json.dumps(session).encode())).decode()


def timed(client: httpx.Client, url: str, query: dict[str, str] | None = None
          ) -> tuple[float, httpx.Response]:
    started = time.perf_counter()
    response = client.get(url, params=query)
    elapsed = (time.perf_counter() - started) * 1000
    response.raise_for_status()
    return elapsed, response


def ms(client: httpx.Client, url: str, query: dict[str, str] | None = None) -> float:
    return timed(client, url, query)[0]


def repeated(rounds: int, ask: Callable[[int], float]) -> list[float]:
    """``rounds`` timings, the first ``WARM_UP`` of them not counted."""
    return [ask(n) for n in range(rounds + WARM_UP)][WARM_UP:]


def older_link(response: httpx.Response) -> str | None:
    found = re.search(r'<a href="([^"]*)" id="older"', response.text)
    return None if found is None else urljoin(str(response.url), html.unescape(found.group(1)))


def deep_pages(client: httpx.Client, url: str, depth: int, rounds: int) -> list[float]:
    """Following Older from ``url``: the times of the pages past the first ``depth``."""
    times: list[float] = []
    next_url: str | None = url
    while len(times) < depth + rounds:
        elapsed, response = timed(client, next_url or url)
        times.append(elapsed)
        next_url = older_link(response)
        if next_url is None:  # the last page: start again from the first
            print(f"the Older links ended after {len(times)} pages", file=sys.stderr)
            next_url = url
    return times[depth:]


def operator_pages(client: httpx.Client, base: str, args: argparse.Namespace,
                   questions: list[str], words: list[str]) -> dict[str, list[float]]:
    rounds, team = args.requests, {"team": TEAM, "user": USER}
    return {
        "browse, newest (first page)": repeated(rounds, lambda n: ms(client, f"{base}/episodes")),
        f"browse, past {args.depth} Older pages": deep_pages(
            client, f"{base}/episodes", args.depth, rounds),
        "browse, a channel's newest": repeated(rounds, lambda n: ms(
            client, f"{base}/episodes", {"channel": PUBLIC[n % len(PUBLIC)]})),
        "search, a LoCoMo question": repeated(rounds, lambda n: ms(
            client, f"{base}/episodes", {"q": questions[n]})),
        "search, a name and a word": repeated(rounds, lambda n: ms(
            client, f"{base}/episodes", {"q": f"{NAMES[n % len(NAMES)]} {words[n]}"})),
        "an episode's page": repeated(rounds, lambda n: ms(
            client, f"{base}/episodes/syn-{n * 7919 % args.episodes}")),
        "person's page": repeated(rounds, lambda n: ms(client, f"{base}/people", team)),
        "person's forget confirmation": repeated(rounds, lambda n: ms(
            client, f"{base}/people/{TEAM}/{USER}/forget")),
        "overview (counts, spend)": repeated(rounds, lambda n: ms(client, f"{base}/")),
        "notes": repeated(rounds, lambda n: ms(client, f"{base}/notes")),
    }


def member_pages(client: httpx.Client, base: str, args: argparse.Namespace,
                 questions: list[str]) -> dict[str, list[float]]:
    rounds = args.requests
    return {
        "browse, newest (first page)": repeated(rounds, lambda n: ms(client, f"{base}/episodes")),
        f"browse, past {args.depth} Older pages": deep_pages(
            client, f"{base}/episodes", args.depth, rounds),
        "search, a LoCoMo question": repeated(rounds, lambda n: ms(
            client, f"{base}/episodes", {"q": questions[-1 - n]})),
        "person's page (their own)": repeated(rounds, lambda n: ms(client, f"{base}/people")),
    }


TARGETED = ("browse", "search", "person's page")


def print_table(title: str, pages: dict[str, list[float]]) -> None:
    print(f"\n{title}")
    print(f"{'page':<38} {'p50':>8} {'p95':>8}  target p95")
    for label, values in pages.items():
        p95 = percentile(values, 0.95)
        target = "-"
        if label.startswith(TARGETED):
            target = f"<= {TARGET_MS:.0f} ({'met' if p95 <= TARGET_MS else 'NOT met'})"
        print(f"{label:<38} {statistics.median(values):>8.1f} {p95:>8.1f}  {target}")


def serve_and_time(settings: Settings, args: argparse.Namespace
                   ) -> tuple[dict[str, list[float]], dict[str, list[float]], str]:
    app = build(settings)
    about_the_person(app, args)
    login = OneTimeLogin()
    parts = dataclasses.replace(console_dependencies(app), memberships=InTwoPrivateChannels())
    server = WebServer(Starlette(routes=[Mount(PATH, console_app(
        parts, secret=SECRET, login=login))]), host="127.0.0.1", port=0)
    server.start()
    try:
        link = sign_in_link("127.0.0.1", server.port, login)
        base = link.split("/login/")[0]
        _, questions = load_locomo()
        picker = random.Random(7)
        asked = picker.sample(questions, min(len(questions), 2 * args.requests + WARM_UP + 1))
        while len(asked) < 2 * args.requests + WARM_UP + 1:
            asked += asked
        turns, _ = load_locomo()
        words = picker.choices(sorted({w for t in turns for w in t.split() if len(w) > 4}),
                               k=args.requests + WARM_UP)
        with httpx.Client(follow_redirects=True, timeout=120) as client:
            first_ms, first = timed(client, link)
            css_ms, css = timed(client, f"{base}/static/console.css")
            # Nothing is timed while the vector graph is restored or built: it takes a core.
            started = time.perf_counter()
            ms(client, f"{base}/episodes", {"q": asked[-1]})
            app.episodic.vector_graph_ready(GRAPH_WAIT_S)
            print(f"first search and the vector graph ready: {time.perf_counter() - started:.1f}"
                  " s", file=sys.stderr)
            operator = operator_pages(client, base, args, asked, words)
        with httpx.Client(follow_redirects=True, timeout=120,
                          cookies={SESSION_COOKIE: member_cookie()}) as client:
            member = member_pages(client, base, args, asked)
    finally:
        server.stop()
        app.close()
    weight = (f"first page: {len(first.content) / 1024:.1f} KB of HTML +"
              f" {len(css.content) / 1024:.1f} KB of CSS ({first_ms + css_ms:.0f} ms with"
              " sign-in); no script, no other request")
    return operator, member, weight


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=200,
                        help="timed requests a route (after 10 untimed)")
    parser.add_argument("--depth", type=int, default=50,
                        help="Older pages followed before the deep browse is timed")
    parser.add_argument("--facts", type=int, default=200,
                        help="identity facts about the person whose page is timed")
    parser.add_argument("--notes", type=int, default=30, help="memory notes they proposed")
    parser.add_argument("--tokens", type=int, default=3, help="their MCP tokens")
    parser.add_argument("--workdir", type=Path,
                        help="keep the built store here, reused by the next run")
    parser.add_argument("--pg-shared-buffers", default="6GB")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.workdir or Path(scratch) / "stores"
        workdir.mkdir(parents=True, exist_ok=True)
        target, build_seconds = stored(args, workdir)
        home = Path(scratch) / "home"
        home.mkdir()
        settings = Settings(_env_file=None, thoth_home=home)  # type: ignore[call-arg]
        graph, served_graph = Path(f"{target}.hnsw"), home / "thoth.db.hnsw"
        if args.engine == "sqlite":
            shutil.copy(target, home / "thoth.db")
            if graph.is_dir():  # built by an earlier run: restored, not built again
                shutil.copytree(graph, served_graph)
        else:
            settings = settings.model_copy(update={"database_url": SecretStr(target)})
            if build_seconds == 0:  # the person's facts, notes and tokens are there already
                args.facts = args.notes = args.tokens = 0
        operator, member, weight = serve_and_time(settings, args)
        if args.engine == "sqlite" and served_graph.is_dir() and not graph.is_dir():
            shutil.copytree(served_graph, graph)
    engine = "SQLite" if args.engine == "sqlite" else "PostgreSQL"
    built = f"store built in {build_seconds:.0f} s" if build_seconds else "store reused"
    print(f"console pages, {args.episodes:,} episodes on {engine} ({built}),"
          f" {args.requests} requests each, whole HTTP requests from a client on"
          " 127.0.0.1 (ms)")
    print_table("the operator's view", operator)
    print_table(f"a member's view ({USER_NAME}: public channels, their DMs, 2 of 8 private"
                " channels)", member)
    print(weight)


if __name__ == "__main__":
    main()
