"""/recall reads a day the question names in the asker's time zone, as Slack's users.info
gives it (``tz``), through the real bridge over signed HTTP."""

from __future__ import annotations

from datetime import UTC, datetime

from bridge.settings import Settings
from layers.episodic.episode import Episode
from tests.fakes import HashingEmbedder
from tests.integration.slack_harness import CHANNEL, running_bridge, shown
from tests.servers.anthropic_api import FakeAnthropic
from tests.waiting import wait_until


def test_recall_reads_a_named_day_in_the_askers_slack_time_zone(
    model_settings: Settings, fake_anthropic: FakeAnthropic, hashing_embedder: HashingEmbedder
) -> None:
    """Two turns alike in words: one said on 13 October in Tokyo, the other on 13 October
    in Los Angeles. /recall "…on 13 October 2023" leads with the asker's own 13th, as
    Slack's users.info gives their tz."""
    with running_bridge(model_settings, fake_anthropic, hashing_embedder) as harness:
        harness.slack.add_user("UTOKYO", "kei", tz="Asia/Tokyo")
        harness.slack.add_user("ULA", "lee", tz="America/Los_Angeles")
        harness.thoth.episodic.remember([
            Episode("alpha", "we showed the harbour painting alpha", "",
                    datetime(2023, 10, 12, 20, tzinfo=UTC).timestamp(),  # 13th in Tokyo
                    team="T1", channel=CHANNEL, thread_ts="1.1"),
            Episode("beta", "we showed the harbour painting beta", "",
                    datetime(2023, 10, 14, 2, tzinfo=UTC).timestamp(),  # 13th in LA
                    team="T1", channel=CHANNEL, thread_ts="2.2"),
        ])
        for user, first, second in (("UTOKYO", "alpha", "beta"), ("ULA", "beta", "alpha")):
            harness.command("/recall", "which painting did we show on 13 October 2023",
                            user=user)
            answer = shown(wait_until(lambda u=user: next(
                (e for e in harness.slack.ephemerals(CHANNEL)
                 if e["user"] == u and "harbour" in shown(e)), None)))
            assert answer.index(first) < answer.index(second), (user, answer)
