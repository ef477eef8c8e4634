"""The console's Connections page: a person's own accounts on the team's remote servers
(connected since, last used, disconnect), the link that begins a sign-in, the return
that ends one, and the operator's count of connected people by server. No page ever
holds a token."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from pydantic import SecretStr
from starlette.testclient import TestClient

from bridge.access.signed_in import SignedInPerson
from bridge.app import Thoth, build
from bridge.connections.store import ConnectionStore, Start, Tokens
from bridge.console import csrf
from bridge.console.dependencies import console_dependencies
from bridge.console.sign_in import OneTimeLogin
from bridge.console.web_app import console_app
from bridge.settings import Settings
from bridge.team_tools.asks import CONNECT_ASK, Asks
from layers.shared.places import Place
from layers.shared.token_cipher import TokenCipher
from tests.fakes import HashingEmbedder
from tests.integration.console_sessions import FORM_TOKEN, SECRET, signed_in_clients
from tests.servers.oauth_mcp import OAuthMcpServer

ACCESS, REFRESH = "at-dana-0123456789", "rt-dana-0123456789"
DANA = SignedInPerson("slack:U1", "dana", sees_everything=False, founder=False,
                      team="T1", user="U1")
ERIN = SignedInPerson("slack:U2", "erin", sees_everything=False, founder=False,
                      team="T1", user="U2")
OPERATOR = SignedInPerson("operator", "operator", sees_everything=True, founder=True)


@pytest.fixture
def server() -> Iterator[OAuthMcpServer]:
    with OAuthMcpServer() as running:
        yield running


@pytest.fixture
def thoth(isolated_environment: Path, tmp_path: Path,
          server: OAuthMcpServer) -> Iterator[Thoth]:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"tracker": {
        "type": "http", "url": server.mcp_url, "auth": "oauth"}}}))
    key = TokenCipher.new_key()
    app = build(Settings(  # type: ignore[call-arg]
        _env_file=None, mcp_config=config, console_url="https://thoth.example",
        slack_token_keys=SecretStr(key)), embedder=HashingEmbedder())
    start = Start("s", "T1", "U1", "tracker", None, "v" * 43, "client-1", server.base,
                  server.mcp_url, server.base + "/token", server.base + "/revoke",
                  "https://thoth.example/console/connections/callback", time.time() + 60)
    ConnectionStore(app.db, TokenCipher([key])).connect(
        start, Tokens(ACCESS, REFRESH, None, time.time() + 3600))
    yield app
    app.close()


@pytest.fixture
def signed_in(thoth: Thoth) -> Iterator[Callable[[SignedInPerson], TestClient]]:
    with signed_in_clients(thoth) as client:
        yield client


def test_a_person_sees_their_own_connections_and_never_a_token(
    signed_in: Callable[[SignedInPerson], TestClient],
) -> None:
    dana = signed_in(DANA).get("/connections")
    assert dana.status_code == 200
    assert 'id="connection-tracker"' in dana.text and "connected" in dana.text
    assert "/connections/tracker/disconnect" in dana.text
    erin = signed_in(ERIN).get("/connections").text
    assert "not connected" in erin and "/connections/start/tracker" in erin
    operator = signed_in(OPERATOR).get("/connections").text
    assert "1 connected" in operator
    for page in (dana.text, erin, operator):
        assert ACCESS not in page and REFRESH not in page


def test_disconnecting_in_the_console_revokes_deletes_and_is_audited(
    signed_in: Callable[[SignedInPerson], TestClient], thoth: Thoth,
) -> None:
    # Without the form's token, nothing happens.
    refused = signed_in(DANA).post("/connections/tracker/disconnect", data={})
    assert refused.status_code == 403
    done = signed_in(DANA).post("/connections/tracker/disconnect",
                                data={csrf.FIELD: FORM_TOKEN})
    assert done.status_code == 303 and "Disconnected" in parse_qs(
        urlsplit(done.headers["location"]).query)["said"][0]
    with thoth.db.read() as conn:
        assert conn.execute("SELECT COUNT(*) FROM connections").fetchone()[0] == 0
    # (Its revocation at the server: test_connections.py, with a client the server knows.)
    (line,) = thoth.audit.entries(action="connection.disconnect")
    assert line.actor == "slack:U1" and line.target == "tracker"
    again = signed_in(DANA).post("/connections/tracker/disconnect",
                                 data={csrf.FIELD: FORM_TOKEN})
    assert again.status_code == 409 and "not connected" in again.text


def test_the_link_begins_a_sign_in_with_pkce_and_the_resource(
    signed_in: Callable[[SignedInPerson], TestClient], server: OAuthMcpServer,
) -> None:
    begun = signed_in(ERIN).get("/connections/start/tracker?ask=ask-1")
    assert begun.status_code == 303
    address = urlsplit(begun.headers["location"])
    assert f"{address.scheme}://{address.netloc}" == server.base
    query = parse_qs(address.query)
    assert query["code_challenge_method"] == ["S256"]
    assert query["resource"] == [server.mcp_url]
    assert query["redirect_uri"] == ["https://thoth.example/console/connections/callback"]
    # The operator is no Slack person: nothing of theirs to connect.
    assert signed_in(OPERATOR).get("/connections/start/tracker").status_code == 409


def test_a_return_thoth_did_not_begin_is_refused_saying_why(
    signed_in: Callable[[SignedInPerson], TestClient],
) -> None:
    back = signed_in(ERIN).get("/connections/callback?state=forged&code=abc")
    assert back.status_code == 409 and "not one Thoth began" in back.text


def test_signed_out_a_link_is_opened_again_once_signed_in(thoth: Thoth) -> None:
    login = OneTimeLogin()
    console = console_app(console_dependencies(thoth), secret=SECRET, login=login)
    with TestClient(console, follow_redirects=False) as browser:
        assert browser.get("/connections/start/tracker?ask=a1").status_code == 401
        signed = browser.get(f"/login/{login.token}")
        assert signed.status_code == 303
        assert signed.headers["location"] == "/connections/start/tracker?ask=a1"


def test_a_link_answers_only_its_own_ask_to_connect(
    signed_in: Callable[[SignedInPerson], TestClient], thoth: Thoth,
) -> None:
    asks = Asks(thoth.db)
    place = Place("T1", "C1", "public", "1.0")
    card = asks.ask(place, "s1", "U2", "erin", "tracker", "create_issue", {"title": "x"})
    connect = asks.ask(place, "s1", "U2", "erin", "tracker", CONNECT_ASK, {})
    dana_s = asks.ask(place, "s2", "U1", "dana", "tracker", CONNECT_ASK, {})
    for ask_id in (card.id, dana_s.id, connect.id):
        assert signed_in(ERIN).get(f"/connections/start/tracker?ask={ask_id}").status_code == 303
    with thoth.db.read() as conn:
        kept = [row[0] for row in conn.execute(
            "SELECT ask_id FROM connection_starts ORDER BY started_at").fetchall()]
    # A tool's card, and someone else's ask, are not this link's to answer.
    assert kept == [None, None, connect.id]
