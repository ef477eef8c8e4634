"""Identity facts stay where they were said, on both backends (DESIGN.md "Memory must never
leak"): facts planted in a DM, a private channel, a public channel and another workspace,
then read from each place through the user model, the tools and ``thoth people show``."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator

import pytest
from pydantic import SecretStr

from bridge.app import Thoth, build
from bridge.cli.main import main
from bridge.model.protocol import ToolCall
from bridge.pipeline.tools import ToolBox
from bridge.pipeline.tools.about_me import what_do_you_know_about_me
from bridge.pipeline.turn import Turn
from bridge.settings import Settings
from layers.identity.protocol import Person
from layers.shared.places import Place, Viewer
from layers.working.transcript import TranscriptTurn
from tests.fakes import HashingEmbedder
from tests.servers.honcho_api import FakeHoncho

DANA = Person("T1", "U1", "Dana")
DANA_ELSEWHERE = Person("T2", "U1", "Dana")
PLANTED = {
    "dm": ("Dana is interviewing at another company", Place("T1", "D1", "im", "1.1")),
    "private": ("Dana has a salary band of L5", Place("T1", "G1", "private", "2.1")),
    "public": ("Dana leads the payments team", Place("T1", "C1", "public", "3.1")),
}
OTHER_WORKSPACE = ("Dana moonlights as a DJ", Place("T2", "C1", "public", "4.1"))
# Who reads Dana's facts, from where, and what each may see.
READERS = {
    "a public channel": (Viewer("T1", "C2", "public", "U1"), {"public"}),
    "the private channel": (Viewer("T1", "G1", "private", "U1"), {"public", "private"}),
    "another private channel": (Viewer("T1", "G2", "private", "U1"), {"public"}),
    "Dana's DM": (Viewer("T1", "D1", "im", "U1"), {"public", "dm"}),
    "someone else's DM": (Viewer("T1", "D2", "im", "U2"), {"public"}),
    "another workspace": (Viewer("T2", "C1", "public", "U1"), set()),
}


@pytest.fixture(params=["local", "honcho"])
def app(
    request: pytest.FixtureRequest, settings: Settings, hashing_embedder: HashingEmbedder
) -> Iterator[Thoth]:
    if request.param == "local":
        thoth = build(settings, embedder=hashing_embedder)
        yield _planted(thoth)
        thoth.close()
        return
    with FakeHoncho() as honcho:
        honcho_settings = settings.model_copy(
            update={"honcho_url": honcho.url, "honcho_api_key": SecretStr("hch-test-key")}
        )
        thoth = build(honcho_settings, embedder=hashing_embedder)
        yield _planted(thoth)
        thoth.close()


def _planted(app: Thoth) -> Thoth:
    identity = app.identity
    assert identity is not None

    async def plant() -> None:
        for person, (fact, place) in [
            *((DANA, planted) for planted in PLANTED.values()),
            (DANA_ELSEWHERE, OTHER_WORKSPACE),
        ]:
            session = app.sessions.open(f"slack:{place.team}:{place.channel}:1", place)
            app.transcript.append(session.id, TranscriptTurn("hi", "hello", user=person.user))
            await identity.observe(person, [fact], session_id=session.id, source="reflection")

    asyncio.run(plant())
    return app


def _expected(kinds: set[str]) -> set[str]:
    return {PLANTED[kind][0] for kind in kinds}


@pytest.mark.parametrize("reader", list(READERS))
def test_the_user_model_and_the_facts_hold_only_what_the_reader_may_read(
    app: Thoth, reader: str
) -> None:
    identity = app.identity
    assert identity is not None
    viewer, kinds = READERS[reader]
    everything = {fact for fact, _ in PLANTED.values()} | {OTHER_WORKSPACE[0]}

    async def read() -> tuple[str, set[str]]:
        model = await identity.user_model(DANA, "tell me about Dana's work", viewer) or ""
        facts = {fact.text for fact in await identity.facts(DANA, viewer)}
        return model, facts

    model, facts = asyncio.run(read())
    assert facts == _expected(kinds)
    for fact in everything - _expected(kinds):
        assert fact not in model, f"{fact!r} leaked into {reader}"
    for fact in _expected(kinds):
        assert fact in model


def test_the_speakers_tool_lists_only_what_may_be_read_here(app: Thoth) -> None:
    assert app.identity is not None
    tools = ToolBox([what_do_you_know_about_me(app.identity)])
    in_public = Turn("slack:T1:C2:9", "what do you know about me?",
                     Place("T1", "C2", "public", "9.1"), user="U1", user_name="Dana")
    text, _ = asyncio.run(tools.run(ToolCall("t1", "what_do_you_know_about_me", {}), in_public))
    assert "payments team" in text
    assert "interviewing" not in text and "salary" not in text and "DJ" not in text


def test_people_show_reads_as_a_dm_unless_a_place_or_the_operators_view_is_asked(
    app: Thoth,
) -> None:
    settings = app.settings

    def show(*extra: str) -> str:
        out = io.StringIO()
        code = main(["people", "show", "U1", "--team", "T1", *extra], settings=settings,
                    stdout=out, embedder=HashingEmbedder())
        assert code == 0
        return out.getvalue()

    as_dm = show()
    assert "interviewing" in as_dm and "payments" in as_dm and "salary" not in as_dm
    in_public = show("--channel", "C2", "--channel-type", "public")
    assert "payments" in in_public and "interviewing" not in in_public
    operator = show("--all")
    assert all(fact in operator for fact, _ in PLANTED.values())
