"""What a person's own account costs per call (issue 52): the same remote MCP server's
tool called with the asker's token (``"auth": "oauth"``: the token read from the
database and opened from its seal on every HTTP request, ``bridge/connections/bearer.py``)
and with the operator's key in ``headers`` (the same token, written in mcp.json).

The server is the tests' loopback one (``tests/servers/oauth_mcp.py``: the MCP SDK's
streamable HTTP and auth routes); the person connects once over plain HTTP (its consent
walked as the tests walk it). Calls go through ``TeamTools.run``, as an allowed call in a
turn does; the connections are opened before the timing (not timed). Printed: p50 / p95
in ms over ``--calls`` calls of each kind, interleaved, and their difference.

    python bench/connection_calls.py [--calls 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from pydantic import SecretStr  # noqa: E402

from bridge.app import build  # noqa: E402
from bridge.settings import Settings  # noqa: E402
from layers.identity.protocol import Person  # noqa: E402
from layers.shared.token_cipher import TokenCipher  # noqa: E402
from tests.fakes import HashingEmbedder  # noqa: E402
from tests.integration.test_connect_in_slack import _connected_without_a_browser  # noqa: E402
from tests.servers.oauth_mcp import OAuthMcpServer  # noqa: E402

DANA = Person("T1", "U1", "dana")


def _ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"p50 {statistics.median(ordered) * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms"


async def _measure(calls: int, server: OAuthMcpServer, home: Path) -> None:
    key = TokenCipher.new_key()
    settings = Settings(_env_file=None, thoth_home=home,  # type: ignore[call-arg]
                        console_url="https://thoth.example", slack_token_keys=SecretStr(key))
    config = home / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "tracker": {"type": "http", "url": server.mcp_url, "auth": "oauth"}}}))
    app = build(settings.model_copy(update={"mcp_config": config}), embedder=HashingEmbedder())
    assert app.team_tools is not None and app.team_tools.connector is not None
    await _connected_without_a_browser(app.team_tools.connector, "T1", "U1")
    token = await app.team_tools.connector.access_token("T1", "U1", "tracker")
    config.write_text(json.dumps({"mcpServers": {
        "tracker": {"type": "http", "url": server.mcp_url, "auth": "oauth"},
        "operator": {"type": "http", "url": server.mcp_url,
                     "headers": {"Authorization": f"Bearer {token}"}}}}))
    app.close()
    app = build(settings.model_copy(update={"mcp_config": config}), embedder=HashingEmbedder())
    tools = app.team_tools
    assert tools is not None
    timed: dict[str, list[float]] = {"tracker": [], "operator": []}
    for round_ in range(calls + 5):
        for name in ("tracker", "operator"):
            started = time.perf_counter()
            await tools.run(name, "whoami", {}, actor="slack:U1", how="bench", person=DANA)
            if round_ >= 5:  # the first ones connect
                timed[name].append(time.perf_counter() - started)
    await tools.aclose()
    app.close()
    own, operator = timed["tracker"], timed["operator"]
    print(f"calls: {calls} of each kind, interleaved")
    print(f"with the person's own account: {_ms(own)}")
    print(f"with the operator's key:       {_ms(operator)}")
    print(f"difference of the medians:     "
          f"{(statistics.median(own) - statistics.median(operator)) * 1000:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    with OAuthMcpServer() as server, tempfile.TemporaryDirectory() as home:
        server.signed_in_as = "alice"
        asyncio.run(_measure(args.calls, server, Path(home)))


if __name__ == "__main__":
    main()
