"""A turn with one call to one of the team's MCP servers over stdio (issue 51): what Thoth
adds beyond the server's own time, and the first turn after start (the tool listing).

The app is built as the integration tests build it (``tests/integration/
test_team_tools.py``): an ``mcp.json`` naming the server, the real ``anthropic`` SDK
against the loopback Messages API (``tests/servers/anthropic_api.py``) answering at
once, the hashing embedder (no model load), turns in one event loop.

Servers: ``timed``, an MCPServer of the Python SDK (mcp 2.x) started with this
interpreter, one read-only tool that sleeps ``--server-ms`` and answers its own start
and end (``time.monotonic()``, one clock for every process on Linux), so its own time is
subtracted exactly; and the reference ``mcp-server-everything`` (npm, ``npm ci --prefix
tests/mcp_servers``) and its ``echo``, whose own time is taken as 0 (an echo: well
under a millisecond), when it is installed.

Measured, p50 / p95 in ms over ``--turns`` turns of each kind, interleaved, each in a
session of its own, background writes drained between turns (not timed):

- tool round: from the loopback's last byte of the tool_use reply sent to the next
  request (with the tool's result) received. The loopback's own reply time is outside
  it (shown beside it: request received -> last byte sent);
- overhead beyond the server: the tool round minus the server's own time (target p50
  <= 30 ms), split into the MCP call as Thoth's connection sees it (``ServerConnection.
  call``, wrapped here) minus the server's own time, and the rest (the pipeline: the
  step shown, the audit write, the result quoted, the next request built and sent);
- turn wall time, ``pipeline.handle`` start to return, with the tool call and without
  (the model answers at once): their difference is what the tool call adds, a second
  model request included;
- floor: the same tool called through the SDK's ``Client`` alone, minus the server's
  own time.

The first turn after start: a fresh app (no connection yet), ``pipeline.handle`` start
-> first model request received (it waits for the tool listing: the server started,
``initialize``, ``tools/list``); the same with no mcp.json; and the floor, the SDK's
``Client`` alone: entered (process started, initialize) and ``list_tools`` answered.
p50 over ``--starts`` fresh apps, after one not counted (shown apart: it pays this
process's first use of the SDK's stdio client and the like; a fresh process's module
imports are in ``bench/cli_start.py``).

    python bench/team_tool_turn.py [--turns 50] [--starts 5] [--server-ms 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from mcp.client.client import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from bridge.app import Thoth, build  # noqa: E402
from bridge.pipeline.turn import Turn  # noqa: E402
from bridge.settings import Settings  # noqa: E402
from layers.shared.places import Place  # noqa: E402
from tests.fakes import HashingEmbedder, RecordingSink  # noqa: E402
from tests.servers import anthropic_api as api  # noqa: E402
from tests.servers.anthropic_api import FakeAnthropic, RecordedRequest, Reply  # noqa: E402

EVERYTHING = ROOT / "tests" / "mcp_servers" / "node_modules" / ".bin" / "mcp-server-everything"
PLACE = Place("T1", "C1", "public", None, "general")

# One read-only tool whose own time it tells: the bench subtracts it exactly.
TIMED_SERVER = '''
import sys
import time

from mcp.server.mcpserver import MCPServer

SLEEP_S = float(sys.argv[1]) / 1000 if len(sys.argv) > 1 else 0.0
server = MCPServer(name="timed")


@server.tool()
def lookup(key: str) -> str:
    """Look a key up (reads only)."""
    started = time.monotonic()
    if SLEEP_S:
        time.sleep(SLEEP_S)
    ended = time.monotonic()
    return f"value of {key}; own time {started!r} {ended!r}"


server.run()
'''
OWN_TIME = re.compile(r"own time ([0-9.e+-]+) ([0-9.e+-]+)")


@dataclass(frozen=True)
class Server:
    """A server as mcp.json names it, and one call of its tool."""

    name: str
    command: str
    args: list[str]
    tool: str
    arguments: dict[str, Any]
    tells_own_time: bool

    def entry(self) -> dict[str, Any]:
        return {"command": self.command, "args": self.args, "readOnly": [self.tool]}

    def transport(self) -> Any:
        """The server over stdio for the SDK's Client alone, its stderr dropped as Thoth
        logs it (the reference server says it started)."""
        return _Stdio(StdioServerParameters(command=self.command, args=self.args))


class _Stdio:
    def __init__(self, parameters: StdioServerParameters) -> None:
        self._errors = open(os.devnull, "w")  # noqa: SIM115 (closed on exit)
        self._context = stdio_client(parameters, errlog=self._errors)

    async def __aenter__(self) -> Any:
        return await self._context.__aenter__()

    async def __aexit__(self, *exc: Any) -> bool | None:
        try:
            return await self._context.__aexit__(*exc)
        finally:
            self._errors.close()


class TimedFake(FakeAnthropic):
    """The loopback Messages API, noting when each reply's last byte was sent."""

    def __init__(self) -> None:
        self.answered: dict[int, float] = {}  # id(request) -> monotonic
        super().__init__()

    def _handler_class(self) -> type[Any]:
        base: type[Any] = super()._handler_class()
        fake = self

        class Timed(base):  # type: ignore[misc,valid-type]
            def _answer(self, request: RecordedRequest, reply: Reply) -> None:
                super()._answer(request, reply)
                fake.answered[id(request)] = time.monotonic()

        return Timed

    def sent(self, request: RecordedRequest) -> float:
        return self.answered[id(request)]


