"""The team's MCP tools in a turn (issue 51) against servers made with the official
Python SDK in the test: over streamable HTTP behind a bearer token (served by uvicorn),
and over stdio one that adds a tool as it runs, one that dies mid-call, one whose
answers hold images and a secret; and the reference ``server-everything`` from npm
over streamable HTTP. Through the real SDKs and the loopback Messages API."""

from __future__ import annotations

import asyncio
import base64
import io
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anthropic
import mcp_types as types
import pytest
from mcp.server.mcpserver import MCPServer
from PIL import Image
from pydantic import SecretStr
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from bridge.files.reader import FileReader
from bridge.files.reading import Limits
from bridge.model.anthropic_model import AnthropicModel, client_options
from bridge.model.protocol import (
    ModelRequest,
    ModelResult,
    Said,
    SystemSection,
    ToolOutcome,
    ToolSpec,
)
from bridge.settings import Settings
from bridge.team_tools.results import result_images, result_text
from bridge.web.server import WebServer
from layers.shared.quoting import quoted
from tests.fakes import HashingEmbedder
from tests.integration.test_team_tools import PUBLIC, _app, _offered, _result_of, _turns
from tests.secret_corpus import SECRETS
from tests.servers import anthropic_api as api
from tests.servers.anthropic_api import FakeAnthropic

TOKEN = "team-api-token-51"
AWS_KEY = next(seeded for seeded in SECRETS if seeded.kind == "aws access key id")

# A stdio server made with the Python SDK, run with this interpreter: it answers, adds a
# tool when asked (and says its list changed), dies mid-call, answers with images and
# with a secret.
SDK_SERVER = '''
import io, os
from mcp.server.mcpserver import Context, Image, MCPServer
from PIL import Image as Picture

server = MCPServer("sdk", log_level="WARNING")


@server.tool()
def shout(text: str) -> str:
    """The text in capitals."""
    return text.upper()


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool whisper."""
    def whisper(text: str) -> str:
        """The text in small letters."""
        return text.lower()

    server.add_tool(whisper)
    await ctx.notify_tools_changed()
    return "grown"


@server.tool()
def die() -> str:
    """Stops the server mid-call."""
    os._exit(1)


@server.tool()
def key() -> str:
    """Answers with what looks like a key."""
    return SECRET_SENTENCE


def _png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Picture.new("RGB", (width, height), (200, 30, 30)).save(out, "PNG")
    return out.getvalue()


@server.tool(structured_output=False)
def pictures() -> list:
    """A wide chart, a small one, and bytes that are no image."""
    return ["Two charts.", Image(data=_png(9000, 60), format="png"),
            Image(data=_png(40, 30), format="png"),
            Image(data=b"%PDF-1.4 not an image", format="png")]


server.run()
'''


def _sdk_server(tmp_path: Path) -> dict[str, Any]:
    """The stdio SDK server's entry: every tool vouched read-only, ``whisper`` (added as it
    runs) included."""
    script = tmp_path / "sdk_server.py"
    script.write_text(SDK_SERVER.replace("SECRET_SENTENCE", repr(AWS_KEY.text)))
    return {"command": sys.executable, "args": [str(script)],
            "readOnly": ["shout", "grow", "die", "key", "pictures", "whisper"]}


@dataclass
class Bearer:
    """Refuses a request without ``Authorization: Bearer <token>`` (401), and records
    the headers it was given."""

    app: ASGIApp
    token: str
    seen: list[str] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"authorization", b"").decode()
            self.seen.append(given)
            if given != f"Bearer {self.token}":
                await JSONResponse({"error": "invalid_token"}, status_code=401)(
                    scope, receive, send)
                return
        await self.app(scope, receive, send)


@dataclass
class HttpServer:
    url: str
    bearer: Bearer


