"""Which private channels a console member is in: asked of the loopback Slack through the
real SDK (``users.conversations``), which refuses and filters as Slack's reference says."""

from __future__ import annotations

import asyncio

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bridge.slack_api.memberships import SlackMemberships
from tests.servers.slack_api import FakeSlack


def _slack_with_channels(slack: FakeSlack) -> None:
    slack.add_user("U1", "dana")
    slack.add_user("U2", "ari")
    slack.add_channel("C1", "general")
    slack.add_channel("G1", "pay", "private", members=["U2"])
    slack.add_channel("G2", "crew", "private", members=["U1", "U2"])
    slack.add_channel("G3", "secret", "private", members=["U1"], is_member=False)
    slack.add_channel("M1", "mpdm-dana--ari", "mpim", members=["U1", "U2"])


def test_slack_lists_only_private_conversations_the_bot_shares_and_pages_them() -> None:
    with FakeSlack() as slack:
        _slack_with_channels(slack)
        client = WebClient(token="xoxb-test", base_url=slack.url)
        first = client.users_conversations(user="U1", types="private_channel,mpim", limit=1)
        assert [c["id"] for c in first["channels"]] == ["G2"]
        cursor = first["response_metadata"]["next_cursor"]
        rest = client.users_conversations(user="U1", types="private_channel,mpim",
                                          cursor=cursor)
        # G3 has dana but not the bot: "restricted to those where the calling user
        # shares membership".
        assert [c["id"] for c in rest["channels"]] == ["M1"]
        assert rest["response_metadata"]["next_cursor"] == ""
        assert [c["id"] for c in client.users_conversations(user="U1")["channels"]] == ["C1"]
        for kwargs, error in (({"user": "U404"}, "user_not_found"),
                              ({"user": "U1", "limit": 1000}, "invalid_limit"),
                              ({"user": "U1", "cursor": "bm9wZQ=="}, "invalid_cursor")):
            with pytest.raises(SlackApiError) as refused:
                client.users_conversations(**kwargs)
            assert refused.value.response["error"] == error


def test_a_token_without_groups_read_is_refused_private_channels() -> None:
    with FakeSlack(scopes="chat:write,channels:read") as slack:
        _slack_with_channels(slack)
        client = WebClient(token="xoxb-test", base_url=slack.url)
        with pytest.raises(SlackApiError) as refused:
            client.users_conversations(user="U1", types="private_channel")
        assert refused.value.response["error"] == "missing_scope"
        assert refused.value.response["needed"] == "groups:read"


def test_the_console_reads_a_members_channels_once_a_minute_and_fails_closed() -> None:
    async def scenario() -> None:
        with FakeSlack() as slack:
            _slack_with_channels(slack)
            now = [0.0]
            memberships = SlackMemberships(
                AsyncWebClient(token="xoxb-test", base_url=slack.url), clock=lambda: now[0])
            assert (await memberships.of("T1", "U1")).private == {"G2", "M1"}
            asked = sum(call.method == "users.conversations" for call in slack.requests)
            assert (await memberships.of("T1", "U1")).private == {"G2", "M1"}
            assert sum(call.method == "users.conversations" for call in slack.requests) == asked
            now[0] = 61.0  # a minute on: asked again, so leaving a channel shows
            assert (await memberships.of("T1", "U2")).private == {"G1", "G2", "M1"}
            assert (await memberships.of("T1", "U1")).private == {"G2", "M1"}
            assert sum(call.method == "users.conversations"
                       for call in slack.requests) == asked + 2
        with FakeSlack(scopes="chat:write") as refusing:
            _slack_with_channels(refusing)
            closed = SlackMemberships(AsyncWebClient(token="xoxb-test", base_url=refusing.url))
            assert (await closed.of("T1", "U1")).private == frozenset()
        assert (await SlackMemberships(None).of("T1", "U1")).private == frozenset()

    asyncio.run(scenario())
