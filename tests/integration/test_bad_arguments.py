"""Bad arguments and files at the command line: one line, a non-zero exit, nothing changed.

Each case was found by sweeping the command line with bad input (over 200 tries);
every one of these failed before, with a traceback, an exit of 0, or a change to the
database or the brain.
"""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bridge.cli.main import main
from bridge.settings import Settings
from tests.fakes import HashingEmbedder

NOT_UTF8 = "deploy \udcff\udcfe day"  # how Python hands on argv bytes that are not UTF-8


@dataclass(frozen=True)
class Case:
    argv: list[str]
    expected: str  # in the one error line
    code: int = 2
    stdin: str = ""
    files: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)


CASES = {
    "export-disk-full": Case(["episodes", "export", "-o", "/dev/full"], "cannot write /dev/full"),
    "argument-not-utf8": Case(["recall", NOT_UTF8], "argument 2 is not valid UTF-8"),
    "user-not-utf8": Case(["chat", "--user", NOT_UTF8], "argument 3 is not valid UTF-8"),
    "remove-parent": Case(["skills", "remove", "../persona"], "must match"),
    "remove-dot-dot": Case(["skills", "remove", ".."], "must match"),
    "remove-empty": Case(["skills", "remove", ""], "must match"),
    "slug-with-newline": Case(
        ["skills", "propose", "evil-slug\n", "--description", "d", "--body-file", "body.md"],
        "must match", files={"body.md": "# Steps\n\n1. Do it.\n"},
    ),
    "body-not-utf8": Case(
        ["skills", "propose", "fine-slug", "--description", "d", "--body-file", "latin1.md"],
        "latin1.md is not valid UTF-8",
    ),
    "year-one": Case(
        ["episodes", "import", "old.jsonl"], "must be between 1970 and 9999",
        files={"old.jsonl": '{"user_text": "a", "summary": "b",'
                            ' "created_at": "0001-01-01T00:00:00+01:00"}\n'},
    ),
    "year-ten-thousand": Case(
        ["episodes", "import", "late.jsonl"], "must be between 1970 and 9999",
        files={"late.jsonl": '{"user_text": "a", "summary": "b",'
                             ' "created_at": "9999-12-31T23:59:59-14:00"}\n'},
    ),
    "only-whitespace": Case(
        ["episodes", "import", "blank.jsonl"], "line 1: user_text: Value error, is only whitespace",
        files={"blank.jsonl": '{"user_text": "   ", "summary": "b",'
                              ' "created_at": "2026-01-01T00:00:00Z"}\n'},
    ),
    "batch-lone-surrogate": Case(
        ["recall", "--batch", "queries.jsonl", "--k", "3", "--json"], "lone surrogate",
        files={"queries.jsonl": '{"id": "q1", "query": "deploy \\ud800"}\n'},
    ),
    "batch-empty": Case(["recall", "--batch", "none.jsonl", "--k", "3", "--json"],
                        "holds no query", files={"none.jsonl": "\n\n"}),
    "k-too-large": Case(["recall", "deploys", "--k", "1000000"], "between 1 and 50"),
    "forget-empty-fact": Case(["people", "forget", "dana", "--fact", ""], "--fact needs"),
    "forget-unknown-fact": Case(["people", "forget", "dana", "--fact", "nope"],
                                "dana has no fact 'nope'"),
    "forget-nobody": Case(["people", "forget", " "], "say whose facts to forget"),
    "chat-unknown-command": Case(["chat"], "unknown command /frob", stdin="/frob\n"),
    "chat-recall-without-query": Case(["chat"], "/recall needs a query", stdin="/recall\n"),
    "serve-port": Case(["serve", "--port", "70000"], "is not a port"),
    "serve-slack-unreachable": Case(
        ["serve", "--port", "0"], "cannot reach Slack at http://127.0.0.1:9/", code=1,
        env={"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": "s3cret",
             "SLACK_API_URL": "http://127.0.0.1:9/"},
    ),
    "honcho-unreachable": Case(
        ["people", "show", "dana"], "Honcho failed", code=1,
        env={"HONCHO_URL": "http://127.0.0.1:9", "HONCHO_API_KEY": "k"},
    ),
    "honcho-not-a-url": Case(["people", "show", "dana"], "HONCHO_URL: 'not a url' is not",
                             code=1, env={"HONCHO_URL": "not a url"}),
    "app-token-alone": Case(["recall", "deploys"], "invalid settings: SLACK_APP_TOKEN is set",
                            code=1, env={"SLACK_APP_TOKEN": "xapp-1-test"}),
}


def _state(home: Path) -> tuple[str, str]:
    """The database's bytes and the brain's commits and working tree."""
    brain = subprocess.run(["git", "-C", str(home / "brain"), "log", "--format=%H"],
                           capture_output=True, text=True).stdout
    status = subprocess.run(["git", "-C", str(home / "brain"), "status", "--porcelain"],
                            capture_output=True, text=True).stdout
    return hashlib.sha256((home / "thoth.db").read_bytes()).hexdigest(), brain + status


def _run(argv: list[str], stdin: str = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    real_stdin, sys.stdin = sys.stdin, io.StringIO(stdin)
    try:
        code = main(argv, stdout=out, stderr=err, embedder=HashingEmbedder())
    finally:
        sys.stdin = real_stdin
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def home(isolated_environment: Path) -> Iterator[Path]:
    """A home with an episode, a fact about dana and an installed skill."""
    Path("latin1.md").write_bytes("caf\xe9 steps".encode("latin-1"))
    Path("seed.jsonl").write_text('{"user_text": "deploys are on Fridays", "summary": "deploy'
                                  ' day", "created_at": "2026-11-01T10:00:00Z"}\n')
    assert _run(["episodes", "import", "seed.jsonl"])[0] == 0
    assert _run(["chat", "--user", "dana"], "I prefer short answers.\n")[0] == 0
    assert "prefers short answers" in _run(["people", "show", "dana"])[1]
    yield isolated_environment


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_bad_input_gets_one_line_and_changes_nothing(
    home: Path, case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, text in case.files.items():
        Path(name).write_text(text)
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    before = _state(home)
    code, _, err = _run(case.argv, case.stdin)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == case.code and len(lines) == 1, err
    assert lines[0].startswith("error: ") and case.expected in lines[0], lines[0]
    assert _state(home) == before


def test_a_chat_with_nothing_to_say_stores_nothing(home: Path) -> None:
    before = _state(home)
    assert _run(["chat"], "")[0] == 0
    assert _run(["chat"], "\n   \n\t\n")[0] == 0
    assert _state(home) == before


def test_a_brain_that_is_a_file_is_named_in_one_line(isolated_environment: Path) -> None:
    isolated_environment.mkdir(parents=True)
    (isolated_environment / "brain").write_text("not a folder")
    code, _, err = _run(["chat"], "hello\n")
    lines = err.splitlines()
    assert code == 1 and len(lines) == 1, err
    assert "is a file, where the brain's folder belongs" in lines[0]


@pytest.mark.parametrize(
    "value", ["U1,U2", "U1 U2", "U1, U2", '["U1", "U2"]'], ids=["commas", "spaces", "both", "json"]
)
def test_founders_are_read_in_every_way_people_write_them(
    isolated_environment: Path, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FOUNDER_USER_IDS", value)
    assert Settings(_env_file=None).founder_user_ids == ["U1", "U2"]  # type: ignore[call-arg]
