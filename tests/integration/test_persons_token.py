"""A person's token goes on the requests to their server's own address, and on no other
(bridge/connections/bearer.py): two loopback servers see what arrives."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

import httpx2
import pytest

from bridge.connections.bearer import NotConnected, PersonsToken
from bridge.connections.oauth_client import Connector, RemoteServer
from bridge.connections.store import ConnectionStore, Start, Tokens
from bridge.connections.tables import SCHEMA
from layers.shared.offloaded import Offloaded
from layers.shared.storage.database import Database
from layers.shared.storage.migrations import Schema
from layers.shared.token_cipher import TokenCipher
from tests.servers.loopback import LoopbackHandler, LoopbackServer

TOKEN = "at-only-for-its-server"


class Recording(LoopbackServer):
    def __init__(self) -> None:
        seen: list[str | None] = []
        self.seen = seen

        class Handler(LoopbackHandler):
            def do_GET(self) -> None:
                seen.append(self.headers.get("Authorization"))
                self.send_body(200, b"ok", "text/plain")

        self._serve(Handler)


def test_the_token_goes_only_to_its_own_server(
    open_database: Callable[[Sequence[Schema]], Database],
) -> None:
    store = ConnectionStore(open_database([SCHEMA]), TokenCipher([TokenCipher.new_key()]))
    with Recording() as own, Recording() as other:
        start = Start("s", "T1", "U1", "tracker", None, "v" * 43, "c", own.url, own.url,
                      own.url + "/token", None, "https://thoth.example/cb", time.time() + 60)
        store.connect(start, Tokens(TOKEN, None, None, time.time() + 3600))
        connector = Connector({"tracker": RemoteServer("tracker", own.url + "/mcp")},
                              Offloaded(store), "https://thoth.example/cb")

        async def requests() -> None:
            auth = PersonsToken(connector, "T1", "U1", "tracker", own.url + "/mcp")
            async with httpx2.AsyncClient(auth=auth) as http:
                await http.get(own.url + "/mcp")
                await http.get(other.url + "/elsewhere")
            stranger = PersonsToken(connector, "T1", "U2", "tracker", own.url + "/mcp")
            async with httpx2.AsyncClient(auth=stranger) as http:
                with pytest.raises(NotConnected):
                    await http.get(own.url + "/mcp")

        asyncio.run(requests())
    assert own.seen == [f"Bearer {TOKEN}"]
    assert other.seen == [None]
