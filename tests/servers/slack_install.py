"""Installing an app through Slack's OAuth v2 flow, on the loopback Slack, as Slack's pages
describe it ("Installing with OAuth", ``oauth.v2.access``, ``auth.test``).

- ``GET /oauth/v2/authorize`` (on slack.com, not under /api/): the browser is sent back to
  ``redirect_uri`` with a one-time ``code`` and the ``state`` it came with, for the install
  ``next_install`` describes (which workspace or org, by whom); with ``next_install.deny``
  the person pressed Cancel and comes back with ``error=access_denied``. Refused with a 400
  page: an unknown ``client_id``, a ``redirect_uri`` the app did not register, no bot
  ``scope``.
- ``oauth.v2.access``: the code for a bot token of that workspace (or org, for an org-wide
  install). The app authenticates with HTTP Basic or the form's ``client_id`` /
  ``client_secret``. Errors, as Slack names them: ``invalid_client_id``,
  ``bad_client_secret``, ``invalid_code`` (unknown, used, or older than ten minutes),
  ``bad_redirect_uri``, ``invalid_grant_type``.
- Each token issued belongs to its workspace: ``auth.test`` answers for it, and it reaches
  only its workspace's conversations (a channel of another is ``channel_not_found``,
  unless shared with it). ``uninstall`` revokes a workspace's tokens: every call with one
  is refused ``token_revoked`` from then on.
"""

from __future__ import annotations

import html
import re
import secrets
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from tests.servers.slack_api import FakeSlack, RecordedCall
from tests.servers.slack_sign_in import check_client, spend_code


@dataclass
class Install:
    """Who installs next, where."""

    team_id: str | None
    team_name: str = "A Workspace"
    user: str = "UINSTALLER"
    enterprise_id: str | None = None
    enterprise_name: str = "An Org"
    org_wide: bool = False
    deny: bool = False


@dataclass
class InstalledBot:
    install: Install
    bot_user_id: str
    bot_id: str
    scopes: str
    revoked: bool = False


@dataclass
class _Code:
    install: Install
    redirect_uri: str
    scopes: str
    issued_at: float
    used: bool = False


