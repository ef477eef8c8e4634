"""The console names places and people as Slack does ("#general", "Dana"), asked of the
loopback Slack through the real SDK, cached; without an answer it says what kind of place
it was, never a bare id, and a failing Slack costs the name only."""

from __future__ import annotations

import asyncio

from slack_sdk.web.async_client import AsyncWebClient

from bridge.console.names import Names
from layers.episodic.episode import Episode
from layers.shared.places import LOCAL_TEAM
from tests.servers.slack_api import FakeSlack


def _episode(team: str, channel: str, kind: str, user: str | None,
             name: str | None = None) -> Episode:
    return Episode(id=f"{channel}-{user}", user_text="hi", summary="", created_at=0.0,
                   team=team, channel=channel, channel_type=kind,  # type: ignore[arg-type]
                   user=user, user_name=name)


def test_places_and_people_are_named_as_slack_names_them() -> None:
    async def scenario() -> None:
        with FakeSlack() as slack:
            slack.add_user("U1", "dana")
            slack.add_channel("C1", "general")
            slack.add_channel("G1", "pay", "private", members=["U1"])
            names = Names(AsyncWebClient(token="xoxb-test", base_url=slack.url))
            shown = [_episode("T1", "C1", "public", "U1"),
                     _episode("T1", "G1", "private", "U1"),
                     _episode("T1", "D1", "im", "U1"),
                     _episode("T1", "C404", "public", "U9", "ari"),  # Slack knows neither
                     _episode(LOCAL_TEAM, "terminal", "im", "erin", "erin")]
            named = await names.of(shown)
            assert [named.channel(episode) for episode in shown] == [
                "#general", "🔒 pay", "a DM with Thoth", "a channel", "the terminal"]
            assert [named.person(episode) for episode in shown] == [
                "dana", "dana", "dana", "ari", "erin"]
            asked = len(slack.requests)
            await names.of(shown)  # cached, and what it could not name too

            assert len(slack.requests) == asked

    asyncio.run(scenario())


def test_a_filter_names_a_channel_as_people_do_and_slack_is_asked_once_an_hour() -> None:
    async def scenario() -> None:
        with FakeSlack() as slack:
            slack.add_channel("C1", "general")
            slack.add_channel("G1", "pay", "private")
            slack.add_channel("G2", "secret", "private", is_member=False)
            names = Names(AsyncWebClient(token="xoxb-test", base_url=slack.url))
            assert await names.channel_named(None, "#General") == "C1"
            assert await names.channel_named(None, "pay") == "G1"
            # Not one the bot may see, or an id: as it was asked, without its "#".
            assert await names.channel_named(None, "#secret") == "secret"
            assert await names.channel_named(None, "C1") == "C1"
            listed = [call for call in slack.requests if call.method == "conversations.list"]
            assert len(listed) == 1
        # Without Slack, a name is the id a local channel was kept under.
        assert await Names(None).channel_named(None, "#general") == "general"

    asyncio.run(scenario())
