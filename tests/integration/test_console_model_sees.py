"""What the model sees, in the console: the context blocks a conversation's latest turn
put before the model (redacted), for the operator and for the person whose DM it is,
nobody else; and the persona and skills as installed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from base64 import b64encode
from pathlib import Path

import itsdangerous
from starlette.testclient import TestClient

from bridge.access.signed_in import SignedInPerson
from bridge.app import build
from bridge.console.dependencies import console_dependencies
from bridge.console.sign_in import OneTimeLogin
from bridge.console.web_app import SESSION_COOKIE, console_app
from bridge.settings import Settings
from layers.shared.places import LOCAL_TEAM
from tests.fakes import HashingEmbedder
from tests.servers.anthropic_api import FakeAnthropic

SECRET = "s" * 32


def _chat(home: Path, fake: FakeAnthropic, user: str, words: str) -> list[str]:
    """One turn at the terminal; the context blocks the model was sent."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "THOTH_"))}
    env.update(THOTH_HOME=str(home), HF_HUB_OFFLINE="1", ANTHROPIC_API_KEY="sk-ant-test",
               ANTHROPIC_BASE_URL=fake.url)
    asked = len(fake.requests)
    subprocess.run([sys.executable, "-m", "bridge", "chat", "--user", user], env=env,
                   check=True, capture_output=True, timeout=180, text=True, input=words + "\n")
    return fake.wait_for_requests(asked + 1)[asked].context_texts()


def _member(user: str, *, founder: bool = False) -> str:
    person = SignedInPerson(f"slack:{user}", user, sees_everything=False, founder=founder,
                            team=LOCAL_TEAM, user=user)
    return itsdangerous.TimestampSigner(SECRET).sign(
        b64encode(json.dumps(person.as_session()).encode())).decode()


def test_a_conversations_latest_context_is_shown_to_the_operator_and_its_person_only(
    isolated_environment: Path, fake_anthropic: FakeAnthropic,
) -> None:
    home = isolated_environment
    _chat(home, fake_anthropic, "dana", "we deploy the api with blue-green on Thursdays")
    sent = _chat(home, fake_anthropic, "dana", "how do we deploy the api?")
    app = build(Settings(_env_file=None), embedder=HashingEmbedder())  # type: ignore[call-arg]
    try:
        (latest, *_) = app.sessions.listed()
        login = OneTimeLogin()
        console = console_app(console_dependencies(app), secret=SECRET, login=login)
        with TestClient(console) as operator:
            operator.get(f"/login/{login.token}")
            page = operator.get(f"/sessions/{latest.id}/context").text
            blocks = re.findall(r'<h2 id="block-\d+">([^<]+)</h2>', page)
            # The blocks the model was sent at that turn, in the order it read them.
            assert blocks and all(any(f"<{name}" in text for text in sent) for name in blocks)
            assert "blue-green on Thursdays" in page
            installed = operator.get("/persona").text
            assert "IDENTITY.md" in installed and "Skills" in installed
        with TestClient(console) as dana:
            dana.cookies.set(SESSION_COOKIE, _member("dana"))
            assert dana.get(f"/sessions/{latest.id}/context").status_code == 200
            assert dana.get("/persona").status_code == 403
        with TestClient(console) as erin:
            erin.cookies.set(SESSION_COOKIE, _member("erin"))
            assert erin.get(f"/sessions/{latest.id}/context").status_code == 404
            # A founder reads a channel's context, never another person's DM.
            erin.cookies.set(SESSION_COOKIE, _member("erin", founder=True))
            assert erin.get(f"/sessions/{latest.id}/context").status_code == 404
        # A forgotten exchange leaves what the model saw, which may quote it.
        (episode_id,) = [episode.id for episode in app.episodic.store.iter_episodes()
                         if episode.session_id == latest.id]
        turn = app.episodic.store.get(episode_id)
        assert turn is not None
        app.transcript.forget_turn(latest.id, turn.created_at, turn.user_text)
        assert app.sessions.context_of(latest.id) is None
    finally:
        app.close()
