"""`recall` over MCP against the same recall in a warm process, on a store of many episodes.

Copies (or builds, with --workdir kept) the SQLite store of synthetic episodes that
``recall_speed.py`` makes, with its vector graph, into a Thoth home, then times the same
LoCoMo questions three ways, interleaved (each question each way, in an order that turns
with the question, so a drift of the machine falls on all three alike), after a warm-up:

- warm: ``episodic.recall`` in this process, what `thoth recall` and a Slack turn call
  once the process is up (the query's embedding included, as MCP's recall has it);
- stdio: `thoth mcp` as a client starts it, each ``call_tool("recall")`` a round trip
  through the SDK's client;
- HTTP: `thoth console` (which serves /mcp as `thoth serve` does) with a person's
  token, each call a streamable-HTTP round trip.

Printed: p50 and p95 in ms, and each way's p50 over the warm one's (target issue 34:
within 5 ms).

    python bench/mcp_recall.py [--episodes 100000] [--calls 200] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path

import httpx2
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from recall_speed import TEAM, load_locomo, percentile, sqlite_store  # noqa: E402

from bridge.app import build  # noqa: E402
from bridge.cli.main import main as thoth  # noqa: E402
from bridge.settings import Settings  # noqa: E402
from layers.shared.places import Viewer  # noqa: E402

WARM_UP = 20
K = 5
ASKER = "UBENCH"
GRAPH_WAIT_S = 600.0
GRAPH_SETTLE_S = 5.0


Way = Callable[[str], Awaitable[None]]


async def interleaved(ways: dict[str, Way], questions: list[str]) -> dict[str, list[float]]:
    """Each question asked each way, in an order that turns with the question, so a
    drift of the machine falls on every way alike."""
    for question in questions[:WARM_UP]:
        for ask in ways.values():
            await ask(question)
    # Each server restores its vector graph in the background after its first search.
    await asyncio.sleep(GRAPH_SETTLE_S)
    timings: dict[str, list[float]] = {name: [] for name in ways}
    names = list(ways)
    for number, question in enumerate(questions[WARM_UP:]):
        turn = number % len(names)
        for name in names[turn:] + names[:turn]:
            started = time.perf_counter()
            await ways[name](question)
            timings[name].append((time.perf_counter() - started) * 1000)
    return timings


def mcp_recall(session: ClientSession) -> Way:
    async def ask(question: str) -> None:
        result = await session.call_tool("recall", {"query": question, "k": K})
        if result.is_error:
            raise SystemExit(f"recall over MCP failed: {result.content}")

    return ask


async def measure(home: Path, env: dict[str, str], mcp_url: str, token: str,
                  questions: list[str]) -> dict[str, list[float]]:
    app = build(Settings(_env_file=None, thoth_home=home))  # type: ignore[call-arg]
    # What the MCP asker reads: their DMs and the workspace's public channels.
    viewer = Viewer(TEAM, "mcp", "im", ASKER)

    async def warm(question: str) -> None:
        # On this thread, as `thoth recall` calls it: nothing else runs meanwhile.
        app.episodic.recall(question, viewer, k=K)

    stdio = StdioServerParameters(command=sys.executable, env=env, args=[
        "-m", "bridge", "mcp", "--team", TEAM, "--user", ASKER])
    try:
        async with AsyncExitStack() as stack:
            read, write = await stack.enter_async_context(stdio_client(stdio))
            over_stdio = await stack.enter_async_context(ClientSession(read, write))
            http = await stack.enter_async_context(httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {token}"}, timeout=60))
            read, write = await stack.enter_async_context(
                streamable_http_client(mcp_url, http_client=http))
            over_http = await stack.enter_async_context(ClientSession(read, write))
            for session in (over_stdio, over_http):
                await session.initialize()
            await warm(questions[0])
            app.episodic.vector_graph_ready(GRAPH_WAIT_S)
            return await interleaved({
                "warm process (episodic.recall)": warm,
                "MCP over stdio (thoth mcp)": mcp_recall(over_stdio),
                "MCP over HTTP (/mcp, a token)": mcp_recall(over_http),
            }, questions)
    finally:
        app.close()


def console_mcp_url(console: subprocess.Popen[str]) -> str:
    """Where the `thoth console` just started serves /mcp."""
    assert console.stdout is not None
    found = re.search(r"(http://\S+)/console/login/", console.stdout.readline())
    if found is None:
        raise SystemExit("thoth console did not start")
    return found.group(1) + "/mcp"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--workdir", type=Path, help="keep the built store here (reused)")
    args = parser.parse_args()
    _, all_questions = load_locomo()
    questions = random.Random(11).sample(all_questions, args.calls + WARM_UP)
    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.workdir or Path(scratch) / "stores"
        workdir.mkdir(parents=True, exist_ok=True)
        home = Path(scratch) / "home"
        home.mkdir()
        store = sqlite_store(workdir, args.episodes)
        shutil.copy(store, home / "thoth.db")
        graph = store.with_name(store.name + ".hnsw")
        if graph.is_dir():  # else the first process builds it, and the others restore it
            shutil.copytree(graph, home / "thoth.db.hnsw")
        env = {name: value for name, value in os.environ.items()
               if not name.startswith(("SLACK_", "ANTHROPIC_", "HONCHO_"))}
        env.update(THOTH_HOME=str(home), HF_HUB_OFFLINE="1", HONCHO_DISABLED="1")
        os.environ.update(THOTH_HOME=str(home), HONCHO_DISABLED="1")
        made = io.StringIO()
        if thoth(["tokens", "make", "--team", TEAM, "--user", ASKER, "--label", "bench"],
                 stdout=made, stderr=made) != 0:
            raise SystemExit(made.getvalue())
        token = made.getvalue().splitlines()[1]
        console = subprocess.Popen(
            [sys.executable, "-m", "bridge", "console", "--port", "0"], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            figures = asyncio.run(measure(home, env, console_mcp_url(console), token,
                                          questions))
        finally:
            console.terminate()
            console.wait(timeout=30)
    warm = statistics.median(figures["warm process (episodic.recall)"])
    print(f"recall over MCP, {args.episodes:,} episodes on SQLite, {args.calls} calls each"
          f" way, interleaved, after {WARM_UP} to warm up, k={K}, the query's embedding"
          " included (ms)")
    print(f"{'way':<34} {'p50':>8} {'p95':>8} {'p50 - warm':>11}")
    for way, timings in figures.items():
        p50 = statistics.median(timings)
        print(f"{way:<34} {p50:>8.2f} {percentile(timings, 0.95):>8.2f} {p50 - warm:>+11.2f}")
    print("target (issue 34): MCP's p50 within 5 ms of the warm process's")


if __name__ == "__main__":
    main()