@dataclass
class AppInstalls:
    fake: FakeSlack
    client_id: str
    client_secret: str
    redirect_uris: tuple[str, ...]
    next_install: Install | None = None
    bots: dict[str, InstalledBot] = field(default_factory=dict)
    _codes: dict[str, _Code] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.fake.installs = self

    def authorize(self, query: dict[str, str]) -> tuple[int, dict[str, str], str]:
        if query.get("client_id") != self.client_id:
            return 400, {}, "invalid_client_id"
        redirect_uri = query.get("redirect_uri", "")
        if redirect_uri not in self.redirect_uris:
            return 400, {}, "bad_redirect_uri"
        scopes = query.get("scope", "")
        if not scopes:
            return 400, {}, "no_scopes"
        install = self.next_install
        if install is None:
            return 200, {}, "Sign in to your workspace"
        state = {"state": query["state"]} if "state" in query else {}
        if install.deny:
            back = {"error": "access_denied", **state}
            return 302, {"Location": f"{redirect_uri}?{urlencode(back)}"}, ""
        code = f"{install.team_id or install.enterprise_id}.{secrets.token_hex(8)}"
        with self.fake._lock:
            self._codes[code] = _Code(install, redirect_uri, scopes, time.time())
        return 302, {"Location": f"{redirect_uri}?{urlencode({'code': code, **state})}"}, ""

    def access(self, call: RecordedCall) -> dict[str, Any]:
        check_client(call, self.client_id, self.client_secret)
        grant = self._codes.get(str(call.args.get("code") or ""))
        spend_code(grant, call, redirect_uri_required=False)
        assert grant is not None
        install = grant.install
        where = install.enterprise_id if install.org_wide else install.team_id
        bot = InstalledBot(install, bot_user_id=f"UBOT{where}", bot_id=f"BBOT{where}",
                           scopes=grant.scopes)
        token = f"xoxb-{where}-{secrets.token_hex(12)}"
        self.bots[token] = bot
        enterprise = ({"id": install.enterprise_id, "name": install.enterprise_name}
                      if install.enterprise_id else None)
        return {
            "access_token": token, "token_type": "bot", "scope": grant.scopes,
            "bot_user_id": bot.bot_user_id, "app_id": self.fake.app_id,
            "team": None if install.org_wide else {"id": install.team_id,
                                                   "name": install.team_name},
            "enterprise": enterprise, "is_enterprise_install": install.org_wide,
            "authed_user": {"id": install.user},
        }

    def uninstall(self, where: str) -> None:
        """The workspace (or org) removed the app: its tokens are revoked at once."""
        with self.fake._lock:
            for bot in self.bots.values():
                install = bot.install
                if where in (install.team_id, install.enterprise_id):
                    bot.revoked = True

    # -- what the rest of the loopback asks ------------------------------------------

    def refusal(self, token: str) -> str | None:
        bot = self.bots.get(token)
        if bot is None:
            return "invalid_auth"
        return "token_revoked" if bot.revoked else None

    def auth_test(self, token: str) -> dict[str, Any] | None:
        bot = self.bots.get(token)
        if bot is None:
            return None
        install = bot.install
        return {
            "url": f"https://{install.team_id or install.enterprise_id}.slack.com/",
            "team": install.team_name, "user": "thoth",
            "team_id": install.enterprise_id if install.org_wide else install.team_id,
            "user_id": bot.bot_user_id, "bot_id": bot.bot_id,
            "enterprise_id": install.enterprise_id,
            "is_enterprise_install": install.org_wide,
        }

    def workspace_of(self, token: str | None) -> str:
        """The workspace (or org) whose limits a call counts against."""
        bot = self.bots.get(token or "")
        if bot is None:
            return ""
        return str(bot.install.enterprise_id if bot.install.org_wide else bot.install.team_id)

    def reaches(self, token: str | None, channel: dict[str, Any]) -> bool:
        """Whether a call with ``token`` may see ``channel``: one of its own workspace (or
        of its org, for an org-wide install), or shared with it."""
        bot = self.bots.get(token or "")
        if bot is None:
            return True  # the fake's own bot token: the single-workspace tests
        owner = channel.get("context_team_id")
        teams = {owner, *(channel.get("shared_team_ids") or [])}
        if bot.install.org_wide:
            return channel.get("enterprise_id") == bot.install.enterprise_id
        return bot.install.team_id in teams


class Browser:
    """A browser's cookies and one step at a time (redirects are looked at, not followed).

    Bolt's state cookie is ``Secure``: a browser sends it to http://127.0.0.1 too (loopback
    is a secure context), which Python's cookie jar does not, hence cookies kept here."""

    def __init__(self) -> None:
        self.cookies: dict[str, str] = {}

    def get(self, url: str) -> tuple[int, str, str]:
        """Status, body and Location of one GET."""
        cookie = "; ".join(f"{name}={value}" for name, value in self.cookies.items())
        request = urllib.request.Request(url, headers={"cookie": cookie} if cookie else {})
        opener = urllib.request.build_opener(_NoRedirects)
        try:
            with opener.open(request, timeout=10) as response:
                self._keep(response.headers.get_all("Set-Cookie") or [])
                return response.status, response.read().decode(), ""
        except urllib.error.HTTPError as error:
            self._keep(error.headers.get_all("Set-Cookie") or [])
            return error.code, error.read().decode(), error.headers.get("Location") or ""

    def _keep(self, headers: list[str]) -> None:
        for header in headers:
            name, _, rest = header.partition("=")
            value = rest.split(";")[0]
            if "01 Jan 1970" in header:
                self.cookies.pop(name, None)
            else:
                self.cookies[name] = value


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def to_slack_and_back(base: str, installs: AppInstalls, install: Install,
                      browser: Browser) -> str:
    """A browser's "Add to Slack" at ``base`` (Thoth), through Slack's authorize page: where
    Slack sends it back to (the browser has not gone there yet)."""
    status, page, _ = browser.get(base + "/slack/install")
    assert status == 200, page
    (authorize,) = re.findall(r'href="([^"]*oauth/v2/authorize[^"]*)"', page)
    installs.next_install = install
    status, _, back = browser.get(html.unescape(authorize))
    assert status == 302, back
    return back


def install_through(base: str, installs: AppInstalls, install: Install) -> int:
    """The whole of "Add to Slack" in a new browser; the status of Thoth's last page."""
    browser = Browser()
    return browser.get(to_slack_and_back(base, installs, install, browser))[0]
