"""A person's token on the requests to one remote server, and nowhere else.

Each request is given the person's current token (renewed if it is about to lapse); a
request to any other address than the server's own goes without it (a redirect, a link
the server names). A 401 renews once and tries again; a second 401 means the grant is
gone, and the person must connect again.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator
from urllib.parse import urlsplit

import httpx2

from bridge.connections.oauth_client import Connector


class NotConnected(Exception):
    """The person has no connection to the server (any more)."""

    def __init__(self, server: str) -> None:
        super().__init__(f"not connected to {server}")
        self.server = server


class PersonsToken(httpx2.Auth):
    def __init__(self, connector: Connector, team: str, user: str, server: str,
                 url: str) -> None:
        self._connector = connector
        self._team, self._user, self._server = team, user, server
        parts = urlsplit(url)
        self._origin = (parts.scheme, parts.netloc.lower())

    def sync_auth_flow(self, request: httpx2.Request,
                       ) -> Generator[httpx2.Request, httpx2.Response, None]:
        raise RuntimeError("a person's token is sent only by the async client")

    async def async_auth_flow(self, request: httpx2.Request,
                              ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        if (request.url.scheme, request.url.netloc.decode().lower()) != self._origin:
            yield request
            return
        token = await self._connector.access_token(self._team, self._user, self._server)
        if token is None:
            raise NotConnected(self._server)
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code != 401:
            return
        renewed = await self._connector.renew(self._team, self._user, self._server)
        if renewed is None:
            raise NotConnected(self._server)
        request.headers["Authorization"] = f"Bearer {renewed}"
        response = yield request
        if response.status_code == 401:
            await self._connector.store.run(
                lambda store: store.remove(self._team, self._user, self._server))
            raise NotConnected(self._server)
