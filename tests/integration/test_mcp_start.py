"""MCP as a client and its person meet it at the start: `thoth mcp` where there is no
memory says so and stops, creating nothing (instead of serving a new, empty home whose
every recall is []); `thoth doctor` and `thoth console` say which ways into /mcp exist."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.cli.main import main
from tests.fakes import HashingEmbedder

START_TIMEOUT_S = 60


def _mcp(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    # stdin open and empty, as a client that has not spoken yet: a server that started
    # anyway would wait on it, and the timeout would say so.
    return subprocess.run([sys.executable, "-m", "bridge", "mcp"], env=env, cwd=cwd,
                          input="", capture_output=True, text=True, timeout=START_TIMEOUT_S)


def test_an_empty_thoth_home_is_refused_with_one_line_and_left_empty(
    isolated_environment: Path, tmp_path: Path,
) -> None:
    home = tmp_path / "empty-home"
    home.mkdir()
    done = _mcp({**os.environ, "THOTH_HOME": str(home)}, tmp_path)

    assert done.returncode == 1, done.stderr
    assert done.stdout == ""  # nothing on the protocol's channel
    (line,) = done.stderr.strip().splitlines()
    assert str(home / "thoth.db") in line and f"THOTH_HOME={home}" in line
    assert "thoth init" in line
    assert list(home.iterdir()) == []


def test_without_thoth_home_no_home_is_created_under_the_users_home(
    isolated_environment: Path, tmp_path: Path,
) -> None:
    user_home = tmp_path / "user"
    user_home.mkdir()
    env = {name: value for name, value in os.environ.items() if name != "THOTH_HOME"}
    done = _mcp({**env, "HOME": str(user_home)}, tmp_path)

    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "THOTH_HOME is not set" in line and str(user_home / ".thoth") in line
    assert list(user_home.iterdir()) == []


def test_a_home_made_by_thoth_init_is_served(isolated_environment: Path, tmp_path: Path) -> None:
    env = {**os.environ, "THOTH_HOME": str(isolated_environment)}
    made = subprocess.run([sys.executable, "-m", "bridge", "init"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=START_TIMEOUT_S)
    assert made.returncode == 0, made.stderr
    # The client closes stdin at once: a server that started ends cleanly, saying nothing.
    done = _mcp(env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def _doctor_mcp(monkeypatch: pytest.MonkeyPatch, **settings: str) -> dict[str, str]:
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    out = io.StringIO()
    main(["doctor", "--json"], stdout=out, stderr=io.StringIO(),
         embedder=HashingEmbedder())
    (check,) = [check for check in json.loads(out.getvalue()) if check["name"] == "mcp"]
    return check  # type: ignore[no-any-return]


def test_doctor_says_which_ways_into_mcp_are_offered(
    isolated_environment: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    tokens_only = _doctor_mcp(monkeypatch)
    assert tokens_only["status"] == "info"
    assert "/thoth token" in tokens_only["detail"]
    assert "no sign-in with Slack" in tokens_only["detail"]
    assert "0 live token(s)" in tokens_only["detail"]
    assert "CONSOLE_URL, SLACK_CLIENT_ID and SLACK_CLIENT_SECRET" in tokens_only["fix"]

    out = io.StringIO()
    assert main(["tokens", "make", "--team", "T1", "--user", "U1", "--label", "laptop"],
                stdout=out, stderr=out) == 0, out.getvalue()
    signs_in = _doctor_mcp(monkeypatch, CONSOLE_URL="https://thoth.example.com",
                           SLACK_CLIENT_ID="1.2", SLACK_CLIENT_SECRET="s3cr3t-client")
    assert "or by signing in with Slack (OAuth)" in signs_in["detail"]
    assert "1 live token(s)" in signs_in["detail"]
    assert signs_in["fix"] == ""


def test_the_consoles_startup_lines_say_how_to_reach_mcp(
    isolated_environment: Path, tmp_path: Path,
) -> None:
    env = {**os.environ, "THOTH_HOME": str(isolated_environment)}
    console = subprocess.Popen([sys.executable, "-m", "bridge", "console", "--port", "0"],
                               env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        assert console.stdout is not None
        first, second = console.stdout.readline(), console.stdout.readline()
    finally:
        console.terminate()
        console.wait(timeout=30)
    assert "memory console: open" in first, (first, console.stderr and console.stderr.read())
    port = first.split("http://127.0.0.1:", 1)[1].split("/", 1)[0]
    assert second.startswith(f"MCP for coding agents: http://127.0.0.1:{port}/mcp (")
    assert "/thoth token" in second and "no sign-in with Slack" in second


HANDSHAKE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "a-client", "version": "1"}}}) + "\n"


def _handshake_then_wait(env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    """`thoth mcp` sent the handshake by a client that keeps stdin open and says nothing
    more: how it ended (exit code, standard output, standard error)."""
    server = subprocess.Popen([sys.executable, "-m", "bridge", "mcp"], cwd=cwd, env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    assert server.stdin is not None
    server.stdin.write(HANDSHAKE)
    server.stdin.flush()
    try:
        code = server.wait(timeout=START_TIMEOUT_S)
        out, err = server.communicate(timeout=START_TIMEOUT_S)
    finally:
        server.kill()
    return code, out, err


def test_the_handshake_is_answered_before_the_memory_opens_and_a_memory_that_cannot_open_ends_it(
    isolated_environment: Path, tmp_path: Path,
) -> None:
    """A damaged database passes the start's check (the file is there), so the client has
    its handshake; opening it then fails, and the server ends with the one line any command
    says of it, though the client keeps stdin open and says nothing more."""
    home = isolated_environment
    home.mkdir()
    (home / "thoth.db").write_bytes(b"this is not a SQLite database, only its name" * 200)
    code, out, err = _handshake_then_wait({**os.environ, "THOTH_HOME": str(home)}, tmp_path)
    assert code == 1, err
    (line,) = err.strip().splitlines()
    assert line.startswith("error: ") and str(home / "thoth.db") in line
    # Whatever reached the client was the protocol's: at most the handshake's answer.
    for answered in out.splitlines():
        assert json.loads(answered)["id"] == 1


def test_what_answers_the_handshake_loads_nothing_of_the_memory() -> None:
    """The handshake waits only for the SDK and these modules (bench/mcp_start.py): the app,
    the secret catalogue, the arrays and Slack's async client load beside it."""
    probe = ("import sys, bridge.cli.main, bridge.cli.mcp, bridge.mcp.server\n"
             "print(' '.join(sorted(name for name in ('bridge.app', 'detect_secrets',"
             " 'numpy', 'aiohttp', 'layers.episodic.memory') if name in sys.modules)))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=START_TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


def test_installs_that_cannot_be_read_end_the_server_in_one_line(
    isolated_environment: Path, tmp_path: Path,
) -> None:
    env = {**os.environ, "THOTH_HOME": str(isolated_environment)}
    made = subprocess.run([sys.executable, "-m", "bridge", "init"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=START_TIMEOUT_S)
    assert made.returncode == 0, made.stderr
    code, _, err = _handshake_then_wait({**env, "SLACK_TOKEN_KEYS": "not-a-key"}, tmp_path)
    assert code == 1, err
    (line,) = err.strip().splitlines()
    assert line.startswith("error: ") and "SLACK_TOKEN_KEYS" in line
