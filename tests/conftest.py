"""Shared fixtures: no test can reach a real service, and every test gets its own home."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from bridge.settings import Settings
from layers.shared.embedding.embedder import MiniLMEmbedder
from layers.shared.storage.database import Database
from layers.shared.storage.engines import connect_postgres, open_sqlite
from layers.shared.storage.migrations import Schema
from tests.fakes import HashingEmbedder
from tests.postgres import PostgresForTests, running_postgres
from tests.servers.anthropic_api import FakeAnthropic

_OUTSIDE_PREFIXES = ("SLACK_", "ANTHROPIC_", "HONCHO_", "THOTH_", "DATABASE_URL")


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


@pytest.fixture(scope="session")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresForTests]:
    """A real PostgreSQL with pgvector, started once for the run (about a second)."""
    yield from running_postgres(tmp_path_factory.mktemp("pg"))


@pytest.fixture(params=["sqlite", "postgresql"])
def open_database(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[[Sequence[Schema]], Database]]:
    """Opens this test's database, on each engine in turn (the test runs once per engine);
    opening it again reopens the same one."""
    opened: list[Database] = []
    url: list[str] = []

    def open_one(schemas: Sequence[Schema]) -> Database:
        if request.param == "sqlite":
            database = open_sqlite(tmp_path / "thoth.db", schemas=schemas)
        else:
            if not url:
                server: PostgresForTests = request.getfixturevalue("postgres")
                url.append(server.fresh_database())
            database = connect_postgres(url[0], schemas=schemas)
        opened.append(database)
        return database

    yield open_one
    for database in opened:
        database.close()


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
