"""`thoth mcp` started as Claude Code starts it: a fresh process, driven by the MCP SDK's
own stdio client. Printed: the median and the slowest, over ``--runs`` runs, of the time
from starting the process to the ``initialize`` answer, to the tool list (which waits
for the memory to open: bridge/mcp/opening.py), and to the first recall's answer (which
loads the embedding model), asked in that order as Claude Code asks them. Beside them,
the floor: an MCP server of the SDK's with one tool and nothing of Thoth's. Say whether
the machine was quiet.

    python bench/mcp_start.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

EPISODES = [
    ("e1", "The staging database lives on db-staging-2, port 5433"),
    ("e2", "Deploys go out on Tuesdays after the standup"),
    ("e3", "The launch codename is Bluebird"),
]


def _home(folder: Path) -> Path:
    """A home with a few episodes in the terminal user's local workspace."""
    home = folder / "thoth-home"
    lines = [{"id": episode_id, "user_text": text, "summary": "", "channel": "terminal",
              "channel_type": "im", "created_at": "2026-11-20T10:00:00+00:00"}
             for episode_id, text in EPISODES]
    episodes = folder / "episodes.jsonl"
    episodes.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    subprocess.run([sys.executable, "-m", "bridge", "episodes", "import", str(episodes)],
                   env=_env(home), cwd=folder, check=True, capture_output=True)
    return home


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "THOTH_HOME": str(home), "HF_HUB_OFFLINE": "1"}


# The floor: the SDK's own server, one tool, nothing of Thoth's imported.
BARE_SERVER = """
from mcp.server.mcpserver import MCPServer
server = MCPServer(name="bare")
@server.tool()
def echo(text: str) -> str:
    return text
server.run()
"""


async def _one_run(home: Path, args: list[str]) -> tuple[float, float, float]:
    params = StdioServerParameters(command=sys.executable, args=args,
                                   env=_env(home), cwd=str(home.parent))
    started = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        initialized = time.perf_counter() - started
        listed = await session.list_tools()
        tools_listed = time.perf_counter() - started
        if not any(tool.name == "recall" for tool in listed.tools):
            return initialized, tools_listed, tools_listed  # the bare server has none
        result = await session.call_tool("recall", {"query": "where is the staging database"})
        recalled = time.perf_counter() - started
        if result.is_error:
            raise SystemExit(f"recall failed: {result.content}")
    return initialized, tools_listed, recalled


def _row(name: str, times: list[float]) -> str:
    return f"{name:<28} median {statistics.median(times):6.3f} s   slowest {max(times):6.3f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        home = _home(Path(folder))
        runs = [anyio.run(_one_run, home, ["-m", "bridge", "mcp"]) for _ in range(args.runs)]
        bare = [anyio.run(_one_run, home, ["-c", BARE_SERVER]) for _ in range(args.runs)]
    print(f"thoth mcp over stdio, {args.runs} fresh processes:")
    print(_row("initialize answered", [initialized for initialized, _, _ in runs]))
    print(_row("tools listed", [listed for _, listed, _ in runs]))
    print(_row("first recall answered", [recalled for _, _, recalled in runs]))
    print(_row("floor: the SDK's bare server", [initialized for initialized, _, _ in bare]))


if __name__ == "__main__":
    main()
