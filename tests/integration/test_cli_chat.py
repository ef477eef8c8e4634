"""`thoth chat` as a real subprocess: piped stdin, a pseudo-terminal, and two runs in a row."""

from __future__ import annotations

import contextlib
import io
import os
import pty
import re
import select
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest
from fpdf import FPDF

from bridge import messages
from bridge.all_tables import ALL_SCHEMAS
from bridge.cli.main import main
from bridge.settings import Settings
from layers.shared.embedding.embedder import MiniLMEmbedder
from tests.postgres import PostgresForTests
from tests.servers import anthropic_api as api
from tests.servers.anthropic_api import FakeAnthropic
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.model
SECRET = "sk-ant-api03-" + "k" * 40 + "-" + "Q" * 40 + "AA"


def _env(home: Path, fake: FakeAnthropic | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "THOTH_"))}
    env.update(THOTH_HOME=str(home), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    if fake is not None:
        env.update(ANTHROPIC_API_KEY="sk-ant-test-key", ANTHROPIC_BASE_URL=fake.url)
    return env


def chat(
    home: Path, stdin: str, fake: FakeAnthropic | None = None, *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bridge", "chat", *args],
        cwd=home.parent,
        env=_env(home, fake),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=180,
    )


def _session_ids(home: Path) -> list[str]:
    with sqlite3.connect(home / "thoth.db") as conn:
        return [row[0] for row in conn.execute("SELECT id FROM sessions ORDER BY started_at")]


def test_a_second_run_sees_the_first_runs_episodes(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    home = tmp_path / "home"
    fake_anthropic.push(api.text("Noted: canary first."), api.text("Noted: Grafana."))
    first = chat(
        home,
        "We decided to ship the billing service behind a canary first.\n"
        "The dashboards live in Grafana.\n",
        fake_anthropic,
    )
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == ["Noted: canary first.", "Noted: Grafana."]

    second = chat(home, "How are we shipping billing?\nAnd then?\n", fake_anthropic)
    assert second.returncode == 0, second.stderr

    opening, follow_up = fake_anthropic.requests[2:]
    related = [t for t in opening.context_texts() if t.startswith("<related-episodes>")]
    assert related and "billing service behind a canary" in related[0]
    assert not any(t.startswith("<related-episodes>") for t in follow_up.context_texts())
    assert len(_session_ids(home)) == 2


def test_offline_chat_says_so_and_shows_what_memory_holds(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert chat(home, "Our on-call rotation changes every Monday at 10:00.\n").returncode == 0

    offline = chat(home, "when does the on-call rotation change?\n")
    assert offline.returncode == 0, offline.stderr
    assert messages.NO_MODEL_CONFIGURED in offline.stdout
    assert "on-call rotation changes every Monday" in offline.stdout


def test_resume_a_session_and_refuse_bad_lines_without_losing_the_rest(
    tmp_path: Path, fake_anthropic: FakeAnthropic
) -> None:
    home = tmp_path / "home"
    assert chat(home, "Remember the launch is on the 3rd.\n", fake_anthropic).returncode == 0
    (session_id,) = _session_ids(home)

    resumed = chat(
        home, "x" * 50_000 + "\n/bogus\nWhen is the launch?\n", fake_anthropic, "--session",
        session_id,
    )
    assert resumed.returncode == 2
    errors = resumed.stderr.strip().splitlines()
    assert any("50000 characters" in line for line in errors)
    assert any("unknown command /bogus" in line for line in errors)
    last = fake_anthropic.requests[-1].conversation()
    assert last[0]["content"] == "Remember the launch is on the 3rd."
    assert last[-1]["content"] == "When is the launch?"

    done = chat(home, "/done\n", fake_anthropic, "--session", session_id)
    assert done.returncode == 0 and messages.SESSION_ENDED in done.stdout
    again = chat(home, "hello\n", fake_anthropic, "--session", session_id)
    assert again.returncode == 2 and "has ended" in again.stderr
    missing = chat(home, "hello\n", fake_anthropic, "--session", "no-such-session")
    assert missing.returncode == 2 and "no session" in missing.stderr


def test_interactive_chat_in_a_terminal(tmp_path: Path, fake_anthropic: FakeAnthropic) -> None:
    home = tmp_path / "home"
    fake_anthropic.push(api.text("Hello from the model, streamed in pieces.", chunk_chars=5))
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "bridge", "chat"],
        cwd=tmp_path,
        env=_env(home, fake_anthropic),
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        close_fds=True,
    )
    os.close(terminal)
    screen = _Screen(controller)
    try:
        screen.wait_for("you> ")
        assert "/recall QUERY" in screen.text  # the banner
        os.write(controller, b"hello there\r")
        screen.wait_for("thoth> Hello from the model, streamed in pieces.")
        screen.wait_for("you> ", after=screen.text.index("streamed in pieces."))
        os.write(controller, f"the key is {SECRET}\r".encode())
        screen.wait_for("thoth> You said: the key is")
        os.write(controller, b"/recall hello there\r")
        screen.wait_for(": hello there")
        os.write(controller, b"/quit\r")
        assert process.wait(timeout=60) == 0
        screen.wait_for("thoth chat --session")
    finally:
        if process.poll() is None:
            process.kill()
        os.close(controller)
    history = (home / "chat_history").read_text()
    assert "hello there" in history
    assert SECRET not in history and "the key is [REDACTED" in history


class _Screen:
    """What a pseudo-terminal has printed so far."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self.text = ""

    def wait_for(self, needle: str, *, after: int = 0, timeout_s: float = 90.0) -> None:
        deadline = time.monotonic() + timeout_s
        while needle not in self.text[after:]:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"{needle!r} never appeared; screen:\n{self.text[-2000:]}")
            ready, _, _ = select.select([self._fd], [], [], remaining)
            if ready:
                try:
                    chunk = os.read(self._fd, 4096)
                except OSError:
                    chunk = b""
                if not chunk:
                    if needle not in self.text[after:]:
                        raise AssertionError(f"terminal closed before {needle!r}:\n{self.text}")
                    return
                self.text += chunk.decode(errors="replace").replace("\r\n", "\n")


def test_recall_at_the_terminal_finds_what_chat_was_told(
    tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    home = tmp_path / "home"
    told = chat(home, "our staging database lives on pelican-db-7\n")  # offline, no model
    assert told.returncode == 0, told.stderr
    found = subprocess.run(
        [sys.executable, "-m", "bridge", "recall", "where is the staging database"],
        cwd=home.parent, env=_env(home, None), capture_output=True, text=True, timeout=180,
    )
    assert found.returncode == 0 and "pelican-db-7" in found.stdout, found.stdout + found.stderr

    settings = Settings(_env_file=None, thoth_home=home)  # type: ignore[call-arg]

    def recall(*options: str) -> str:
        out = io.StringIO()
        code = main(["recall", "staging database", *options], settings=settings, stdout=out,
                    stderr=io.StringIO(), embedder=minilm)
        assert code == 0
        return out.getvalue()

    # Slack's rule still holds for anyone else: a DM is not seen from a public channel,
    # nor by another person; the operator's view sees everything.
    assert "pelican-db-7" not in recall("--channel", "C1", "--channel-type", "public")
    assert "pelican-db-7" not in recall("--user", "someone-else")
    assert "pelican-db-7" in recall("--all")


def test_chat_exits_at_once_when_honcho_hangs_and_keeps_what_was_not_sent(
    tmp_path: Path,
) -> None:
    # A Honcho that takes connections and never answers.
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []

    def hold_connections() -> None:
        with contextlib.suppress(OSError):  # the listener closed: the test is over
            while True:
                accepted.append(listener.accept()[0])

    threading.Thread(target=hold_connections, daemon=True).start()
    home = tmp_path / "home"
    env = {**_env(home, None), "HONCHO_URL": f"http://127.0.0.1:{listener.getsockname()[1]}",
           "HONCHO_API_KEY": "k"}
    process = subprocess.Popen([sys.executable, "-m", "bridge", "chat", "--user", "dana"],
                               cwd=tmp_path, env=env, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdin is not None
        process.stdin.write("I prefer short answers.\n")
        process.stdin.flush()

        def answered() -> bool:
            try:  # the file exists a moment before its tables do
                with sqlite3.connect(home / "thoth.db") as conn:
                    return bool(conn.execute("SELECT count(*) FROM episodes").fetchone()[0])
            except sqlite3.OperationalError:
                return False

        wait_until(answered, 120)
        started = time.monotonic()
        process.stdin.close()
        process.wait(timeout=60)
        exit_s = time.monotonic() - started
    finally:
        if process.poll() is None:
            process.kill()
        listener.close()
    stderr = process.stderr.read() if process.stderr else ""
    # The wait for Honcho is 1.5 s (about 2 s to exit, seen quiet); before, the exit
    # waited 30 s. The bound sits between, so a loaded machine's slow teardown of the
    # interpreter does not fail it and the old wait would.
    assert exit_s < 15, exit_s
    assert process.returncode == 0
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("1 turn(s) not yet sent")
    assert "sent when Thoth next starts" in lines[-1]
    with sqlite3.connect(home / "thoth.db") as conn:
        assert conn.execute("SELECT count(*) FROM identity_outbox").fetchone()[0] == 1


def test_with_database_url_every_command_keeps_its_memory_in_postgresql(
    tmp_path: Path, postgres: PostgresForTests
) -> None:
    home, url = tmp_path / "home", postgres.fresh_database()

    def thoth(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "bridge", *args], cwd=home.parent,
            env={**_env(home, None), "DATABASE_URL": url}, input=stdin,
            capture_output=True, text=True, timeout=180,
        )

    told = thoth("chat", stdin="our staging database lives on pelican-db-7\n")
    assert told.returncode == 0, told.stderr
    found = thoth("recall", "where is the staging database")
    assert found.returncode == 0 and "pelican-db-7" in found.stdout, found.stdout + found.stderr
    assert not (home / "thoth.db").exists()  # nothing went to a SQLite file
    with psycopg.connect(url) as conn:
        (episodes,) = conn.execute("SELECT count(*) FROM episodes").fetchone()
        (turns,) = conn.execute("SELECT count(*) FROM transcript_turns").fetchone()
    assert (episodes, turns) == (1, 1)
    doctor = thoth("doctor")
    assert "postgresql://" in doctor.stdout and "1 episodes" in doctor.stdout, doctor.stdout
    # The engine as it is: its version, pgvector, the pool, every migration applied.
    assert "(PostgreSQL 16." in doctor.stdout and "pgvector 0.6" in doctor.stdout
    known = sum(len(schema.migrations) for schema in ALL_SCHEMAS)
    assert "pool " in doctor.stdout and f"{known} of {known} migrations" in doctor.stdout
    # A small index and its rows fit the test server's shared_buffers.
    assert "recall reads pgvector's HNSW index (0 MB)" in doctor.stdout
    assert "set shared_buffers" not in doctor.stdout
    # A shared database with a brain of its own: what one process approves, others miss.
    assert doctor.returncode == 1 and "but DATABASE_URL is shared" in doctor.stdout
    assert "set BRAIN_REMOTE" in doctor.stdout

    bad = subprocess.run(
        [sys.executable, "-m", "bridge", "recall", "x"], cwd=home.parent,
        env={**_env(home, None), "DATABASE_URL": "mysql://db/thoth"},
        capture_output=True, text=True, timeout=180,
    )
    assert bad.returncode == 1 and "DATABASE_URL" in bad.stderr and "postgresql://" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def _pdf(text: str, *, password: str | None = None) -> bytes:
    """A real PDF of one page saying ``text`` (made by fpdf2; locked with ``password``)."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.multi_cell(0, 10, text)
    if password is not None:
        pdf.set_encryption(owner_password="owner", user_password=password)
    return bytes(pdf.output())


def _files_kept(home: Path) -> list[tuple[str, str, str, str, str | None]]:
    """Each file kept with an episode: the episode's words, its name, kind, extract, why
    it was not read."""
    with sqlite3.connect(home / "thoth.db") as conn:
        return conn.execute(
            "SELECT e.user_text, f.name, f.kind, f.extract, f.unread FROM episode_files f"
            " JOIN episodes e ON e.rowid = f.episode_rowid ORDER BY e.created_at, f.position"
        ).fetchall()


def test_offline_chat_answers_from_a_pdf_attached_in_an_earlier_message(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "spec.pdf").write_bytes(
        _pdf("The launch deadline is March 14 and the owner is Priya."))
    (tmp_path / "locked.pdf").write_bytes(_pdf("The board's numbers.", password="hunter2"))
    (tmp_path / "folder").mkdir()
    told = chat(home, "/attach spec.pdf\n/attach locked.pdf\n/attach nowhere.pdf\n"
                      f"/attach {tmp_path / 'folder'}\n/attach\nhere is the spec\n")
    # Each bad path is one line, and refused (exit 2); the chat went on without losing
    # what was attached.
    assert told.returncode == 2, told.stderr
    assert told.stderr.splitlines() == [
        "error: cannot attach nowhere.pdf: there is no such file",
        f"error: cannot attach {tmp_path / 'folder'}: it is a directory, not a file",
        "error: /attach needs a path: /attach PATH",
    ]
    said = told.stdout.splitlines()
    assert said[:2] == ["attached spec.pdf",
                        "I could not read locked.pdf: the PDF is password-protected."]
    assert "> here is the spec" in said
    ((words, name, kind, extract, unread), locked) = _files_kept(home)
    assert (words, name, kind, unread) == ("here is the spec", "spec.pdf", "pdf", None)
    assert "March 14" in extract
    assert locked[1:3] == ("locked.pdf", "other") and locked[4] == "the PDF is password-protected"

    asked = chat(home, "when is the launch deadline?\n")
    assert asked.returncode == 0, asked.stderr
    # The evidence is the PDF's sentence, named by the file and page it is on.
    assert re.search(r"^> The launch deadline is March 14 and the owner is Priya\.\n"
                     r"— .+, in a DM, \d{4}-\d{2}-\d{2} \(spec\.pdf, page 1\)$",
                     asked.stdout, re.MULTILINE), asked.stdout


def test_chat_file_sends_a_text_file_with_the_first_message_and_a_missing_one_refuses(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("The staging database lives on pelican-db-7.\n")
    home = tmp_path / "home"
    # A line with no words sends the files attached, alone.
    sent = chat(home, "\n", None, "--file", "notes.txt")
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.splitlines()[0] == "attached notes.txt"
    assert [row[:3] for row in _files_kept(home)] == [
        ("[shared notes.txt]", "notes.txt", "text")]

    elsewhere = tmp_path / "elsewhere"
    missing = chat(elsewhere, "hello\n", None, "--file", "notes.txt", "--file", "gone.txt")
    assert missing.returncode == 2
    assert missing.stderr.strip() == "error: cannot attach gone.txt: there is no such file"
    assert not elsewhere.exists()  # refused before anything started
