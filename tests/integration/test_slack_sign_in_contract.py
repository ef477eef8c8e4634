"""The loopback Slack's Sign in with Slack refuses what Slack documents it refuses,
driven through the real SDK (``openid.connect.token`` and ``openid.connect.userInfo``)."""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from tests.servers.slack_api import FakeSlack
from tests.servers.slack_sign_in import SignInWithSlack

CALLBACK = "http://127.0.0.1:9/console/signin/slack/callback"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def _authorize(slack: FakeSlack, **overrides: str) -> tuple[int, str]:
    query = {"response_type": "code", "scope": "openid profile", "client_id": "111.222",
             "state": "st", "nonce": "n", "redirect_uri": CALLBACK, **overrides}
    url = slack.url.replace("/api/", "/openid/connect/authorize?") + urllib.parse.urlencode(query)
    try:
        with urllib.request.build_opener(_NoRedirect).open(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Location") or error.read().decode()


def test_a_code_is_issued_once_to_the_app_and_redirect_it_was_asked_for() -> None:
    with FakeSlack() as slack:
        slack.add_user("U1", "dana")
        sign_in = SignInWithSlack(slack, client_id="111.222", client_secret="s3cret",
                                  redirect_uris=(CALLBACK,))
        assert _authorize(slack) == (200, "Sign in to your workspace")  # not signed in yet
        sign_in.signed_in_as = "U1"
        assert _authorize(slack, client_id="999") == (400, "invalid_client_id")
        assert _authorize(slack, redirect_uri="http://evil.test/cb") == (400, "bad_redirect_uri")
        assert _authorize(slack, scope="profile") == (400, "invalid_scope")
        status, location = _authorize(slack)
        assert status == 302 and location.startswith(CALLBACK + "?code=")
        code = urllib.parse.parse_qs(urllib.parse.urlsplit(location).query)["code"][0]
        assert "state=st" in location

        client = WebClient(base_url=slack.url)

        def refused(**arguments: str) -> str:
            with pytest.raises(SlackApiError) as raised:
                client.openid_connect_token(**{"client_id": "111.222",
                                               "client_secret": "s3cret", "code": code,
                                               "redirect_uri": CALLBACK, **arguments})
            return str(raised.value.response["error"])

        assert refused(client_secret="wrong") == "bad_client_secret"
        assert refused(client_id="999") == "invalid_client_id"
        assert refused(redirect_uri="http://127.0.0.1:9/other") == "bad_redirect_uri"
        assert refused(grant_type="refresh_token") == "invalid_grant_type"
        granted = client.openid_connect_token(client_id="111.222", client_secret="s3cret",
                                              code=code, redirect_uri=CALLBACK)
        assert str(granted["access_token"]).startswith("xoxp-")
        assert refused() == "invalid_code"  # a code is good once

        me = WebClient(token=str(granted["access_token"]), base_url=slack.url)
        info = me.openid_connect_userInfo()
        assert (info["sub"], info["https://slack.com/team_id"]) == ("U1", "T1")
        with pytest.raises(SlackApiError) as raised:
            WebClient(token="xoxp-made-up", base_url=slack.url).openid_connect_userInfo()
        assert raised.value.response["error"] == "invalid_auth"
        with pytest.raises(SlackApiError) as raised:
            WebClient(token="xoxb-bot", base_url=slack.url).openid_connect_userInfo()
        assert raised.value.response["error"] == "not_allowed_token_type"
