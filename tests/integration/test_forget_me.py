""""Forget me" forgets what a person expects gone — their facts, their DMs with Thoth,
their notes — and says what it kept and why; checked afterwards as the person would
check it: `thoth recall`, MCP, and the next turn's prompt."""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from bridge.app import build
from bridge.cli.main import main
from bridge.settings import Settings
from layers.identity.protocol import Person
from layers.shared.places import LOCAL_TEAM, Place
from tests.servers.anthropic_api import FakeAnthropic

# dana's words: in her DM with Thoth at the terminal, and in a public channel.
LOCKER = "my locker code is 4417"
STANDUP = "the standup moves to 10am from Monday"
# erin's, in her own DM.
PARKING = "erin parks in spot B12 on level two"


def _env(home: Path, fake: FakeAnthropic | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "THOTH_"))}
    env.update(THOTH_HOME=str(home), HF_HUB_OFFLINE="1")
    if fake is not None:
        env.update(ANTHROPIC_API_KEY="sk-ant-test-key", ANTHROPIC_BASE_URL=fake.url)
    return env


def _chat_as_dana(home: Path, fake: FakeAnthropic, words: str) -> str:
    """One turn of dana's at the terminal; the whole request the model was sent."""
    asked = len(fake.requests)
    subprocess.run([sys.executable, "-m", "bridge", "chat", "--user", "dana"],
                   env=_env(home, fake), check=True, capture_output=True, timeout=180,
                   text=True, input=words + "\n")
    return json.dumps(fake.wait_for_requests(asked + 1)[asked].body)


def _cli(*argv: str) -> str:
    out = io.StringIO()
    assert main(list(argv), stdout=out, stderr=out) == 0, out.getvalue()
    return out.getvalue()


def _seed(home: Path, tmp_path: Path) -> None:
    """dana's channel words and erin's DM, facts of both, notes of both, dana's token."""
    lines = [
        {"id": "standup", "user_text": STANDUP, "summary": "", "team": LOCAL_TEAM,
         "channel": "C1", "channel_type": "public", "user": "dana", "user_name": "dana",
         "created_at": "2026-11-20T10:00:00+00:00"},
        {"id": "parking", "user_text": PARKING, "summary": "", "team": LOCAL_TEAM,
         "channel": "terminal", "channel_type": "im", "user": "erin", "user_name": "erin",
         "created_at": "2026-11-20T11:00:00+00:00"},
    ]
    episodes = tmp_path / "episodes.jsonl"
    episodes.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    _cli("episodes", "import", str(episodes))
    _cli("tokens", "make", "--team", LOCAL_TEAM, "--user", "dana", "--label", "laptop")
    app = build(Settings(_env_file=None))  # type: ignore[call-arg]
    try:
        assert app.identity is not None
        dana, erin = Person(LOCAL_TEAM, "dana"), Person(LOCAL_TEAM, "erin")
        asyncio.run(app.identity.observe(dana, ["prefers answers in one line"],
                                         session_id=None, source="test"))
        asyncio.run(app.identity.observe(erin, ["drinks her tea black"],
                                         session_id=None, source="test"))
        dm, channel = Place(LOCAL_TEAM, "terminal", "im"), Place(LOCAL_TEAM, "C1", "public")
        for text, place, user in [("dana keeps her locker by the window", dm, "dana"),
                                  ("dana wants standups kept short", channel, "dana"),
                                  ("erin covers the Friday deploys", dm, "erin")]:
            note = app.notes.propose(text, place, user=user, author_name=user,
                                     source="🧠 reaction", session_id=None, speakers=[user])
            if "standups" not in text:  # dana's channel note stays proposed
                app.notes.decide(note.id, keep=True, by="UFOUNDER")
    finally:
        app.close()


async def _mcp_as_dana(home: Path) -> tuple[str, str]:
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "bridge", "mcp", "--user", "dana"],
                                   env=_env(home))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        recalled = await session.call_tool("recall", {"query": "locker code standup"})
        known = await session.call_tool("what_do_you_know_about_me", {})
    return (" ".join(part.text for part in recalled.content),  # type: ignore[union-attr]
            " ".join(part.text for part in known.content))  # type: ignore[union-attr]


