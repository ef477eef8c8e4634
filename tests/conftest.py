"""Shared fixtures: no test can reach a real service, and every test gets its own home."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.settings import Settings
from layers.episodic.embedder import MiniLMEmbedder
from tests.fakes import HashingEmbedder
from tests.servers.anthropic_api import FakeAnthropic

_OUTSIDE_PREFIXES = ("SLACK_", "ANTHROPIC_", "HONCHO_", "THOTH_")


@pytest.fixture(autouse=True)
def isolated_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Clear every variable that could point Thoth at a real service or a real home."""
    for name in list(os.environ):
        if name.startswith(_OUTSIDE_PREFIXES):
            monkeypatch.delenv(name, raising=False)
    home = tmp_path / "thoth-home"
    monkeypatch.setenv("THOTH_HOME", str(home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # A stray .env in the working directory must not leak into tests.
    monkeypatch.chdir(tmp_path)
    return home


@pytest.fixture
def settings(isolated_environment: Path) -> Settings:
    return Settings(_env_file=None, thoth_home=isolated_environment)  # type: ignore[call-arg]


@pytest.fixture(scope="session")
def minilm() -> Iterator[MiniLMEmbedder]:
    """The real MiniLM model, loaded once for the whole run."""
    embedder = MiniLMEmbedder()
    embedder.load()
    yield embedder


@pytest.fixture
def hashing_embedder() -> HashingEmbedder:
    return HashingEmbedder()


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropic]:
    """A loopback Messages API server, reached by the real SDK through its base URL."""
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def model_settings(isolated_environment: Path, fake_anthropic: FakeAnthropic) -> Settings:
    """Settings with a (fake) API key and the loopback server as ANTHROPIC_BASE_URL."""
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        thoth_home=isolated_environment,
        anthropic_api_key="sk-ant-test-key",
        anthropic_base_url=fake_anthropic.url,
        model_timeout_s=5,
    )
