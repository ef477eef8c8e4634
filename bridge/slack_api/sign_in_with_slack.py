"""Sign in with Slack (OpenID Connect) for team members.

The browser goes to Slack's authorize page with a ``state`` and a ``nonce`` kept in the
session; Slack sends it back with a one-time code, which is exchanged here for a user
token (``openid.connect.token``), whose person is then asked of Slack
(``openid.connect.userInfo``). Through the async Slack SDK, as every Slack call of the
serving process. Founders (``FOUNDER_USER_IDS``) get the operator's view.

Decided: the console (and MCP's OAuth sign-in, ``bridge/mcp/oauth.py``) is for the full
members of the workspace Thoth is installed in. The bot's token says which workspace that
is (``auth.test``) and what Slack knows of the person (``users.info``): someone of
another workspace, a guest (whose memory is confined to the channels they are in), a bot
or a deactivated account is refused. Without
``SLACK_BOT_TOKEN`` nobody can be checked, so members cannot sign in.
"""

from __future__ import annotations

import secrets
from urllib.parse import urlencode, urlsplit

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bridge.access.signed_in import SignedInPerson
from bridge.settings import Settings
from bridge.slack_api.workspace_client import WorkspaceOf, serving_team
from layers.shared.audit import slack_actor
from layers.shared.errors import BadInput

SCOPES = "openid profile"


def slack_sign_in(settings: Settings, bot: AsyncWebClient | None,
                  workspace_of: WorkspaceOf | None = None) -> SlackSignIn | None:
    """Sign in with Slack, where the app's client id and secret are set."""
    if not (settings.slack_client_id and settings.slack_client_secret):
        return None
    return SlackSignIn(client_id=settings.slack_client_id,
                       client_secret=settings.slack_client_secret.get_secret_value(),
                       api_url=settings.slack_api_url,
                       founders=frozenset(settings.founder_user_ids), bot=bot,
                       workspace_of=workspace_of)


class SlackSignIn:
    def __init__(self, *, client_id: str, client_secret: str, api_url: str,
                 founders: frozenset[str], bot: AsyncWebClient | None,
                 workspace_of: WorkspaceOf | None = None) -> None:
        """``workspace_of``: installed into many workspaces, the install each person's
        workspace is asked through."""
        self._client_id = client_id
        self._client_secret = client_secret
        self._api_url = api_url
        self._founders = founders
        self._bot = bot
        self._workspace_of = workspace_of
        self._installed_team: str | None = None

    def authorize_url(self, redirect_uri: str) -> tuple[str, str]:
        """Where to send the browser, and the state to keep in the session. (No nonce:
        the person is asked of Slack with the token, the id_token is not read.)"""
        state = secrets.token_urlsafe(24)
        api = urlsplit(self._api_url)
        query = urlencode({"response_type": "code", "scope": SCOPES,
                           "client_id": self._client_id, "state": state,
                           "redirect_uri": redirect_uri})
        return f"{api.scheme}://{api.netloc}/openid/connect/authorize?{query}", state

    async def complete(self, code: str, redirect_uri: str) -> SignedInPerson:
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
        await self.check_member(team, user)
        founder = user in self._founders
        return SignedInPerson(slack_actor(user), str(me.get("name") or user),
                           sees_everything=founder, founder=founder, team=team, user=user)

    async def check_member(self, team: str, user: str) -> None:
        """``BadInput`` unless ``user`` is a full, active member of a workspace Thoth is
        installed in (with one bot token: of its workspace)."""
        if self._bot is None:
            raise BadInput("members cannot sign in here: the console needs SLACK_BOT_TOKEN to"
                           " ask Slack who they are")
        async with serving_team(self._workspace_of, team) as installed:
            if not installed:
                raise BadInput("signing in is for the members of the workspaces Thoth is"
                               " installed in")
            try:
                if self._workspace_of is None and self._installed_team is None:
                    self._installed_team = str(
                        (await self._bot.auth_test()).get("team_id") or "")
                known = (await self._bot.users_info(user=user)).get("user") or {}
            except SlackApiError as error:
                raise BadInput(f"Slack would not say who signed in"
                               f" ({error.response.get('error')})") from error
        # Installed into many workspaces, the team's own install answered: it is one.
        if self._workspace_of is None and team != self._installed_team:
            raise BadInput("signing in is for the members of the workspace Thoth is in")
        if any(known.get(flag) for flag in (
                "is_restricted", "is_ultra_restricted", "is_stranger", "is_bot", "deleted")):
            raise BadInput("signing in is for the workspace's full members; guests and"
                           " people of other organisations see Thoth's memory in Slack")
