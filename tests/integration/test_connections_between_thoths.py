"""One Thoth connects to another as a remote MCP server, each person with their own
account: Thoth B (a real `thoth console` subprocess serving /mcp, its own authorization
server with Sign in with Slack) is in Thoth A's ``mcp.json`` with ``"auth": "oauth"``.
A real Chromium signs each person in at B (the loopback Slack, then B's consent page);
A's calls of B's ``recall`` then read what that person may read, and no one else."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from pydantic import SecretStr

from bridge.app import Thoth, build
from bridge.settings import Settings
from layers.identity.protocol import Person
from layers.shared.token_cipher import TokenCipher
from tests.fakes import HashingEmbedder
from tests.integration.test_connections import Returns, _clicked_through
from tests.integration.test_mcp_oauth import QUERY, Served, _thoth, served  # noqa: F401

DANA, ARI = Person("T1", "U1", "dana"), Person("T1", "U2", "ari")


def _thoth_a(settings: Settings, tmp_path: Path, b: Served, returns: Returns,
             embedder: HashingEmbedder) -> Thoth:
    config = tmp_path / "a-mcp.json"
    config.write_text(json.dumps({"mcpServers": {"thoth_b": {
        "type": "http", "url": b.mcp, "auth": "oauth", "readOnly": ["recall"]}}}))
    # A home of its own: B (the subprocess) keeps the test's THOTH_HOME.
    return build(settings.model_copy(update={
        "thoth_home": tmp_path / "thoth-a", "mcp_config": config,
        "console_url": returns.url, "slack_token_keys": SecretStr(TokenCipher.new_key())}),
        embedder=embedder)


async def _connect(app: Thoth, b: Served, returns: Returns, person: Person) -> list[str]:
    assert app.team_tools is not None and app.team_tools.connector is not None
    assert person.user is not None
    connector = app.team_tools.connector
    b.sign_in.signed_in_as = person.user
    pages = await _clicked_through(await connector.start(person.team, person.user, "thoth_b"))
    query = parse_qs(urlsplit(returns.returned[-1]).query)
    await connector.finish(query["state"][0], code=query["code"][0], error=None,
                           issuer=query.get("iss", [None])[0], team=person.team,
                           user=person.user)
    return pages


async def _recalled(app: Thoth, person: Person) -> set[str]:
    assert app.team_tools is not None
    answer = await app.team_tools.run("thoth_b", "recall", dict(QUERY),
                                      actor=f"slack:{person.user}", how="read-only",
                                      person=person)
    return {episode for episode in ("dm-dana", "dm-ari", "public")
            if episode in answer.for_model}


def test_each_person_reads_the_other_thoth_as_themselves_and_one_disconnects(
    served: Served, model_settings: Settings, tmp_path: Path,  # noqa: F811
    hashing_embedder: HashingEmbedder,
) -> None:
    with Returns() as returns:
        app = _thoth_a(model_settings, tmp_path, served, returns, hashing_embedder)

        async def scenario() -> tuple[list[str], set[str], set[str], bool]:
            assert app.team_tools is not None and app.team_tools.connector is not None
            consent = await _connect(app, served, returns, DANA)
            await _connect(app, served, returns, ARI)
            dana, ari = await _recalled(app, DANA), await _recalled(app, ARI)
            ended = await app.team_tools.connector.disconnect(
                "T1", "U1", "thoth_b", actor="slack:U1", origin="test")
            await app.team_tools.aclose()
            return consent, dana, ari, ended

        try:
            consent, dana, ari, ended = asyncio.run(scenario())
        finally:
            app.close()
    # B's own consent page named the person and the client, Thoth A.
    assert any("dana" in page and "Thoth" in page for page in consent)
    assert dana == {"dm-dana", "public"}
    assert ari == {"dm-ari", "public"}
    assert ended
    # B lists one sign-in per person, made by Thoth A; dana's was revoked by A.
    lines = [line for line in _thoth("tokens", "list").splitlines() if "Thoth" in line]
    (dana_line,) = [line for line in lines if "T1:U1" in line]
    (ari_line,) = [line for line in lines if "T1:U2" in line]
    assert "revoked" in dana_line and "revoked" not in ari_line
