"""Bad input ends in one clear line naming the problem and the fix, a non-zero exit, no
traceback, and nothing stored changed (issue 13, first paths)."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.cli.main import main
from tests.fakes import HashingEmbedder


def _checksum(home: Path) -> str:
    return hashlib.sha256((home / "thoth.db").read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("dotenv", "expected"),
    [
        (b"MODEL_PRICES=not json\n", "MODEL_PRICES (from .env) is not valid JSON"),
        (b"DAILY_COST_CAP_USD=\xff\xfe\n", ".env file is not valid UTF-8"),
        (b"DAILY_COST_CAP_USD=lots\n", "DAILY_COST_CAP_USD"),
        (b"RECALL_TOP_K=3\nthis is not a setting\n", "line 2 of .env is not KEY=value"),
    ],
    ids=["not-json", "not-utf8", "not-a-number", "not-a-setting"],
)
def test_a_dotenv_with_a_bad_value_gets_one_line_and_changes_nothing(
    isolated_environment: Path, dotenv: bytes, expected: str
) -> None:
    assert main(["init"], stdout=io.StringIO(), embedder=HashingEmbedder()) == 0
    before = _checksum(isolated_environment)
    Path(".env").write_bytes(dotenv)  # the tests' working directory is their own
    err = io.StringIO()
    code = main(["recall", "deploys"], stdout=io.StringIO(), stderr=err,
                embedder=HashingEmbedder())
    lines = err.getvalue().splitlines()
    assert code != 0 and len(lines) == 1, lines
    assert lines[0].startswith("error: ") and expected in lines[0]
    assert "Traceback" not in err.getvalue()
    assert _checksum(isolated_environment) == before


def test_a_piped_chat_line_that_is_not_utf8_is_refused_and_the_rest_goes_on(
    isolated_environment: Path,
) -> None:
    environment = {**os.environ, "THOTH_HOME": str(isolated_environment),
                   "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "bridge", "chat"],
        input=b"secret plans \xff\xfe here\nthe deploy is on Friday\n",
        capture_output=True, env=environment, cwd=isolated_environment.parent, timeout=120,
    )
    errors = [line for line in done.stderr.decode().splitlines() if line.startswith("error:")]
    assert done.returncode == 2
    assert errors == ["error: the message is not valid UTF-8 (at character 14); send it as UTF-8"]
    assert b"Traceback" not in done.stderr
    stored = (isolated_environment / "thoth.db").read_bytes()
    assert b"secret plans" not in stored and b"the deploy is on Friday" in stored


def _not_a_database(db: Path) -> None:
    db.write_bytes(b"this is not a database at all, just text of some length" * 4)


def _damaged_pages(db: Path) -> None:
    # Pages past the header, which opening the file alone never reads.
    with db.open("r+b") as file:
        file.seek(4096 * 3)
        file.write(b"\x00garbage" * 1_000)


def _truncated(db: Path) -> None:
    with db.open("r+b") as file:
        file.truncate(5_000)


COMMANDS_THAT_OPEN_THE_DATABASE = {
    "recall": ["recall", "deploys"],
    "export": ["episodes", "export"],
    "import": ["episodes", "import", "episodes.jsonl"],
    "chat": ["chat"],
    "serve": ["serve"],
}


@pytest.mark.parametrize("damage", [_not_a_database, _damaged_pages, _truncated],
                         ids=["header", "pages", "truncated"])
@pytest.mark.parametrize("command", COMMANDS_THAT_OPEN_THE_DATABASE.values(),
                         ids=COMMANDS_THAT_OPEN_THE_DATABASE.keys())
def test_a_damaged_database_is_named_with_how_to_restore_and_left_as_it_was(
    isolated_environment: Path, damage: object, command: list[str]
) -> None:
    Path("episodes.jsonl").write_text(
        '{"id": "e1", "user_text": "deploys are on Fridays", "summary": "deploy day"}\n'
    )
    assert main(["init"], stdout=io.StringIO(), embedder=HashingEmbedder()) == 0
    db = isolated_environment / "thoth.db"
    damage(db)  # type: ignore[operator]
    before = _checksum(isolated_environment)
    err = io.StringIO()
    code = main(command, stdout=io.StringIO(), stderr=err, embedder=HashingEmbedder())
    lines = err.getvalue().splitlines()
    assert code == 1 and len(lines) == 1, lines
    assert f"the database {db} is damaged" in lines[0] and "thoth init" in lines[0]
    assert _checksum(isolated_environment) == before


def test_doctor_runs_sqlites_integrity_check(isolated_environment: Path) -> None:
    assert main(["init"], stdout=io.StringIO(), embedder=HashingEmbedder()) == 0
    db = isolated_environment / "thoth.db"
    _damaged_pages(db)
    err = io.StringIO()
    code = main(["doctor"], stdout=io.StringIO(), stderr=err, embedder=HashingEmbedder())
    assert code == 1 and f"the database {db} is damaged" in err.getvalue()


def _mid_merge(brain: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(brain), *args], check=False, capture_output=True,
                       env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})

    memory = brain / "persona" / "MEMORY.md"
    git("switch", "-c", "other")
    memory.write_text("one side\n")
    git("commit", "-am", "one side")
    git("switch", "-")
    memory.write_text("the other side\n")
    git("commit", "-am", "the other side")
    git("merge", "other")
    assert (brain / ".git" / "MERGE_HEAD").exists()


def _detached_head(brain: Path) -> None:
    subprocess.run(["git", "-C", str(brain), "checkout", "--detach", "HEAD"], check=True,
                   capture_output=True)


def _not_a_repository(brain: Path) -> None:
    shutil.rmtree(brain / ".git")


@pytest.mark.parametrize(
    ("breakage", "expected"),
    [(_mid_merge, "in the middle of a merge"), (_detached_head, "has a detached HEAD"),
     (_not_a_repository, "is not a git repository")],
    ids=["mid-merge", "detached-head", "not-a-repository"],
)
@pytest.mark.parametrize("command", [["chat"], ["serve"]], ids=["chat", "serve"])
def test_a_brain_that_cannot_take_a_commit_stops_chat_and_serve_in_one_line(
    isolated_environment: Path, breakage: object, expected: str, command: list[str]
) -> None:
    assert main(["init"], stdout=io.StringIO(), embedder=HashingEmbedder()) == 0
    breakage(isolated_environment / "brain")  # type: ignore[operator]
    before = _checksum(isolated_environment)
    err = io.StringIO()
    code = main(command, stdout=io.StringIO(), stderr=err, embedder=HashingEmbedder())
    lines = err.getvalue().splitlines()
    assert code == 1 and len(lines) == 1, lines
    assert lines[0].startswith("error: the brain at") or lines[0].startswith("error: /")
    assert expected in lines[0] and "git" in lines[0]
    assert _checksum(isolated_environment) == before
    # Commands that never write the brain still run.
    assert main(["recall", "deploys"], stdout=io.StringIO(), stderr=io.StringIO(),
                embedder=HashingEmbedder()) == 0


def _run_on_read_only_home(home: Path, command: list[str]) -> subprocess.CompletedProcess[str]:
    """Run ``thoth COMMAND`` with ``home`` read-only for it.

    Root writes through file modes, so for root the home is a read-only bind mount in
    a mount namespace of the command's own (unshare); anyone else gets the modes.
    """
    environment = {**os.environ, "THOTH_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    thoth = [sys.executable, "-m", "bridge", *command]
    if os.geteuid() != 0:
        subprocess.run(["chmod", "-R", "a-w", str(home)], check=True)
        try:
            return subprocess.run(thoth, capture_output=True, text=True, env=environment,
                                  cwd=home.parent, input="hello\n", timeout=120)
        finally:
            subprocess.run(["chmod", "-R", "u+w", str(home)], check=True)
    mount = f"mount --bind {home} {home} && mount -o remount,bind,ro {home} && exec \"$@\""
    probe = subprocess.run(["unshare", "--mount", "sh", "-c", mount, "sh", "true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"root here cannot make a read-only mount: {probe.stderr.strip()}")
    return subprocess.run(["unshare", "--mount", "sh", "-c", mount, "sh", *thoth],
                          capture_output=True, text=True, env=environment, cwd=home.parent,
                          input="hello\n", timeout=120)


@pytest.mark.parametrize("database_in_use", [False, True], ids=["closed", "open-elsewhere"])
@pytest.mark.parametrize("command", [["chat"], ["serve"]], ids=["chat", "serve"])
def test_a_read_only_home_stops_chat_and_serve_in_one_line(
    isolated_environment: Path, command: list[str], database_in_use: bool
) -> None:
    assert main(["init"], stdout=io.StringIO(), embedder=HashingEmbedder()) == 0
    before = _checksum(isolated_environment)
    # Open elsewhere (serve beside this chat), the WAL files exist, and SQLite opens the
    # read-only file without a word: it would fail only at the first write.
    reader = sqlite3.connect(isolated_environment / "thoth.db") if database_in_use else None
    try:
        if reader is not None:
            reader.execute("SELECT count(*) FROM sessions").fetchall()
            assert (isolated_environment / "thoth.db-wal").exists()
        done = _run_on_read_only_home(isolated_environment, command)
    finally:
        if reader is not None:
            reader.close()
    lines = done.stderr.splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert str(isolated_environment) in lines[0] and "writable" in lines[0]
    assert _checksum(isolated_environment) == before
