"""A kept note withdrawn in the console, as removing its 🧠 does in Slack; a decision on a
note decided already says so; Undo on a note's commit withdraws the note."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from bridge.app import Thoth, build
from bridge.console import csrf
from bridge.console.dependencies import console_dependencies
from bridge.console.sign_in import OneTimeLogin
from bridge.console.web_app import console_app
from bridge.settings import Settings
from layers.procedural.brain_history import history
from layers.shared.places import LOCAL_TEAM, Place
from tests.fakes import HashingEmbedder


@pytest.fixture
def thoth(isolated_environment: Path) -> Iterator[Thoth]:
    app = build(Settings(_env_file=None), embedder=HashingEmbedder())  # type: ignore[call-arg]
    yield app
    app.close()


@pytest.fixture
def founder(thoth: Thoth) -> Iterator[tuple[TestClient, str]]:
    login = OneTimeLogin()
    with TestClient(console_app(console_dependencies(thoth), secret="s" * 32, login=login),
                    follow_redirects=False) as client:
        client.get(f"/login/{login.token}")
        page = client.get("/notes").text
        token = re.search(rf'name="{csrf.FIELD}" value="([^"]+)"', page)
        assert token is not None
        yield client, token.group(1)


def _kept(thoth: Thoth, text: str) -> str:
    note = thoth.notes.propose(text, Place(LOCAL_TEAM, "C1", "public"), user="dana",
                               author_name="dana", source="🧠 reaction", session_id=None,
                               speakers=["dana"])
    return thoth.notes.decide(note.id, keep=True, by="a founder").id


def _memory(thoth: Thoth) -> str:
    return (thoth.settings.brain_path / "persona" / "MEMORY.md").read_text()


def test_a_founder_withdraws_a_kept_note_and_a_second_decision_says_why_not(
    thoth: Thoth, founder: tuple[TestClient, str],
) -> None:
    client, token = founder
    note_id = _kept(thoth, "Deploys need a second reviewer")
    assert "Deploys need a second reviewer" in _memory(thoth)
    assert "Withdraw…" in client.get("/notes?status=kept").text

    refused = client.post(f"/notes/{note_id}/reject", data={csrf.FIELD: token})
    assert refused.status_code == 409
    assert "this note is kept already: withdraw it to take it out of memory" in refused.text

    done = client.post(f"/notes/{note_id}/withdraw", data={csrf.FIELD: token})
    assert done.status_code == 303
    assert "Deploys need a second reviewer" not in _memory(thoth)
    withdrawn = thoth.notes.store.get(note_id)
    assert withdrawn is not None and withdrawn.status == "rejected"
    (entry,) = thoth.audit.entries(action="note.withdraw")
    assert entry.target == f"note:{note_id}"
    again = client.post(f"/notes/{note_id}/withdraw", data={csrf.FIELD: token})
    assert again.status_code == 409 and "nothing to withdraw" in again.text


def test_undo_on_a_notes_commit_withdraws_the_note(
    thoth: Thoth, founder: tuple[TestClient, str],
) -> None:
    client, token = founder
    note_id = _kept(thoth, "Standups are at ten")
    (newest, *_) = history(thoth.brain, limit=1)
    assert newest.files == ("persona/MEMORY.md",)
    done = client.post(f"/skills/commits/{newest.sha}/revert", data={csrf.FIELD: token})
    assert done.status_code == 303, done.text
    assert "Standups are at ten" not in _memory(thoth)
    note = thoth.notes.store.get(note_id)
    assert note is not None and note.status == "rejected"
    twice = client.post(f"/skills/commits/{newest.sha}/revert", data={csrf.FIELD: token})
    assert twice.status_code == 409 and "nothing to undo" in twice.text


def test_notes_and_the_audit_log_page_on_past_their_first_page(
    thoth: Thoth, founder: tuple[TestClient, str],
) -> None:
    client, _ = founder
    for number in range(55):
        thoth.notes.propose(f"Note number {number:02d}", Place(LOCAL_TEAM, "C1", "public"),
                            user="dana", author_name="dana", source="🧠 reaction",
                            session_id=None, speakers=["dana"])
    first = client.get("/notes?status=proposed").text
    assert first.count('<li id="note-') == 50
    older = re.search(r'<a href="([^"]+)" id="older"', first)
    assert older is not None
    rest = client.get(older.group(1).replace("&amp;", "&")).text
    assert rest.count('<li id="note-') == 5 and 'id="older"' not in rest
    assert "Note number 00" in rest and "Note number 54" in first

    for number in range(130):
        thoth.audit.record(actor="operator", action="note.keep", target=f"note:{number}",
                           origin="cli")
    audit_first = client.get("/audit").text
    assert audit_first.count('<tr class="entry">') == 100
    audit_older = re.search(r'<a href="([^"]+)" id="older"', audit_first)
    assert audit_older is not None
    audit_rest = client.get(audit_older.group(1).replace("&amp;", "&")).text
    # The rest of the 130, and the sign-in line, oldest of all.
    assert audit_rest.count('<tr class="entry">') == 31 and 'id="older"' not in audit_rest
    for forged in ("yesterday", "²", str(2**64)):
        assert client.get(f"/audit?before={forged}").status_code == 400
