"""With no CONSOLE_SECRET, the console's cookies are signed with a secret made once and
kept in THOTH_HOME (0600): a restart signs nobody out. A kept file others may read, or
that holds no secret, stops the start with one line and is never replaced."""

from __future__ import annotations

import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.testclient import TestClient

from bridge.app import Thoth, build
from bridge.console.cookie_secret import FILE, cookie_secret
from bridge.console.serving import PATH, console_mount
from bridge.console.sign_in import OneTimeLogin
from bridge.console.web_app import SESSION_COOKIE
from bridge.settings import Settings
from layers.shared.errors import ConfigurationError
from tests.fakes import HashingEmbedder

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def started(settings: Settings, hashing_embedder: HashingEmbedder) -> Iterator[list[Thoth]]:
    """Each Thoth a test builds (one a start of the console), closed after it."""
    apps: list[Thoth] = []
    yield apps
    for app in apps:
        app.close()


def _start(settings: Settings, started: list[Thoth]) -> tuple[TestClient, OneTimeLogin]:
    """A start of the console, as `thoth console` mounts it."""
    app = build(settings, embedder=HashingEmbedder())
    started.append(app)
    login = OneTimeLogin()
    served = Starlette(routes=[console_mount(app, login)])
    return TestClient(served, follow_redirects=False), login


def _signed_in(client: TestClient, cookie: str) -> int:
    """How a page answers ``cookie`` alone (the one it set after an answer is dropped)."""
    client.cookies.clear()
    client.cookies.set(SESSION_COOKIE, cookie)
    return client.get(f"{PATH}/export").status_code


def test_a_restart_keeps_everyone_signed_in_with_the_kept_secret(
    settings: Settings, started: list[Thoth]
) -> None:
    assert settings.console_secret is None
    first, login = _start(settings, started)
    assert first.get(f"{PATH}/login/{login.token}").status_code == 303
    cookie = first.cookies[SESSION_COOKIE]
    kept = settings.thoth_home / FILE
    secret = kept.read_text() if kept.exists() else None

    again, _ = _start(settings, started)  # the restart
    assert _signed_in(again, cookie) == 200
    assert kept.read_text() == secret and stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert [path.name for path in settings.thoth_home.iterdir()
            if FILE in path.name] == [FILE]  # no scratch file left beside it
    assert _signed_in(again, cookie[:-2] + "xx") == 401  # a forged signature is no sign-in

    # CONSOLE_SECRET set wins: the kept secret's cookies are no sign-in there.
    configured = settings.model_copy(update={"console_secret": SecretStr("s" * 40)})
    elsewhere, _ = _start(configured, started)
    assert _signed_in(elsewhere, cookie) == 401


def test_a_kept_secret_others_may_read_or_that_holds_none_stops_the_start(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    made = cookie_secret(None, home)
    kept = home / FILE
    kept.chmod(0o644)
    with pytest.raises(ConfigurationError, match="can be read by other users") as refused:
        cookie_secret(None, home)
    assert "\n" not in str(refused.value) and f"chmod 600 {kept}" in str(refused.value)
    assert kept.read_text().strip() == made  # never replaced behind the operator's back
    kept.chmod(0o600)
    assert cookie_secret(None, home) == made

    for garbage in (b"", b"short", b"\xff\xfe" * 30):
        kept.write_bytes(garbage)
        with pytest.raises(ConfigurationError, match="console's secret") as refused:
            cookie_secret(None, home)
        assert "\n" not in str(refused.value)
        assert kept.read_bytes() == garbage
    assert cookie_secret(SecretStr("c" * 40), home) == "c" * 40  # set: the file is not read


def test_consoles_starting_together_agree_on_one_secret(tmp_path: Path) -> None:
    home = tmp_path / "home"
    program = ("import sys; from pathlib import Path;"
               " from bridge.console.cookie_secret import cookie_secret;"
               " print(cookie_secret(None, Path(sys.argv[1])))")
    starts = [subprocess.Popen([sys.executable, "-c", program, str(home)], cwd=ROOT,
                               stdout=subprocess.PIPE, text=True) for _ in range(6)]
    said = {start.communicate(timeout=60)[0].strip() for start in starts}
    assert all(start.returncode == 0 for start in starts)
    assert said == {(home / FILE).read_text().strip()}
    assert sorted(path.name for path in home.iterdir()) == [FILE]
