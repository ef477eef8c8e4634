"""A member's own page in the console: everything Thoth keeps about her on one page, and
"forget me" said first (what goes, what stays and why), then done, then said again."""

from __future__ import annotations

import asyncio
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from bridge.access.signed_in import SignedInPerson
from bridge.app import Thoth, build
from bridge.cli.main import main
from bridge.console import csrf
from bridge.settings import Settings
from layers.identity.protocol import Person
from layers.shared.places import LOCAL_TEAM, Place
from tests.fakes import HashingEmbedder
from tests.integration.console_sessions import FORM_TOKEN, signed_in_clients

DANA = SignedInPerson("slack:dana", "dana", sees_everything=False, founder=False,
                      team=LOCAL_TEAM, user="dana")


@pytest.fixture
def thoth(isolated_environment: Path, tmp_path: Path) -> Iterator[Thoth]:
    lines = [{"id": episode_id, "user_text": text, "summary": "", "team": LOCAL_TEAM,
              "channel": channel, "channel_type": kind, "user": user, "user_name": user,
              "created_at": f"2026-11-2{number}T10:00:00+00:00"}
             for number, (episode_id, text, channel, kind, user) in enumerate([
                 ("dm", "my locker code is 4417", "terminal", "im", "dana"),
                 ("standup", "the standup moves to 10am", "C1", "public", "dana"),
                 ("erin-dm", "erin parks in spot B12", "terminal", "im", "erin")])]
    episodes = tmp_path / "episodes.jsonl"
    episodes.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    out = io.StringIO()
    assert main(["episodes", "import", str(episodes)], stdout=out, stderr=out,
                embedder=HashingEmbedder()) == 0, out.getvalue()
    app = build(Settings(_env_file=None), embedder=HashingEmbedder())  # type: ignore[call-arg]
    assert app.identity is not None
    asyncio.run(app.identity.observe(Person(LOCAL_TEAM, "dana"), ["prefers one-line answers"],
                                     session_id=None, source="test"))
    app.notes.propose("dana keeps her locker by the window", Place(LOCAL_TEAM, "terminal", "im"),
                      user="dana", author_name="dana", source="🧠 reaction", session_id=None,
                      speakers=["dana"])
    app.mcp_tokens.make(LOCAL_TEAM, "dana", label="laptop", made_by="slack:dana", origin="test")
    yield app
    app.close()


@pytest.fixture
def dana(thoth: Thoth) -> Iterator[TestClient]:
    with signed_in_clients(thoth) as client:
        yield client(DANA)


def _text(page: str, element_id: str) -> str:
    found = re.search(rf'<(\w+)[^>]*id="{element_id}"[^>]*>(.*?)</\1>', page, re.S)
    return "" if found is None else re.sub(r"<[^>]+>", " ", found.group(2))


def test_her_page_shows_everything_kept_about_her_and_forget_me_asks_first(
    dana: TestClient, thoth: Thoth,
) -> None:
    page = dana.get("/people").text
    assert "prefers one-line answers" in page
    assert "learned in no conversation (added by hand)" in page
    assert "locker by the window" in _text(page, "own-notes")
    said = _text(page, "own-episodes")
    assert "4417" in said and "standup" in said and "B12" not in said  # erin's DM is hers
    assert "laptop" in page and "live" in page

    asked = dana.get("/people/local/dana/forget")
    assert asked.status_code == 200
    assert "Forgetting deletes 1 exchange(s) and 0 session(s) of their DMs with Thoth," \
        " 1 note(s), 1 fact(s), and revokes 1 MCP token(s)." in asked.text
    assert "Kept: 1 exchange(s) in channels" in asked.text
    # Asking deleted nothing.
    assert "prefers one-line answers" in dana.get("/people").text

    done = dana.post("/people/local/dana/forget", data={csrf.FIELD: FORM_TOKEN})
    assert done.status_code == 303
    after = dana.get(done.headers["location"]).text
    assert "deleted 1 exchange(s)" in _text(after, "said")
    assert "prefers one-line answers" not in after
    assert "locker by the window" not in after and "4417" not in after
    assert "the standup moves to 10am" in _text(after, "own-episodes")  # kept, as said
    assert "laptop · made" in after and "revoked" in after
    memory = thoth.episodic.store.get("erin-dm")
    assert memory is not None  # nobody else's


def test_another_persons_forget_is_not_hers_to_ask_for(dana: TestClient) -> None:
    assert dana.get("/people/local/erin/forget").status_code == 403
    refused = dana.post("/people/local/erin/forget", data={csrf.FIELD: FORM_TOKEN})
    assert refused.status_code == 403


def test_she_withdraws_a_note_she_asked_for_from_her_page(
    dana: TestClient, thoth: Thoth,
) -> None:
    (note,) = thoth.notes.store.of_person(LOCAL_TEAM, "dana", [])
    assert "Withdraw…" in dana.get("/people").text
    done = dana.post(f"/people/local/dana/notes/{note.id}/withdraw",
                     data={csrf.FIELD: FORM_TOKEN})
    assert done.status_code == 303
    assert "Withdrawn: that note is out of memory." in dana.get(done.headers["location"]).text
    withdrawn = thoth.notes.store.get(note.id)
    assert withdrawn is not None and withdrawn.status == "rejected"
    # Nobody else's: erin's page is not hers, and a note id of someone else's is refused.
    assert dana.post(f"/people/local/erin/notes/{note.id}/withdraw",
                     data={csrf.FIELD: FORM_TOKEN}).status_code == 403
