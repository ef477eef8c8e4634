"""Thoth installed from its wheel, not from the checkout: every first-day command runs.

``THOTH_WHEEL_BIN`` names the ``thoth`` of an environment the wheel was installed into,
dependencies and all, by hand. Without it (as in CI), the wheel is built here and
installed, without its dependencies, into a new virtualenv that borrows this one's
installed packages; only Thoth itself comes from the wheel either way.
Every command runs from an empty directory, so nothing is found next to the source tree.
"""

from __future__ import annotations

import http.cookiejar
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from slack_sdk.signature import SignatureVerifier

from tests.servers.slack_api import FakeSlack
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


@pytest.fixture(scope="module")
def thoth_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("THOTH_WHEEL_BIN")
    if given:
        return Path(given)
    work = tmp_path_factory.mktemp("wheel")
    # Built from a copy: a build in place leaves build/ behind, whose files a later
    # build would take even where the package data no longer names them.
    source = work / "source"
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", ".*_cache"))
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         str(source), "-w", str(work / "dist")],
        capture_output=True, text=True, timeout=300,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = (work / "dist").glob("thoth-*.whl")
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    packages = Path(
        subprocess.run([str(venv / "bin" / "python"), "-c",
                        "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                       capture_output=True, text=True, check=True).stdout.strip()
    )
    # This environment's packages as a plain path: its editable finder for the checkout
    # is a .pth file there, which a plain path entry does not run.
    (packages / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
         "--no-deps", "--no-index", "-q", str(wheel)],
        capture_output=True, text=True, timeout=300,
    )
    assert installed.returncode == 0, installed.stderr
    return venv / "bin" / "thoth"


@pytest.fixture
def run_from(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    place = tmp_path / "elsewhere"
    place.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "THOTH_", "SLACK_", "HONCHO_", "PYTHON"))}
    env.update(THOTH_HOME=str(tmp_path / "home"), HF_HUB_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1")
    yield place, env


def _thoth(thoth_bin: Path, cwd: Path, env: dict[str, str], *args: str,
           stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(thoth_bin), *args], cwd=cwd, env=env, input=stdin,
                          capture_output=True, text=True, timeout=300)


def test_the_installed_package_is_the_wheel_and_carries_the_persona_and_skills(
    thoth_bin: Path, run_from: tuple[Path, dict[str, str]]
) -> None:
    cwd, env = run_from
    python = thoth_bin.parent / "python"
    where = subprocess.run(
        [str(python), "-c", "import bridge, layers.procedural.shipped as s;"
         " print(bridge.__file__); print(sorted(p.name for p in s.SHIPPED_PERSONA.iterdir()));"
         " print(sorted(p.name for p in s.SHIPPED_SKILLS.iterdir()))"],
        cwd=cwd, env=env, capture_output=True, text=True, check=True,
    ).stdout.splitlines()
    # Not the checkout's bridge/ (the environment itself may sit inside the checkout).
    assert Path(where[0]).parent != ROOT / "bridge" and "site-packages" in where[0]
    assert "SOUL.md" in where[1] and "RULES.md" in where[1]
    assert "decision-record" in where[2]


def test_init_chat_and_doctor_run_from_the_wheel(
    thoth_bin: Path, run_from: tuple[Path, dict[str, str]]
) -> None:
    cwd, env = run_from
    init = _thoth(thoth_bin, cwd, env, "init")
    assert init.returncode == 0, init.stderr
    assert (Path(env["THOTH_HOME"]) / "brain" / "persona" / "SOUL.md").is_file()
    chat = _thoth(thoth_bin, cwd, env, "chat", stdin="I prefer short answers about deploys\n")
    assert chat.returncode == 0, chat.stderr
    assert chat.stdout.strip()
    doctor = _thoth(thoth_bin, cwd, env, "doctor", "--json")
    checks = {check["name"]: check["status"] for check in json.loads(doctor.stdout)}
    assert checks["brain"] == "ok" and checks["persona"] == "ok", doctor.stdout
    assert doctor.returncode == 0, doctor.stdout


def test_serve_from_the_wheel_answers_a_mention_in_its_thread(
    thoth_bin: Path, run_from: tuple[Path, dict[str, str]]
) -> None:
    cwd, env = run_from
    with FakeSlack() as slack:
        slack.add_user("U1", "dana")
        slack.add_channel("C1", "general")
        env = {**env, "SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": SECRET,
               "SLACK_API_URL": slack.url}
        serve = subprocess.Popen([str(thoth_bin), "serve", "--host", "127.0.0.1", "--port", "0"],
                                 cwd=cwd, env=env, text=True, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE)
        try:
            assert serve.stdout is not None
            address = serve.stdout.readline().strip().split()[-1]
            assert address.startswith("http://127.0.0.1:"), address
            ts = "1700000000.000100"
            event = {"type": "app_mention", "user": "U1", "text": "<@UBOT> hello there",
                     "ts": ts, "team": "T1", "channel": "C1", "event_ts": ts}
            body = json.dumps({"token": "t", "team_id": "T1", "api_app_id": "A1",
                               "event": event, "type": "event_callback", "event_id": "Ev1",
                               "event_time": int(time.time())})
            moment = str(int(time.time()))
            signature = SignatureVerifier(SECRET).generate_signature(timestamp=moment, body=body)
            request = urllib.request.Request(
                address, data=body.encode(), method="POST",
                headers={"content-type": "application/json",
                         "x-slack-request-timestamp": moment, "x-slack-signature": signature})
            with urllib.request.urlopen(request, timeout=30) as response:
                assert response.status == 200
            replies = wait_until(lambda: slack.messages("C1", ts), 60)
            assert replies and replies[-1]["thread_ts"] == ts
            # The memory console on the same port, its templates and style from the wheel.
            line = serve.stdout.readline()
            link = next((word for word in line.split() if "/console/login/" in word), line)
            assert link.startswith(f"{address.removesuffix('/slack/events')}/console/login/")
            browser = urllib.request.build_opener(
                urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
            with browser.open(link, timeout=30) as page:
                assert "What Thoth keeps" in page.read().decode()
            style = link.split("/login/")[0] + "/static/console.css"
            with browser.open(style, timeout=30) as sheet:
                assert b"font" in sheet.read()
        finally:
            serve.send_signal(signal.SIGTERM)
            _, errors = serve.communicate(timeout=60)
        assert serve.returncode == 0, errors
