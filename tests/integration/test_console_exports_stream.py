"""The console's exports are streamed a page at a time, never built whole, and come out
byte for byte as they were built before: the episodes as `thoth episodes export` writes
them, the audit log as it was written whole before. Over a real app
on SQLite, through the real console app (the operator signs in with the one-time link)."""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import asdict

import pytest
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.testclient import TestClient

from bridge.access.signed_in import OPERATOR, SignedInPerson
from bridge.app import Thoth, build
from bridge.cli.episodes import run_export
from bridge.console.dependencies import console_dependencies
from bridge.console.pages import audit as audit_page
from bridge.console.pages import export as export_page
from bridge.console.routes import audit, export
from bridge.console.routes.answers import Console
from bridge.console.sign_in import OneTimeLogin
from bridge.console.web_app import console_app
from bridge.settings import Settings
from layers.episodic.importing import import_episodes
from layers.shared.offloaded import Offloaded
from tests.fakes import HashingEmbedder

EPISODES = 2_500
AUDIT_ENTRIES = 2_100
THE_OPERATOR = SignedInPerson(OPERATOR, "the operator", sees_everything=True, founder=True)


@pytest.fixture
def app(settings: Settings, hashing_embedder: HashingEmbedder) -> Iterator[Thoth]:
    thoth = build(settings, embedder=hashing_embedder)
    yield thoth
    thoth.close()


def _remember_many(app: Thoth, name: str) -> None:
    lines = "".join(json.dumps({
        "id": f"e-{number:05d}", "user_text": f"message {number} <b>&amp;</b> café",
        "summary": f"summary {number}", "created_at": "2026-03-01T10:00:00Z",
        "team": "T1", "channel": "C1", "channel_type": "public", "user": "U1",
        "user_name": "dana"}) + "\n" for number in range(EPISODES))
    path = app.settings.thoth_home / f"{name}.jsonl"
    path.write_text(lines, encoding="utf-8")
    assert len(import_episodes(app.episodic, path, named="many", skip_bad=False).stored) == (
        EPISODES)


def _as_the_operator(app: Thoth) -> TestClient:
    login = OneTimeLogin()
    client = TestClient(console_app(console_dependencies(app), secret="s", login=login),
                        follow_redirects=False)
    assert client.get(f"/login/{login.token}").status_code == 303
    return client


def _route_answer(app: Thoth, handler: object) -> StreamingResponse:
    """What a route answers, called as the guard calls it (no body read yet)."""
    console = Console(console_dependencies(app), templates=None,  # type: ignore[arg-type]
                      login=None, slack=None, public_url=None)
    request = Request({"type": "http", "method": "GET", "path": "/", "headers": [],
                       "query_string": b"", "client": ("127.0.0.1", 5000)})

    async def answer() -> StreamingResponse:
        response = await handler(console, request, THE_OPERATOR)  # type: ignore[operator]
        assert isinstance(response, StreamingResponse)
        return response

    return asyncio.run(answer())


def _chunks(body: AsyncIterator[str | bytes]) -> list[str | bytes]:
    async def read() -> list[str | bytes]:
        return [chunk async for chunk in body]

    return asyncio.run(read())


def test_the_episodes_export_streams_every_episode_as_thoth_episodes_export_writes_it(
    app: Thoth,
) -> None:
    _remember_many(app, "many")
    written = io.StringIO()
    assert run_export(argparse.Namespace(output=None, team=None), app, written) == 0
    with _as_the_operator(app) as client:
        exported = client.get("/export/episodes.jsonl")
    assert exported.status_code == 200
    assert exported.headers["content-type"] == "application/x-ndjson"
    assert exported.headers["content-disposition"] == 'attachment; filename="episodes.jsonl"'
    assert "content-length" not in exported.headers  # sent as it is read, not sized first
    assert exported.content == written.getvalue().encode()
    assert len(exported.text.splitlines()) == EPISODES
    assert [entry.action for entry in app.audit.entries(action="export")] == [
        "export.episodes"]

    # The route's body is an iterator read a page at a time, not a list or bytes.
    response = _route_answer(app, export.episodes_jsonl)
    assert isinstance(response.body_iterator, AsyncIterator)
    chunks = _chunks(response.body_iterator)
    assert [len(str(chunk).splitlines()) for chunk in chunks] == [
        export_page.PAGE, export_page.PAGE, EPISODES - 2 * export_page.PAGE]
    assert "".join(map(str, chunks)) == written.getvalue()


def test_the_audit_log_streams_newest_first_as_it_was_written_whole(app: Thoth) -> None:
    for number in range(AUDIT_ENTRIES):
        app.audit.record(actor="operator", action="note.keep", target=f"note:{number}",
                         origin="cli", detail=f"a <detail> & \"quotes\" {number}")

    # As the log was written whole before it was streamed: every entry, newest first.
    before = "".join(json.dumps(asdict(entry)) + "\n"
                     for entry in app.audit.entries(limit=AUDIT_ENTRIES + 10))
    response = _route_answer(app, audit.json_lines)
    assert isinstance(response.body_iterator, AsyncIterator)
    chunks = _chunks(response.body_iterator)
    assert [len(str(chunk).splitlines()) for chunk in chunks] == [
        audit_page.PAGE, audit_page.PAGE, AUDIT_ENTRIES - 2 * audit_page.PAGE]
    assert "".join(map(str, chunks)) == before
    with _as_the_operator(app) as client:
        exported = client.get("/audit.jsonl")
    assert exported.status_code == 200
    assert exported.headers["content-type"] == "application/x-ndjson"
    # The sign-in wrote a line since: newest first, it leads, and the rest is as before.
    first, rest = exported.text.split("\n", 1)
    assert json.loads(first)["action"] == "login" and rest == before


def test_a_stream_reads_each_page_off_the_loop_and_only_when_asked(app: Thoth) -> None:
    _remember_many(app, "few")
    read_in: list[int] = []

    def pages(thoth: Thoth) -> Iterator[int]:
        for episode in thoth.episodic.store.iter_episodes(batch_size=export_page.PAGE):
            read_in.append(threading.get_ident())
            yield len(episode.id)

    async def scenario() -> None:
        stream = Offloaded(app).stream(pages)
        assert read_in == []  # nothing is read before the body is asked for
        assert await anext(stream) == len("e-00000")
        assert len(read_in) == 1
        assert sum([1 async for _ in stream]) == EPISODES - 1
        assert threading.get_ident() not in read_in  # the loop's thread read nothing

    asyncio.run(scenario())