@dataclass
class Figures:
    round_ms: list[float] = field(default_factory=list)
    own_ms: list[float] = field(default_factory=list)
    call_ms: list[float] = field(default_factory=list)
    reply_ms: list[float] = field(default_factory=list)
    tool_turn_ms: list[float] = field(default_factory=list)
    plain_turn_ms: list[float] = field(default_factory=list)
    bare_call_ms: list[float] = field(default_factory=list)

    @property
    def overhead_ms(self) -> list[float]:
        return [r - o for r, o in zip(self.round_ms, self.own_ms, strict=True)]

    @property
    def call_over_own_ms(self) -> list[float]:
        return [c - o for c, o in zip(self.call_ms, self.own_ms, strict=True)]

    @property
    def rest_ms(self) -> list[float]:
        return [r - c for r, c in zip(self.round_ms, self.call_ms, strict=True)]


@dataclass
class Starts:
    first_request_ms: list[float] = field(default_factory=list)
    no_tools_ms: list[float] = field(default_factory=list)
    bare_list_ms: list[float] = field(default_factory=list)
    cold_ms: float = 0.0


def _settings(home: Path, fake: FakeAnthropic, config: Path | None) -> Settings:
    home.mkdir(parents=True, exist_ok=True)
    return Settings(  # type: ignore[call-arg]
        _env_file=None, thoth_home=home, anthropic_api_key="sk-ant-bench-key",
        anthropic_base_url=fake.url, model_timeout_s=30,
        mcp_config=config or home / "no-mcp.json")


def _config(folder: Path, server: Server) -> Path:
    path = folder / f"mcp-{server.name}.json"
    path.write_text(json.dumps({"mcpServers": {server.name: server.entry()}}))
    return path


def _own_ms(request: RecordedRequest, server: Server) -> float:
    """The server's own time, as its tool result told it (0 for a server that does not)."""
    (result,) = request.body["messages"][-1]["content"]
    assert result["type"] == "tool_result" and not result.get("is_error"), result
    if not server.tells_own_time:
        return 0.0
    found = OWN_TIME.search(json.dumps(result["content"]))
    assert found is not None, result
    return (float(found.group(2)) - float(found.group(1))) * 1000


