"""A new user's first day, as real processes (in a pseudo-terminal where a person types):
usage and version, the offline chat, sessions by their short ids, pipes that close early,
retention that says what it purged."""

from __future__ import annotations

import argparse
import json
import os
import pty
import socket
import subprocess
import sys
from pathlib import Path

from bridge import messages
from bridge.cli.main import build_parser
from tests.integration.test_cli_chat import _Screen

SHORT = 8


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "THOTH_"))}
    env.update(THOTH_HOME=str(home), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", **extra)
    return env


def _thoth(
    home: Path, *args: str, stdin: str = "", **extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bridge", *args], cwd=home.parent,
                          env=_env(home, **extra), input=stdin, capture_output=True, text=True,
                          timeout=180)


def _typed_chat(home: Path, lines: list[str], *args: str) -> str:
    """A chat in a pseudo-terminal: type each line after its prompt; the whole screen."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "bridge", "chat", *args],
                               cwd=home.parent, env=_env(home), stdin=terminal, stdout=terminal,
                               stderr=terminal, close_fds=True)
    os.close(terminal)
    screen = _Screen(controller)
    try:
        for number, line in enumerate(lines):
            screen.wait_for("you> ", after=len(screen.text) if number else 0)
            mark = len(screen.text)
            os.write(controller, line.encode() + b"\r")
            if not line.startswith("/"):
                screen.wait_for("thoth> ", after=mark)
        assert process.wait(timeout=60) == 0
        screen.wait_for("\n", after=len(screen.text) - 1, timeout_s=2)
    except AssertionError:
        pass  # the screen has what it has; the caller's assertions say what was missing
    finally:
        if process.poll() is None:
            process.kill()
        os.close(controller)
    return screen.text


def test_a_bare_thoth_prints_usage_and_every_argument_says_what_it_is(tmp_path: Path) -> None:
    home = tmp_path / "home"
    bare = _thoth(home)
    assert bare.returncode == 0 and "usage: thoth" in bare.stdout and "sessions" in bare.stdout
    version = _thoth(home, "--version")
    assert version.returncode == 0 and version.stdout.startswith("thoth 0.")

    def silent(parser: argparse.ArgumentParser, path: str) -> list[str]:
        found = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found += silent(sub, f"{path} {name}")
                found += [f"{path} {a.dest}" for a in action._choices_actions if not a.help]
            elif not isinstance(action, argparse._HelpAction) and not action.help:
                found.append(f"{path} {action.dest}")
        return found

    assert silent(build_parser(), "thoth") == []


def test_the_offline_chat_keeps_statements_says_its_banner_once_and_hints_only_what_works(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    done = _typed_chat(home, ["We deploy the api on Fridays after the demo",
                              "Rollback: 1. Page the on-call. 2. Run make rollback.", "/done"])
    assert "Noted and kept" in done and "> Rollback: 1. Page the on-call. 2. Run make" in done
    assert done.count(messages.NO_MODEL_CONFIGURED[:40]) == 1
    assert "Resume this session" not in done  # it ended: resuming it would be refused
    left = _typed_chat(home, ["When do we deploy the api?", "/quit"])
    assert "we deploy the api on fridays" in left.lower()
    hint = next(line for line in left.splitlines() if "thoth chat --session" in line)
    short_id = hint.split("--session")[1].strip()
    assert len(short_id) == SHORT

    listed = _thoth(home, "sessions", "--json")
    sessions = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [s["open"] for s in sessions] == [True, False]
    assert sessions[0]["id"][:SHORT] == short_id
    shown = _thoth(home, "sessions").stdout
    assert short_id in shown and sessions[1]["id"][:SHORT] in shown and "ended" in shown
    resumed = _thoth(home, "chat", "--session", short_id, stdin="And on Mondays too\n")
    assert resumed.returncode == 0, resumed.stderr
    after = {json.loads(line)["id"]: json.loads(line)["turns"]
             for line in _thoth(home, "sessions", "--json").stdout.splitlines()}
    assert after[sessions[0]["id"]] == sessions[0]["turns"] + 1  # the same session went on
    ended = _thoth(home, "chat", "--session", sessions[1]["id"][:SHORT], stdin="hi\n")
    assert ended.returncode == 2 and "has ended" in ended.stderr
    assert len(ended.stderr.strip().splitlines()) == 1
    unknown = _thoth(home, "reflect", "ffffffff")
    assert unknown.returncode == 2 and "thoth sessions" in unknown.stderr


def test_a_reader_that_goes_away_ends_a_command_quietly(tmp_path: Path) -> None:
    home = tmp_path / "home"
    lines = "".join(
        json.dumps({"user_text": f"we deploy service {n} on Fridays", "summary": "noted",
                    "created_at": "2026-01-01T00:00:00Z"}) + "\n" for n in range(1000))
    (tmp_path / "episodes.jsonl").write_text(lines)
    assert _thoth(home, "episodes", "import", str(tmp_path / "episodes.jsonl")).returncode == 0
    for command, stdin in ((["episodes", "export"], ""),
                           (["chat"], "We ship on Fridays\n" * 50)):
        process = subprocess.Popen([sys.executable, "-m", "bridge", *command], cwd=tmp_path,
                                   env=_env(home), stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert process.stdout is not None and process.stdin is not None
        process.stdin.write(stdin)
        process.stdin.flush()
        assert process.stdout.readline()  # `| head -1`: one line, then the reader is gone
        process.stdout.close()
        _, errors = process.communicate(timeout=120)
        assert process.returncode == 141, errors
        assert "Traceback" not in errors and "Broken pipe" not in errors, errors


def test_retention_says_what_it_purged(tmp_path: Path) -> None:
    home = tmp_path / "home"
    old = "".join(json.dumps({"user_text": f"old note {n}", "summary": "s",
                              "created_at": "2020-01-01T00:00:00Z"}) + "\n" for n in range(7))
    (tmp_path / "old.jsonl").write_text(old)
    assert _thoth(home, "episodes", "import", str(tmp_path / "old.jsonl")).returncode == 0
    purged = _thoth(home, "episodes", "purge", EPISODE_RETENTION_DAYS="30")
    assert purged.returncode == 0 and "purged 7 episodes older than 30 days" in purged.stdout


def test_recall_says_when_nothing_visible_matched_and_what_would_widen_it(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    line = json.dumps({"user_text": "Staging moved to pelican-db-7 on Tuesday", "summary": "s",
                       "created_at": "2026-11-01T00:00:00Z", "team": "T1", "channel": "C1",
                       "channel_type": "public"})
    (tmp_path / "team.jsonl").write_text(line + "\n")
    assert _thoth(home, "episodes", "import", str(tmp_path / "team.jsonl")).returncode == 0
    hidden = _thoth(home, "recall", "where is staging now?")
    assert hidden.returncode == 0
    assert "nothing you may see from here matched" in hidden.stdout
    assert "--all" in hidden.stdout and "--team T1" in hidden.stdout
    widened = _thoth(home, "recall", "where is staging now?", "--team", "T1",
                     "--channel", "C1", "--channel-type", "public")
    assert "pelican-db-7" in widened.stdout
    unrelated = _thoth(home, "recall", "the office plants", "--all")
    assert "no episode matched" in unrelated.stdout and "pelican" not in unrelated.stdout


def test_migrate_to_a_closed_port_says_so_at_once_naming_the_option(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    refused = _thoth(home, "migrate", "--to", f"postgresql://thoth:secret@127.0.0.1:{port}/x")
    assert refused.returncode == 1
    (line,) = refused.stderr.strip().splitlines()
    assert "Connection refused" in line and "check --to" in line and "DATABASE_URL" not in line
    assert "secret" not in line
