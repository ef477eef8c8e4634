"""Fixtures of the integration tests."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from bridge.settings import Settings
from layers.episodic.memory import EpisodicMemory
from layers.layer_tables import LAYER_SCHEMAS
from layers.shared.embedding.embedder import MiniLMEmbedder
from layers.shared.storage.database import Database
from layers.shared.storage.migrations import Schema
from tests.fakes import HashingEmbedder
from tests.integration.installs_harness import Served, serving_installs
from tests.integration.slack_harness import Harness, running_bridge
from tests.servers.anthropic_api import FakeAnthropic

MCP_SERVERS = Path(__file__).resolve().parents[1] / "mcp_servers"
EVERYTHING = MCP_SERVERS / "node_modules" / ".bin" / "mcp-server-everything"


@pytest.fixture
def harness(
    model_settings: Settings, fake_anthropic: FakeAnthropic, hashing_embedder: HashingEmbedder
) -> Iterator[Harness]:
    """The Slack bridge serving HTTP on loopback, with a loopback Slack and model."""
    with running_bridge(model_settings, fake_anthropic, hashing_embedder) as running:
        yield running


@pytest.fixture
def served(model_settings: Settings, fake_anthropic: FakeAnthropic,
           hashing_embedder: HashingEmbedder) -> Iterator[Served]:
    """Thoth installed into workspaces through the loopback Slack (installs_harness)."""
    with serving_installs(model_settings, fake_anthropic, hashing_embedder) as running:
        yield running


@pytest.fixture(scope="session")
def everything() -> str:
    """The reference server's command, installed from the lockfile when it is not yet."""
    if not EVERYTHING.exists():
        npm = shutil.which("npm")
        assert npm is not None, "npm is needed for the MCP client tests (.ci/run installs it)"
        subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--prefix", str(MCP_SERVERS)],
                       check=True, capture_output=True, timeout=300)
    return str(EVERYTHING)


OpenDatabase = Callable[[Sequence[Schema]], Database]


@pytest.fixture
def db(open_database: OpenDatabase) -> Database:
    """The layers' tables on this test's engine (``open_database``: each in turn)."""
    return open_database(LAYER_SCHEMAS)


@pytest.fixture
def memory(db: Database, minilm: MiniLMEmbedder) -> EpisodicMemory:
    """Episodic memory over ``db`` with the real MiniLM model."""
    return EpisodicMemory(db, minilm)
