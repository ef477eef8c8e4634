"""Fixtures of the integration tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bridge.settings import Settings
from tests.fakes import HashingEmbedder
from tests.integration.installs_harness import Served, serving_installs
from tests.integration.slack_harness import Harness, running_bridge
from tests.servers.anthropic_api import FakeAnthropic


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
