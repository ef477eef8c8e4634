"""Fixtures of the integration tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bridge.settings import Settings
from tests.fakes import HashingEmbedder
from tests.integration.slack_harness import Harness, running_bridge
from tests.servers.anthropic_api import FakeAnthropic


@pytest.fixture
def harness(
    model_settings: Settings, fake_anthropic: FakeAnthropic, hashing_embedder: HashingEmbedder
) -> Iterator[Harness]:
    """The Slack bridge serving HTTP on loopback, with a loopback Slack and model."""
    with running_bridge(model_settings, fake_anthropic, hashing_embedder) as running:
        yield running
