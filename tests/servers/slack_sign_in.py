"""Sign in with Slack (OpenID Connect) on the loopback Slack, as Slack's pages describe it.

- ``GET /openid/connect/authorize`` (on slack.com, not under /api/): the browser is sent
  back to ``redirect_uri`` with a one-time ``code`` and the ``state`` it came with, for
  the person the browser is signed into Slack as (``signed_in_as``). Refused with a 400
  page: an unknown ``client_id``, a ``redirect_uri`` the app did not register,
  ``response_type`` other than ``code``, a ``scope`` without ``openid``.
- ``openid.connect.token``: the code for an ``xoxp-`` access token and an ``id_token``.
  The client authenticates with HTTP Basic (what the SDK sends) or the form's
  ``client_id`` / ``client_secret``. Errors, as Slack names them: ``invalid_client_id``,
  ``bad_client_secret``, ``invalid_code`` (unknown, used once already, or older than
  ten minutes), ``bad_redirect_uri`` (not the one the authorize step had),
  ``invalid_grant_type``.
- ``openid.connect.userInfo``: the person behind an access token it issued (``sub``,
  ``https://slack.com/user_id``, ``https://slack.com/team_id``, ``name``); any other
  token is ``invalid_auth``.
"""

from __future__ import annotations

import base64
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlencode

from tests.servers.slack_api import FakeSlack, RecordedCall
from tests.servers.slack_rules import SlackError

CODE_TTL_S = 600.0


@dataclass
class _Grant:
    user: str
    redirect_uri: str
    nonce: str | None
    issued_at: float
    used: bool = False


class SignInWithSlack:
    """The app's Sign in with Slack settings and the codes and tokens it issued."""

    def __init__(self, fake: FakeSlack, *, client_id: str, client_secret: str,
                 redirect_uris: tuple[str, ...]) -> None:
        self.fake = fake
        self.client_id = client_id
        self.client_secret = client_secret
        self.redirect_uris = redirect_uris
        # Who the browser is signed into Slack as (None: Slack would ask them to sign in).
        self.signed_in_as: str | None = None
        self._grants: dict[str, _Grant] = {}
        self._tokens: dict[str, str] = {}
        fake.sign_in = self

    def authorize(self, query: dict[str, str]) -> tuple[int, dict[str, str], str]:
        """Slack's answer to the browser: a redirect back, or a page saying why not."""
        if query.get("client_id") != self.client_id:
            return 400, {}, "invalid_client_id"
        redirect_uri = query.get("redirect_uri", "")
        if redirect_uri not in self.redirect_uris:
            return 400, {}, "bad_redirect_uri"
        if query.get("response_type") != "code":
            return 400, {}, "unsupported_response_type"
        if "openid" not in query.get("scope", "").split():
            return 400, {}, "invalid_scope"
        if self.signed_in_as is None:
            return 200, {}, "Sign in to your workspace"
        code = f"{self.fake.team_id}.{secrets.token_hex(8)}"
        with self.fake._lock:
            self._grants[code] = _Grant(self.signed_in_as, redirect_uri, query.get("nonce"),
                                        time.time())
        back = {"code": code, **({"state": query["state"]} if "state" in query else {})}
        return 302, {"Location": f"{redirect_uri}?{urlencode(back)}"}, ""

    def token(self, call: RecordedCall) -> dict[str, Any]:
        check_client(call, self.client_id, self.client_secret)
        grant = self._grants.get(str(call.args.get("code") or ""))
        spend_code(grant, call, redirect_uri_required=True)
        assert grant is not None
        access = f"xoxp-{secrets.token_hex(12)}"
        self._tokens[access] = grant.user
        claims = {"iss": "https://slack.com", "sub": grant.user, "aud": self.client_id,
                  "nonce": grant.nonce, **self._identity(grant.user)}
        id_token = ".".join(base64.urlsafe_b64encode(json.dumps(part).encode()).decode()
                            for part in ({"alg": "none"}, claims)) + "."
        return {"access_token": access, "token_type": "Bearer", "id_token": id_token}

    def user_info(self, call: RecordedCall) -> dict[str, Any]:
        user = self._tokens.get(call.token or "")
        if user is None:
            raise SlackError("invalid_auth")
        return {"sub": user, **self._identity(user)}

    def _identity(self, user: str) -> dict[str, Any]:
        profile = self.fake._users.get(user, {})
        return {"https://slack.com/user_id": user,
                "https://slack.com/team_id": self.fake.team_id,
                "https://slack.com/team_name": self.fake.team,
                "name": profile.get("real_name", user), "locale": "en-US"}


class OneTimeCode(Protocol):
    redirect_uri: str
    issued_at: float
    used: bool


def spend_code(grant: OneTimeCode | None, call: RecordedCall, *,
               redirect_uri_required: bool) -> None:
    """Use a code once, refused as Slack names it: ``invalid_code`` (unknown, used, or
    past ten minutes), ``bad_redirect_uri`` (not the authorize step's; OAuth v2 lets the
    exchange leave it out, OpenID Connect does not)."""
    if grant is None or grant.used or time.time() - grant.issued_at > CODE_TTL_S:
        raise SlackError("invalid_code")
    given = call.args.get("redirect_uri")
    if given != grant.redirect_uri and (redirect_uri_required or given is not None):
        raise SlackError("bad_redirect_uri")
    grant.used = True


def check_client(call: RecordedCall, client_id: str, client_secret: str) -> None:
    """The app's own credentials on a code exchange, refused as Slack names it."""
    given_id, given_secret = _client(call)
    if given_id != client_id:
        raise SlackError("invalid_client_id")
    if given_secret != client_secret:
        raise SlackError("bad_client_secret")
    if call.args.get("grant_type", "authorization_code") != "authorization_code":
        raise SlackError("invalid_grant_type")


def _client(call: RecordedCall) -> tuple[str | None, str | None]:
    auth = call.headers.get("authorization", "")
    if auth.startswith("Basic "):
        try:
            client_id, _, secret = base64.b64decode(auth[6:]).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return None, None
        return client_id, secret
    return call.args.get("client_id"), call.args.get("client_secret")