def _timing_calls(app: Thoth, server: Server, into: list[float]) -> None:
    """Note how long each of the server's calls takes as Thoth's connection sees it."""
    assert app.team_tools is not None
    connection = app.team_tools.servers[server.name]
    call: Callable[..., Awaitable[Any]] = connection.call

    async def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        try:
            return await call(*args, **kwargs)
        finally:
            into.append((time.monotonic() - started) * 1000)

    connection.call = timed  # type: ignore[method-assign]


async def _turn(app: Thoth, session: str) -> float:
    started = time.monotonic()
    outcome = await app.pipeline.handle(Turn(session, "look up the deploy key", PLACE,
                                             user="U1", user_name="Dana"), RecordingSink())
    took = (time.monotonic() - started) * 1000
    assert outcome.ok, outcome.reply
    await app.pipeline.drain(30)
    return took


async def turns(fake: TimedFake, folder: Path, server: Server, count: int,
                warm_up: int = 5) -> Figures:
    figures = Figures()
    app = build(_settings(folder / f"home-{server.name}", fake, _config(folder, server)),
                embedder=HashingEmbedder())
    calls: list[float] = []
    _timing_calls(app, server, calls)
    try:
        for number in range(warm_up + count):
            counted = number >= warm_up
            fake.push(api.text("No tool needed."))
            plain = await _turn(app, f"plain-{number}")
            before = len(fake.requests)
            fake.push(api.tool_use(f"{server.name}__{server.tool}", server.arguments),
                      api.text("Found it."))
            tool = await _turn(app, f"tool-{number}")
            asked, answered = fake.requests[before], fake.requests[before + 1]
            if not counted:
                continue
            figures.plain_turn_ms.append(plain)
            figures.tool_turn_ms.append(tool)
            figures.round_ms.append((answered.received_at - fake.sent(asked)) * 1000)
            figures.reply_ms.append((fake.sent(asked) - asked.received_at) * 1000)
            figures.own_ms.append(_own_ms(answered, server))
            figures.call_ms.append(calls[-1])
    finally:
        await app.aclose()
    figures.bare_call_ms = await _bare_calls(server, count, warm_up)
    return figures


async def _bare_calls(server: Server, count: int, warm_up: int) -> list[float]:
    """The call through the SDK's Client alone, minus the server's own time."""
    took: list[float] = []
    async with Client(server.transport()) as client:
        for number in range(warm_up + count):
            started = time.monotonic()
            result = await client.call_tool(server.tool, server.arguments)
            ended = time.monotonic()
            own = 0.0
            if server.tells_own_time:
                text = " ".join(getattr(block, "text", "") for block in result.content)
                found = OWN_TIME.search(text)
                assert found is not None, result
                own = float(found.group(2)) - float(found.group(1))
            if number >= warm_up:
                took.append((ended - started - own) * 1000)
    return took


async def _first_request(fake: TimedFake, home: Path, config: Path | None) -> float:
    """A fresh app's first turn: handle() start -> the first model request received."""
    app = build(_settings(home, fake, config), embedder=HashingEmbedder())
    try:
        before = len(fake.requests)
        fake.push(api.text("Hello."))
        started = time.monotonic()
        await app.pipeline.handle(Turn("first", "hello", PLACE, user="U1"), RecordingSink())
        return (fake.requests[before].received_at - started) * 1000
    finally:
        await app.aclose()


async def _bare_list(server: Server) -> float:
    started = time.monotonic()
    async with Client(server.transport()) as client:
        listed = await client.list_tools()
        took = (time.monotonic() - started) * 1000
    assert any(tool.name == server.tool for tool in listed.tools)
    return took


