"""Sign in with Slack (OpenID Connect) for team members.

The browser goes to Slack's authorize page with a ``state`` and a ``nonce`` kept in the
session; Slack sends it back with a one-time code, which is exchanged here for a user
token (``openid.connect.token``), whose person is then asked of Slack
(``openid.connect.userInfo``). Through the async Slack SDK, as every Slack call of the
serving process. Founders (``FOUNDER_USER_IDS``) get the operator's view.
"""

from __future__ import annotations

import secrets
from urllib.parse import urlencode, urlsplit

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bridge.console.sign_in import ConsoleUser
from layers.audit.log import slack_actor
from layers.errors import BadInput

SCOPES = "openid profile"


class SlackSignIn:
    def __init__(self, *, client_id: str, client_secret: str, api_url: str,
                 founders: frozenset[str]) -> None:
        self._client_id = client_id
        self._client_secret = client_secret
        self._api_url = api_url
        self._founders = founders

    def authorize_url(self, redirect_uri: str) -> tuple[str, str, str]:
        """Where to send the browser, and the state and nonce to keep in the session."""
        state, nonce = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        api = urlsplit(self._api_url)
        query = urlencode({"response_type": "code", "scope": SCOPES,
                           "client_id": self._client_id, "state": state, "nonce": nonce,
                           "redirect_uri": redirect_uri})
        return f"{api.scheme}://{api.netloc}/openid/connect/authorize?{query}", state, nonce

    async def complete(self, code: str, redirect_uri: str) -> ConsoleUser:
        """The person Slack signed in (``BadInput`` with Slack's word when it refused)."""
        client = AsyncWebClient(base_url=self._api_url)
        try:
            granted = await client.openid_connect_token(
                client_id=self._client_id, client_secret=self._client_secret, code=code,
                redirect_uri=redirect_uri)
            me = await AsyncWebClient(token=str(granted["access_token"]),
                                      base_url=self._api_url).openid_connect_userInfo()
        except SlackApiError as error:
            raise BadInput(f"Slack refused the sign-in ({error.response.get('error')})"
                           ) from error
        user = str(me.get("https://slack.com/user_id") or me.get("sub") or "")
        team = str(me.get("https://slack.com/team_id") or "")
        if not user or not team:
            raise BadInput("Slack did not say who signed in")
        founder = user in self._founders
        return ConsoleUser(slack_actor(user), str(me.get("name") or user),
                           sees_everything=founder, founder=founder, team=team, user=user)