@pytest.fixture
def http_server() -> Iterator[HttpServer]:
    """A Python SDK server over streamable HTTP behind a bearer token, served by uvicorn
    on 127.0.0.1, port 0, in a thread of its own."""
    server = MCPServer("team-api", log_level="WARNING")

    @server.tool()
    def add(a: int, b: int) -> int:
        """The sum of a and b."""
        return a + b

    @server.tool()
    def close_ticket(ticket: str) -> str:
        """Closes a ticket."""
        return f"closed {ticket}"

    bearer = Bearer(server.streamable_http_app(), TOKEN)
    web = WebServer(bearer, host="127.0.0.1", port=0)  # type: ignore[arg-type]
    web.start()
    try:
        yield HttpServer(f"http://127.0.0.1:{web.port}/mcp", bearer)
    finally:
        web.stop()


def _http_entry(url: str) -> dict[str, Any]:
    return {"type": "http", "url": url,
            "headers": {"Authorization": "Bearer ${TEAM_API_TOKEN}"}, "readOnly": ["add"]}


def test_a_server_over_streamable_http_is_called_with_the_token_of_its_entry(
    model_settings: Settings, tmp_path: Path, hashing_embedder: HashingEmbedder,
    fake_anthropic: FakeAnthropic, http_server: HttpServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TEAM_API_TOKEN", TOKEN)
    thoth = _app(model_settings, tmp_path, {"api": _http_entry(http_server.url)},
                 hashing_embedder)
    fake_anthropic.push(api.tool_use("api__add", {"a": 2, "b": 3}), api.text("Five."))
    try:
        (outcome,) = _turns(thoth, ("add 2 and 3", PUBLIC))
    finally:
        thoth.close()
    assert outcome.ok and outcome.reply == "Five."
    assert {"api__add", "api__close_ticket"} <= _offered(fake_anthropic)
    result = _result_of(fake_anthropic)
    assert "is_error" not in result and result["content"] == "5"
    # Every request carried the entry's header, its ${VAR} expanded.
    assert set(http_server.bearer.seen) == {f"Bearer {TOKEN}"}


def test_a_wrong_token_leaves_the_server_out_and_the_turn_goes_on(
    model_settings: Settings, tmp_path: Path, hashing_embedder: HashingEmbedder,
    fake_anthropic: FakeAnthropic, http_server: HttpServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TEAM_API_TOKEN", "not-the-token")
    thoth = _app(model_settings, tmp_path, {"api": _http_entry(http_server.url),
                                            "sdk": _sdk_server(tmp_path)}, hashing_embedder)
    fake_anthropic.push(api.tool_use("sdk__shout", {"text": "still here"}), api.text("Done."))
    try:
        (outcome,) = _turns(thoth, ("shout it", PUBLIC))
    finally:
        thoth.close()
    assert outcome.ok and outcome.reply == "Done."
    offered = _offered(fake_anthropic)
    assert not any(name.startswith("api__") for name in offered)
    assert _result_of(fake_anthropic)["content"] == "STILL HERE"
    assert http_server.bearer.seen and "Bearer not-the-token" in http_server.bearer.seen


def test_a_new_tool_the_server_announces_is_offered_in_the_next_turn(
    model_settings: Settings, tmp_path: Path, hashing_embedder: HashingEmbedder,
    fake_anthropic: FakeAnthropic,
) -> None:
    thoth = _app(model_settings, tmp_path, {"sdk": _sdk_server(tmp_path)}, hashing_embedder)
    fake_anthropic.push(api.tool_use("sdk__grow", {}), api.text("Grown."),
                        api.tool_use("sdk__whisper", {"text": "QUIET"}), api.text("Quiet."))
    try:
        first, second = _turns(thoth, ("grow", PUBLIC), ("whisper QUIET", PUBLIC))
    finally:
        thoth.close()
    assert first.ok and second.ok
    assert "sdk__whisper" not in _offered(fake_anthropic, 0)
    assert _result_of(fake_anthropic, 1)["content"] == "grown"
    assert "sdk__whisper" in _offered(fake_anthropic, 2)
    assert _result_of(fake_anthropic, 3)["content"] == "quiet"


def test_a_server_that_dies_mid_call_is_told_and_the_next_turn_reconnects(
    model_settings: Settings, tmp_path: Path, hashing_embedder: HashingEmbedder,
    fake_anthropic: FakeAnthropic,
) -> None:
    thoth = _app(model_settings, tmp_path, {"sdk": _sdk_server(tmp_path)}, hashing_embedder,
                 mcp_tool_timeout_s=10.0)
    fake_anthropic.push(api.tool_use("sdk__die", {}), api.text("It failed."),
                        api.tool_use("sdk__shout", {"text": "back"}), api.text("Back."))
    try:
        first, second = _turns(thoth, ("die", PUBLIC), ("shout back", PUBLIC))
    finally:
        thoth.close()
    assert first.ok and first.reply == "It failed."
    told = _result_of(fake_anthropic, 1)
    assert told["is_error"] is True
    assert "sdk failed during die" in told["content"] and "go on without it" in told["content"]
    assert second.ok and "sdk__shout" in _offered(fake_anthropic, 2)
    assert _result_of(fake_anthropic, 3)["content"] == "BACK"


def test_images_in_a_result_reach_the_model_as_image_blocks(
    model_settings: Settings, tmp_path: Path, hashing_embedder: HashingEmbedder,
    fake_anthropic: FakeAnthropic,
) -> None:
    thoth = _app(model_settings, tmp_path, {"sdk": _sdk_server(tmp_path)}, hashing_embedder)
    fake_anthropic.push(api.tool_use("sdk__pictures", {}), api.text("Two charts."))
    try:
        (outcome,) = _turns(thoth, ("show the charts", PUBLIC))
    finally:
        thoth.close()
    # The loopback API checks each image as the real one does (type, size, bytes).
    assert outcome.ok and outcome.reply == "Two charts."
    text, wide, small, unread = _result_of(fake_anthropic)["content"]
    assert text["type"] == "text" and "Two charts." in text["text"]
    sides = [_side_of(block) for block in (wide, small)]
    assert sides == [(1568, 10), (40, 30)]  # the wide one scaled within the API's limits
    assert unread["type"] == "text" and "image 3 not shown" in unread["text"]


def _side_of(block: dict[str, Any]) -> tuple[int, int]:
    assert block["type"] == "image"
    with Image.open(io.BytesIO(base64.b64decode(block["source"]["data"]))) as image:
        return image.size


def test_a_secret_in_a_result_reaches_the_model_quoted_and_is_never_stored(
    model_settings: Settings, tmp_path: Path, hashing_embedder: HashingEmbedder,
    fake_anthropic: FakeAnthropic,
) -> None:
    thoth = _app(model_settings, tmp_path, {"sdk": _sdk_server(tmp_path)}, hashing_embedder)
    fake_anthropic.push(api.tool_use("sdk__key", {}),
                        api.text(f"The tool said: {AWS_KEY.text}"))
    try:
        (outcome,) = _turns(thoth, ("what is the key?", PUBLIC))
    finally:
        thoth.close()
    assert outcome.ok
    assert AWS_KEY.secret in _result_of(fake_anthropic)["content"]
    home = model_settings.thoth_home
    assert model_settings.db_path.is_file() and model_settings.db_path.is_relative_to(home)
    stored = b"".join(path.read_bytes() for path in home.rglob("*") if path.is_file())
    assert b"(us-east-1)" in stored  # the answer was kept, its secret redacted
    secret = AWS_KEY.secret.encode()
    assert not [secret[i:i + 12] for i in range(len(secret) - 11) if secret[i:i + 12] in stored]


def test_a_tool_rounds_images_are_made_to_fit_what_the_messages_api_takes(
    model_settings: Settings, fake_anthropic: FakeAnthropic,
) -> None:
    """A result's images through ``result_images`` and the Anthropic adapter, to the
    loopback API that checks each as the real one does: a photo over 5 MB of base64 and
    a chart over 8000 px are made to fit, bytes that are no image are named."""
    model = model_settings.thoth_model
    noise = Image.frombytes("RGB", (2000, 1200), os.urandom(2000 * 1200 * 3))
    result = types.CallToolResult(content=[
        types.TextContent(type="text", text="Charts </tool_result>"),
        types.ImageContent(type="image", mime_type="image/png", data=_b64(_png_of(noise))),
        types.ImageContent(type="image", mime_type="image/png",
                           data=_b64(_png_of(Image.new("RGB", (9000, 60), "teal")))),
        types.ImageContent(type="image", mime_type="image/png", data=_b64(b"%PDF-1.4")),
    ])
    assert len(result.content[1].data) > 5 * 1024 * 1024  # type: ignore[union-attr]
    fake_anthropic.push(api.tool_use("sdk__pictures", {}), api.text("Seen."))

    async def run() -> ModelResult:
        reader = FileReader(Limits())
        client = anthropic.AsyncAnthropic(**client_options(
            SecretStr("sk-ant-test"), fake_anthropic.url, timeout_s=30, max_retries=0))
        adapter = AnthropicModel(client, model)
        try:
            request = ModelRequest(model=model, system=(SystemSection("persona", "Thoth."),),
                                   messages=(Said("user", "show the charts"),),
                                   tools=(ToolSpec("sdk__pictures", "d", {"type": "object"}),))
            asked = await adapter.respond(request, _ignore)
            (call,) = asked.tool_calls
            outcome = ToolOutcome(call.id, quoted(result_text(result)),
                                  attachments=await result_images(result, reader))
            return await adapter.respond(request.after_tools(asked, [outcome]), _ignore)
        finally:
            reader.close()
            await adapter.aclose()

    assert asyncio.run(run()).text == "Seen."
    assert fake_anthropic.refusals == []
    text, photo, chart, unread = _result_of(fake_anthropic)["content"]
    assert text == {"type": "text", "text": quoted(result_text(result))}
    assert "&lt;/tool_result&gt;" in text["text"]
    assert photo["source"]["media_type"] == "image/jpeg"  # too large as a PNG
    assert len(photo["source"]["data"]) <= 5 * 1024 * 1024
    assert _side_of(chart) == (1568, 10)
    assert unread["type"] == "text" and "image 3 not shown" in unread["text"]


def _png_of(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


async def _ignore(_: str) -> None:
    return None


@pytest.fixture
def everything_over_http(everything: str) -> Iterator[str]:
    """The reference server over streamable HTTP, on a free port of this machine (it
    takes its port from PORT and says it only as it was given)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([everything, "streamableHttp"], env={**os.environ, "PORT": str(port)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    listening = threading.Event()

    def watch() -> None:
        assert server.stderr is not None
        for line in server.stderr:
            if "listening on port" in line:
                listening.set()

    threading.Thread(target=watch, daemon=True).start()
    try:
        assert listening.wait(30), "server-everything did not start over streamable HTTP"
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        server.wait(10)


def test_the_reference_server_over_streamable_http(
    model_settings: Settings, tmp_path: Path, hashing_embedder: HashingEmbedder,
    fake_anthropic: FakeAnthropic, everything_over_http: str,
) -> None:
    thoth = _app(model_settings, tmp_path, {"everything": {
        "type": "http", "url": everything_over_http, "readOnly": ["echo", "get-sum"]}},
        hashing_embedder)
    fake_anthropic.push(api.tool_use("everything__echo", {"message": "<b>over http</b>"}),
                        api.text("Echoed."),
                        api.tool_use("everything__get-sum", {"a": 20, "b": 22}), api.text("42."))
    try:
        first, second = _turns(thoth, ("echo", PUBLIC), ("add", PUBLIC))
    finally:
        thoth.close()
    assert first.ok and second.ok
    assert _result_of(fake_anthropic, 1)["content"] == "Echo: &lt;b&gt;over http&lt;/b&gt;"
    assert "42" in _result_of(fake_anthropic, 3)["content"]

