"""`thoth tools list` and `thoth doctor`'s team-tools checks, called as functions on a real
home, against the reference ``server-everything`` from npm over stdio, a command that is
not there, and a loopback HTTP server that refuses the token it is sent."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from bridge.cli.main import main
from bridge.settings import Settings
from layers.shared.redaction import redact
from tests.fakes import HashingEmbedder

# Plain words, so that only Thoth not printing them keeps them out of the output (the
# output's redaction does not recognise them: see the first test).
ENV_TOKEN = "kumquat-envvalue-fiftyone"
HEADER_TOKEN = "persimmon-headervalue-fiftyone"


def thoth(settings: Settings, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), settings=settings, stdout=out, stderr=err, embedder=HashingEmbedder())
    return code, out.getvalue(), err.getvalue()


class Refusing(ThreadingHTTPServer):
    """An MCP endpoint that answers every request 401, keeping each request's headers."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Refuse)
        self.headers_seen: list[dict[str, str]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/mcp"


class _Refuse(BaseHTTPRequestHandler):
    server: Refusing

    def do_POST(self) -> None:
        self.server.headers_seen.append(dict(self.headers))
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Bearer realm="mcp"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_DELETE = do_POST

    def log_message(self, *args: Any) -> None:
        """Quiet: the test reads what it recorded."""


@pytest.fixture
def refusing() -> Iterator[Refusing]:
    server = Refusing()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _configured(settings: Settings, tmp_path: Path, servers: dict[str, Any]) -> Settings:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    return settings.model_copy(update={"mcp_config": config})


@pytest.fixture
def team(settings: Settings, tmp_path: Path, everything: str, refusing: Refusing,
         monkeypatch: pytest.MonkeyPatch) -> Settings:
    """A good server, a narrowed one, one whose command is gone, one refusing its token,
    and one whose variable is not set."""
    monkeypatch.setenv("TEAM_TOKEN_51", HEADER_TOKEN)
    monkeypatch.delenv("NOT_SET_ANYWHERE_51", raising=False)
    return _configured(settings, tmp_path, {
        "everything": {"command": everything, "args": ["stdio"],
                       "env": {"API_TOKEN": ENV_TOKEN},
                       "readOnly": ["echo", "get-sum", "no-such-tool"],
                       "tools": {"exclude": ["simulate-research-query", "gzip-file-as-resource"]}},
        "dms": {"command": everything, "args": ["stdio"], "places": ["im", "C42"],
                "tools": {"include": ["echo", "get-env"]}, "readOnly": ["echo"]},
        "gone": {"command": str(tmp_path / "no-such-server")},
        "tracker": {"type": "http", "url": refusing.url,
                    "headers": {"Authorization": "Bearer ${TEAM_TOKEN_51}",
                                "X-Literal": HEADER_TOKEN}},
        "needs_token": {"command": everything, "env": {"TOKEN": "${NOT_SET_ANYWHERE_51}"}},
    })


def _no_secret(*outputs: str) -> None:
    for text in outputs:
        assert ENV_TOKEN not in text and HEADER_TOKEN not in text


def test_the_tokens_are_words_the_outputs_redaction_would_let_through() -> None:
    assert redact(f"{ENV_TOKEN} {HEADER_TOKEN}") == f"{ENV_TOKEN} {HEADER_TOKEN}"


def test_list_shows_each_server_its_places_and_each_tool_with_how_it_is_approved(
    team: Settings, refusing: Refusing
) -> None:
    code, out, err = thoth(team, "tools", "list")
    assert code == 0, err
    _no_secret(out, err)
    blocks = _blocks(out)
    assert list(blocks) == ["everything", "dms", "gone", "tracker", "needs_token"]

    everything = blocks["everything"]
    assert everything[0].endswith("stdio (env: API_TOKEN)")  # the name, never the value
    assert "  used: everywhere" in everything
    assert _approval(everything, "echo") == "runs without asking (readOnly)"
    assert _approval(everything, "get-sum") == "runs without asking (readOnly)"
    assert _approval(everything, "toggle-simulated-logging") == "asked of a person first"
    assert _approval(everything, "simulate-research-query") is None
    assert ("  left out (tools): gzip-file-as-resource, simulate-research-query"
            in everything)
    assert "  named in mcp.json but not offered by the server: no-such-tool" in everything

    dms = blocks["dms"]
    assert "  used: im, C42" in dms
    assert [_approval(dms, "echo"), _approval(dms, "get-env")] == [
        "runs without asking (readOnly)", "asked of a person first"]
    assert _approval(dms, "get-sum") is None and any("get-sum" in line for line in dms
                                                     if line.startswith("  left out"))

    (gone_line,) = [line for line in blocks["gone"] if "cannot be reached" in line]
    assert "no-such-server' was not found; fix: install it, or give its full path" in gone_line

    tracker = blocks["tracker"]
    assert tracker[0] == f"tracker  http {refusing.url} (headers: Authorization, X-Literal)"
    assert ("  cannot be reached: " + refusing.url + " answered HTTP 401; fix: check the"
            " headers' token") in tracker[2]
    # The header was sent, with its variable expanded: only the output leaves it out.
    assert refusing.headers_seen[0]["Authorization"] == f"Bearer {HEADER_TOKEN}"

    assert blocks["needs_token"][1] == (
        "  not used: ${NOT_SET_ANYWHERE_51} is not set in the environment; fix: set"
        " NOT_SET_ANYWHERE_51 in the environment Thoth starts in (a .env line is not read"
        " for mcp.json), or remove the entry")


def test_list_as_json(team: Settings, refusing: Refusing) -> None:
    code, out, err = thoth(team, "tools", "list", "--json")
    assert code == 0, err
    _no_secret(out, err)
    listing = json.loads(out)
    assert listing["config"] == str(team.mcp_config) and listing["exists"] is True
    servers = {server["name"]: server for server in listing["servers"]}
    everything = servers["everything"]
    assert {key: everything[key] for key in ("transport", "args", "env", "places", "status")
            } == {"transport": "stdio", "args": ["stdio"], "env": ["API_TOKEN"],
                  "places": None, "status": "ok"}
    tools = {tool["name"]: tool for tool in everything["tools"]}
    assert tools["echo"] == {"name": "echo", "called_as": "everything__echo",
                             "approval": "readOnly"}
    assert tools["get-env"]["approval"] == "asked"
    assert sorted(everything["left_out"]) == ["gzip-file-as-resource", "simulate-research-query"]
    assert everything["not_offered"] == ["no-such-tool"]
    assert [tool["name"] for tool in servers["dms"]["tools"]] == ["echo", "get-env"]
    assert servers["dms"]["places"] == ["im", "C42"]
    assert servers["gone"]["status"] == "unreachable" and "not found" in servers["gone"]["why"]
    assert servers["tracker"] == {
        "name": "tracker", "transport": "http", "url": refusing.url,
        "headers": ["Authorization", "X-Literal"], "places": None, "status": "unreachable",
        "why": f"{refusing.url} answered HTTP 401",
        "fix": "check the headers' token (the Authorization header in mcp.json, and the"
               " variable it names)"}
    assert servers["needs_token"]["status"] == "refused"
    assert servers["needs_token"]["why"] == "${NOT_SET_ANYWHERE_51} is not set in the environment"


def test_without_mcp_json_one_line_says_where_to_put_it(settings: Settings) -> None:
    code, out, err = thoth(settings, "tools", "list")
    assert code == 0, err
    where = settings.thoth_home / "mcp.json"
    assert out.count("\n") == 1
    assert out.startswith(f"no team tools: put the servers in {where} (or name a file with"
                          " MCP_CONFIG), {\"mcpServers\":")
    code, out, _ = thoth(settings, "tools", "list", "--json")
    assert json.loads(out) == {"config": str(where), "exists": False, "servers": []}
    code, out, _ = thoth(settings, "doctor")
    assert f"info  tools      no team tools: no servers in {where}" in out


def test_a_file_that_is_not_json_is_refused_with_its_line(settings: Settings,
                                                          tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text('{"mcpServers": {\n  "a": {"command": "x",}\n}}\n')
    broken = settings.model_copy(update={"mcp_config": config})
    code, out, err = thoth(broken, "tools", "list")
    assert code == 1 and out == ""
    assert err.startswith(f"error: {config} is not JSON: ") and "line 2" in err
    code, out, _ = thoth(broken, "doctor", "--json")
    assert code == 1
    (check,) = [check for check in json.loads(out) if check["name"] == "tools"]
    assert check["status"] == "FAIL" and "line 2" in check["detail"]


def test_doctor_says_each_server_with_its_count_or_its_fix(
    team: Settings, refusing: Refusing
) -> None:
    code, out, err = thoth(team, "doctor")
    assert code == 1, out
    _no_secret(out, err)
    tools = out.splitlines()
    assert ("warn  tools      needs_token in " in out
            and "${NOT_SET_ANYWHERE_51} is not set in the environment" in out)
    assert ("ok    tools      everything: 11 tools offered (9 asked of a person first) of the"
            " 13 it lists; used everywhere") in tools
    assert ("ok    tools      dms: 2 tools offered (1 asked of a person first) of the 13 it"
            " lists; used in im, C42") in tools
    gone = tools.index(next(line for line in tools if line.startswith("FAIL  tools      gone:")))
    assert "was not found" in tools[gone] and "fix: install it" in tools[gone + 1]
    tracker = next(n for n, line in enumerate(tools) if "tracker:" in line)
    assert tools[tracker] == f"FAIL  tools      tracker: {refusing.url} answered HTTP 401"
    assert "fix: check the headers' token" in tools[tracker + 1]


def test_doctor_passes_with_a_server_that_answers(settings: Settings, tmp_path: Path,
                                                  everything: str) -> None:
    good = _configured(settings, tmp_path, {"everything": {"command": everything,
                                                           "args": ["stdio"]}})
    code, out, _ = thoth(good, "doctor", "--json")
    checks = [check for check in json.loads(out) if check["name"] == "tools"]
    assert checks == [{"name": "tools", "status": "ok", "fix": "",
                       "detail": "everything: 13 tools offered (13 asked of a person first)"
                                 " of the 13 it lists; used everywhere"}]
    assert not any(check["status"] == "FAIL" for check in json.loads(out)), out
    assert code == 0


def _blocks(out: str) -> dict[str, list[str]]:
    """The listing's lines by server: a server's line, then its indented ones."""
    blocks: dict[str, list[str]] = {}
    for line in out.splitlines()[1:]:
        if not line.startswith(" "):
            current = blocks.setdefault(line.split()[0], [])
        current.append(line)
    return blocks


def _approval(block: list[str], tool: str) -> str | None:
    for line in block:
        words = line.split(None, 1)
        if line.startswith("  ") and words[0] == tool and len(words) == 2:
            return words[1].strip()
    return None