def test_forget_me_deletes_her_dms_facts_and_notes_and_says_what_it_kept(
    isolated_environment: Path, tmp_path: Path, fake_anthropic: FakeAnthropic,
) -> None:
    home = isolated_environment
    _chat_as_dana(home, fake_anthropic, LOCKER)
    _seed(home, tmp_path)
    memory = home / "brain" / "persona" / "MEMORY.md"
    assert "locker by the window" in memory.read_text()
    assert LOCKER in _cli("recall", "locker code", "--user", "dana")

    said = _cli("people", "forget", "dana")

    assert "deleted 1 exchange(s) and 1 session(s) of their DMs with Thoth" in said
    # (Her facts: the one seeded, and what the identity layer drew from her turn.)
    assert "2 note(s), 2 fact(s)" in said and "1 MCP token(s) revoked" in said
    assert "Kept: 1 exchange(s) in channels and group DMs" in said
    # Her DM is gone, as she would look for it; her words in the channel stay.
    assert LOCKER not in _cli("recall", "locker code", "--user", "dana")
    assert LOCKER not in _cli("recall", "locker code", "--all")
    assert STANDUP in _cli("recall", "standup", "--user", "dana")
    recalled, known = asyncio.run(_mcp_as_dana(home))
    assert "4417" not in recalled and STANDUP in recalled
    assert "one line" not in known
    # Her notes: the kept one's line left MEMORY.md; erin's note stays.
    record = memory.read_text()
    assert "locker by the window" not in record and "erin covers the Friday deploys" in record
    assert "standups kept short" not in _cli("notes", "list", "--all")
    # The next turn's prompt carries nothing of what she had forgotten.
    request = _chat_as_dana(home, fake_anthropic, "what is my locker code?")
    for forgotten in ("4417", "by the window", "one line", "standups kept short"):
        assert forgotten not in request, forgotten
    # Nobody else's memory went with hers.
    assert PARKING in _cli("recall", "parking spot", "--all")
    assert "black" in _cli("people", "show", "erin")
    assert "revoked" in _cli("tokens", "list")
    app = build(Settings(_env_file=None))  # type: ignore[call-arg]
    try:
        (entry,) = app.audit.entries(action="person.forget")
        assert entry.target == "person:local:dana" and entry.detail.startswith("deleted 1 ")
    finally:
        app.close()


def test_a_terminal_session_two_logins_spoke_in_is_not_one_persons_dm(
    isolated_environment: Path,
) -> None:
    from layers.working.transcript import TranscriptTurn

    app = build(Settings(_env_file=None))  # type: ignore[call-arg]
    try:
        terminal = Place(LOCAL_TEAM, "terminal", "im")
        shared = app.sessions.open("terminal:shared", terminal)
        own = app.sessions.open("terminal:own", terminal)
        for session, user in ((shared, "dana"), (shared, "erin"), (own, "dana")):
            app.transcript.append(session.id, TranscriptTurn(
                user_text=f"{user} was here", reply_text="ok", ok=True, user=user,
                user_name=user, created_at=1_800_000_000.0))
        assert app.sessions.dm_sessions_of(LOCAL_TEAM, "dana") == [own.id]
        asyncio.run(app.forgetting.forget([Person(LOCAL_TEAM, "dana")], actor="test",
                                          origin="test"))
        assert app.sessions.get(own.id) is None
        assert [turn.user for turn in app.transcript.turns(shared.id)] == ["dana", "erin"]
    finally:
        app.close()


def test_forget_me_takes_the_tools_she_always_allowed_and_her_waiting_asks(
    isolated_environment: Path,
) -> None:
    from bridge.team_tools.asks import Asks
    from bridge.team_tools.grants import Grants

    app = build(Settings(_env_file=None))  # type: ignore[call-arg]
    try:
        grants, asks = Grants(app.db), Asks(app.db)
        place = Place(LOCAL_TEAM, "terminal", "im")
        for user in ("dana", "erin"):
            grants.grant(LOCAL_TEAM, user, "github", "create_issue")
            asks.ask(place, f"terminal:{user}", user, user, "github", "create_issue",
                     {"title": f"{user}'s issue"})
        asyncio.run(app.forgetting.forget([Person(LOCAL_TEAM, "dana")], actor="test",
                                          origin="test"))
        assert grants.of_person(LOCAL_TEAM, "dana") == []
        assert [g.user for g in grants.of_person(LOCAL_TEAM, "erin")] == ["erin"]
        with app.db.read() as conn:
            left = [str(row[0]) for row in conn.execute("SELECT asker FROM tool_asks")]
        assert left == ["erin"]
    finally:
        app.close()


def test_forget_me_takes_what_she_said_while_the_model_was_overloaded(
    isolated_environment: Path,
) -> None:
    """A message queued to be answered later (bridge/pipeline/answer_later.py) is hers:
    forgotten, it is never answered, recorded or sent to the model."""
    from bridge.pipeline.answer_later_store import AnswerLaterStore

    app = build(Settings(_env_file=None))  # type: ignore[call-arg]
    try:
        queue = AnswerLaterStore(app.db, owner="test")
        for user in ("dana", "erin"):
            assert queue.add(f"Ev-{user}", f"slack:{LOCAL_TEAM}:C1:1.0", {"text": LOCKER},
                             team=LOCAL_TEAM, user=user)
        asyncio.run(app.forgetting.forget([Person(LOCAL_TEAM, "dana")], actor="test",
                                          origin="test"))
        with app.db.read() as conn:
            left = [str(row[0]) for row in conn.execute('SELECT "user" FROM answer_later')]
        assert left == ["erin"]
    finally:
        app.close()
