"""No secret of the corpus is stored or shown, whichever way it comes in or goes out.

Every kind in ``tests/secret_corpus.py`` is pushed through every write path — typed
into ``thoth chat`` and echoed by the model, imported with ``thoth episodes import``,
reported by reflection as memory notes (MEMORY.md), persona observations, facts about
the person and a skill draft that is then approved into the brain — with logging on.
Then everything under THOTH_HOME is read byte by byte, with ``git log -p`` of the
brain, and every way out is run (export, ``people show``, ``skills show``, recall).
"""

from __future__ import annotations

import io
import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.cli.main import main
from bridge.settings import Settings
from layers.shared.embedding.embedder import MiniLMEmbedder
from tests.secret_corpus import SECRETS, Seeded
from tests.servers import anthropic_api as api
from tests.servers.anthropic_api import FakeAnthropic

USER = "dana"
BATCH = 5  # a report keeps at most five memory notes


def _batches() -> Iterator[tuple[int, tuple[Seeded, ...]]]:
    for start in range(0, len(SECRETS), BATCH):
        yield start // BATCH, SECRETS[start : start + BATCH]


def _run(
    settings: Settings, embedder: MiniLMEmbedder, *argv: str, stdin: str = ""
) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    real_stdin = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        code = main(["-v", *argv], settings=settings, stdout=out, stderr=err, embedder=embedder)
    finally:
        sys.stdin = real_stdin
    return code, out.getvalue() + err.getvalue()


def _one_line(seeded: Seeded) -> str:
    # A piped chat line ends at a line break: a PEM block is typed as its one-line
    # JSON form, the way it is pasted from a service-account file.
    return seeded.text.replace("\n", "\\n")


def _leaks(text: str) -> list[str]:
    """The kinds whose secret, or any twelve characters of it, appear in ``text``."""
    found = []
    for seeded in SECRETS:
        secret = seeded.secret
        pieces = {secret[i : i + 12] for i in range(max(1, len(secret) - 11))}
        if any(piece in text for piece in pieces):
            found.append(seeded.kind)
    return found


def _everything_under(home: Path) -> str:
    texts = [path.read_bytes().decode("utf-8", "replace") for path in home.rglob("*")
             if path.is_file()]
    history = subprocess.run(
        ["git", "-C", str(home / "brain"), "log", "-p", "--all", "--format=%B"],
        capture_output=True, text=True, check=True,
    ).stdout
    return "\n".join([*texts, history])


@pytest.fixture(scope="module")
def seeded_home(
    minilm: MiniLMEmbedder, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Settings, str]]:
    """Seeded once for the module: the tests only read what it left."""
    tmp_path = tmp_path_factory.mktemp("secrets")
    with FakeAnthropic() as fake_anthropic:
        settings = Settings(
            _env_file=None,  # type: ignore[call-arg]
            thoth_home=tmp_path / "thoth-home",
            anthropic_api_key="sk-ant-test-key",
            anthropic_base_url=fake_anthropic.url,
            model_timeout_s=5,
        )
        yield settings, _seed_everything(settings, minilm, fake_anthropic, tmp_path)


def _seed_everything(
    settings: Settings, minilm: MiniLMEmbedder, fake_anthropic: FakeAnthropic, tmp_path: Path
) -> str:
    shown: list[str] = []
    assert _run(settings, minilm, "init")[0] == 0
    for number, batch in _batches():
        for seeded in batch:
            fake_anthropic.push(api.text(f"Noted, I will keep this safe: {seeded.text}"))
        code, output = _run(settings, minilm, "chat", "--user", USER,
                            stdin="".join(_one_line(seeded) + "\n" for seeded in batch))
        assert code == 0, output
        shown.append(output)
        with sqlite3.connect(settings.db_path) as conn:
            (session_id,) = conn.execute(
                "SELECT id FROM sessions ORDER BY started_at DESC LIMIT 1").fetchone()
        texts = [seeded.text for seeded in batch]
        fake_anthropic.push(api.tool_use("report_reflection", {
            "outcome": "success",
            "what_worked": " ".join(texts),
            "memory_notes": texts,
            "persona_observations": texts,
            "user_model_updates": {USER: texts},
            "should_skill": True,
            "skill_slug": f"handle-credentials-{number}",
            "skill_description": f"Where the credentials live: {texts[0]}",
            # A skill body is at least 120 characters, however short the batch's secrets.
            "skill_body": "# Handling credentials\n\nEach of these belongs in the vault, never"
                          " in a chat message or a ticket; rotate any that was pasted:\n\n"
                          + "\n\n".join(texts),
        }))
        code, output = _run(settings, minilm, "reflect", session_id)
        assert code == 0, output
        shown.append(output)
        # Every note the report proposed is kept, so MEMORY.md carries them (as markers).
        code, listing = _run(settings, minilm, "notes", "list", "--json")
        assert code == 0, listing
        shown.append(listing)
        for note in json.loads(listing.splitlines()[-1]):
            code, output = _run(settings, minilm, "notes", "approve", note["id"])
            assert code == 0, output
            shown.append(output)
    episodes = tmp_path / "episodes.jsonl"
    episodes.write_text("".join(
        json.dumps({"id": f"imported-{index}", "user_text": seeded.text,
                    "summary": f"shared {seeded.kind}: {seeded.text}",
                    "created_at": "2026-11-01T10:00:00Z"}) + "\n"
        for index, seeded in enumerate(SECRETS)
    ))
    code, output = _run(settings, minilm, "episodes", "import", str(episodes))
    assert code == 0, output
    shown.append(output)
    code, output = _run(settings, minilm, "skills", "list")
    shown.append(output)
    assert len(_draft_ids(output)) == len(list(_batches()))
    for draft_id in _draft_ids(output):
        code, output = _run(settings, minilm, "skills", "approve", draft_id)
        assert code == 0, output
        shown.append(output)
    return "\n".join(shown)


def _draft_ids(listing: str) -> list[str]:
    return [line.split()[0] for line in listing.splitlines() if "handle-credentials" in line]


def test_no_secret_is_stored_anywhere_under_thoth_home(
    seeded_home: tuple[Settings, str],
) -> None:
    settings, shown = seeded_home
    stored = _everything_under(settings.thoth_home)
    assert "[REDACTED:" in stored
    assert _leaks(stored) == []
    assert _leaks(shown) == []  # what the commands printed, log records included
    # The paths really carried the secrets (as markers) to each store.
    memory = (settings.thoth_home / "brain" / "persona" / "MEMORY.md").read_text()
    assert memory.count("[REDACTED:") >= len(SECRETS) // 2


def test_no_secret_comes_back_out(
    seeded_home: tuple[Settings, str], minilm: MiniLMEmbedder
) -> None:
    settings, _ = seeded_home
    outputs = [
        _run(settings, minilm, "episodes", "export"),
        _run(settings, minilm, "people", "show", USER),
        _run(settings, minilm, "people", "show", USER, "--json"),
        _run(settings, minilm, "skills", "list"),
        _run(settings, minilm, "recall", "credentials token password key"),
    ]
    outputs += [_run(settings, minilm, "skills", "show", f"handle-credentials-{number}")
                for number, _ in _batches()]
    assert all(code == 0 for code, _ in outputs), outputs
    printed = "\n".join(output for _, output in outputs)
    assert "[REDACTED:" in printed
    assert _leaks(printed) == []