async def starts(fake: TimedFake, folder: Path, server: Server, count: int) -> Starts:
    found = Starts()
    config = _config(folder, server)
    for number in range(count + 1):
        with_tools = await _first_request(fake, folder / f"start-{server.name}-{number}", config)
        without = await _first_request(fake, folder / f"plain-{server.name}-{number}", None)
        bare = await _bare_list(server)
        if number == 0:
            found.cold_ms = with_tools
            continue
        found.first_request_ms.append(with_tools)
        found.no_tools_ms.append(without)
        found.bare_list_ms.append(bare)
    return found


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def row(label: str, values: list[float]) -> str:
    return (f"  {label:<52} {statistics.median(values):>8.2f} {percentile(values, 0.95):>8.2f}"
            f" {len(values):>5}")


def report(server: Server, figures: Figures, started: Starts, own_note: str) -> None:
    print(f"\n{server.name}: {' '.join([Path(server.command).name, *server.args])},"
          f" tool {server.tool} ({own_note})")
    print(f"  {'turn with one tool call (ms)':<52} {'p50':>8} {'p95':>8} {'n':>5}")
    print(row("tool round (reply sent -> next request received)", figures.round_ms))
    print(row("  server's own time (inside the tool)", figures.own_ms))
    print(row("overhead beyond the server (round - own)  [<= 30]", figures.overhead_ms))
    print(row("  MCP call as Thoth's connection sees it - own", figures.call_over_own_ms))
    print(row("  the rest: step, audit, quoting, next request", figures.rest_ms))
    print(row("floor: the call via the SDK Client alone - own", figures.bare_call_ms))
    print(row("loopback reply time (received -> last byte sent)", figures.reply_ms))
    print(row("turn wall time, no tool call", figures.plain_turn_ms))
    print(row("turn wall time, one tool call", figures.tool_turn_ms))
    added = statistics.median(figures.tool_turn_ms) - statistics.median(figures.plain_turn_ms)
    print(f"  {'  what the tool call adds (difference of p50s)':<52} {added:>8.2f}")
    print(f"  {'first turn after start (ms)':<52} {'p50':>8} {'max':>8} {'n':>5}")
    for label, values in (
        ("fresh app: handle() -> first model request", started.first_request_ms),
        ("  the same, no mcp.json", started.no_tools_ms),
        ("floor: SDK Client alone, start + initialize + list", started.bare_list_ms),
    ):
        print(f"  {label:<52} {statistics.median(values):>8.1f} {max(values):>8.1f}"
              f" {len(values):>5}")
    print(f"  {'(first app of the process, not counted)':<52} {started.cold_ms:>8.1f}")


async def run(args: argparse.Namespace, folder: Path) -> None:
    script = folder / "timed_server.py"
    script.write_text(TIMED_SERVER)
    servers = [(Server("timed", sys.executable, [str(script), f"{args.server_ms:g}"], "lookup",
                       {"key": "deploy"}, tells_own_time=True),
                f"sleeps {args.server_ms:g} ms; own time from its result")]
    if EVERYTHING.exists():
        servers.append((Server("everything", str(EVERYTHING), ["stdio"], "echo",
                               {"message": "deploy"}, tells_own_time=False),
                        "own time taken as 0"))
    else:
        print(f"(skipped the reference server: {EVERYTHING} is not installed;"
              " npm ci --prefix tests/mcp_servers)")
    with TimedFake() as fake:
        for server, note in servers:
            figures = await turns(fake, folder, server, args.turns)
            started = await starts(fake, folder, server, args.starts)
            report(server, figures, started, note)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--server-ms", type=float, default=0.0,
                        help="how long the timed server's tool sleeps")
    args = parser.parse_args()
    for name in list(os.environ):  # nothing of a real deployment: the loopback only
        if name.startswith(("SLACK_", "ANTHROPIC_", "HONCHO_", "THOTH_", "DATABASE_URL",
                            "MCP_")):
            del os.environ[name]
    os.environ["HF_HUB_OFFLINE"] = "1"
    load = os.getloadavg()
    print("A turn with one call to a stdio MCP server: Thoth's overhead, and the first turn")
    print(f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
          " (1, 5, 15 min) at the start")
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(run(args, Path(folder)))
    load = os.getloadavg()
    print(f"\nload average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
