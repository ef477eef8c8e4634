"""`thoth installations new-key|list|reseal`: the workspaces Thoth is installed in
through Slack's OAuth flow, and the keys their bot tokens are sealed with.

Rotating the key, without losing an install: put a new key (`new-key`) first in
SLACK_TOKEN_KEYS, keep the old one after it, run `reseal` (every token sealed again with
the new key: the installs' and people's own connections'), then drop the old key. A
workspace that uninstalled Thoth keeps its memory until the operator exports it (`thoth
episodes export --team T`) and purges it (`thoth installations purge --team T --yes`:
every layer, ``workspace_purge.py``).
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime
from typing import Any, TextIO

from bridge.app import Thoth
from bridge.cli.login import login_name
from bridge.cli.redacted_output import show_once
from bridge.connections.store import ConnectionStore
from bridge.slack_api.installs.installations import Installations, installations_of
from bridge.workspace_purge import purge_workspace
from layers.shared.errors import BadInput, ConfigurationError
from layers.shared.token_cipher import TokenCipher


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "installations", help="the workspaces Thoth is installed in, and their token keys")
    actions = parser.add_subparsers(dest="action", required=True, parser_class=type(parser))
    new_key = actions.add_parser("new-key", help="a new key for SLACK_TOKEN_KEYS (printed once)")
    new_key.set_defaults(handler=run_new_key)
    listing = actions.add_parser("list", help="every install: which workspace or org, since when")
    listing.set_defaults(handler=run_list)
    reseal = actions.add_parser(
        "reseal", help="seal every bot token again with the first key of SLACK_TOKEN_KEYS")
    reseal.set_defaults(handler=run_reseal)
    purge = actions.add_parser(
        "purge", help="delete everything Thoth keeps of a workspace that uninstalled it")
    purge.add_argument("--team", required=True,
                       help="the workspace's id (T...), or an Enterprise Grid org's (E...)")
    purge.add_argument("--yes", action="store_true",
                       help="yes, delete it: episodes, sessions, notes, identity, follow-ups")
    purge.set_defaults(handler=run_purge)


def run_new_key(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    print("a new key, shown once, below: put it first in SLACK_TOKEN_KEYS (commas between"
          " keys), then run `thoth installations reseal`", file=out)
    key = TokenCipher.new_key()
    show_once(out, key)
    return 0


def run_list(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    installs = _installations(app).listed()
    if not installs:
        print("Thoth is installed in no workspace through Slack's OAuth flow", file=out)
    for install in installs:
        since = datetime.fromtimestamp(install.installed_at, UTC).strftime("%Y-%m-%d %H:%M")
        where = (f"org {install.enterprise_id} (org-wide)" if install.is_enterprise_install
                 else f"workspace {install.team_id}"
                 + (f" of org {install.enterprise_id}" if install.enterprise_id else ""))
        print(f"{where}: bot user {install.bot_user_id}, installed {since} UTC"
              f" by {install.installer_user_id or 'unknown'}", file=out)
    return 0


def run_reseal(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    count = _installations(app).reseal()
    assert app.settings.slack_token_keys is not None
    # People's own connections are sealed with the same keys (``bridge/connections/``).
    connections = ConnectionStore(app.db, TokenCipher.from_setting(
        app.settings.slack_token_keys.get_secret_value())).reseal()
    print(f"{count} bot token(s) and {connections} connection record(s) sealed again with"
          " the first key of SLACK_TOKEN_KEYS: the other keys may now be dropped", file=out)
    return 0


def run_purge(args: argparse.Namespace, app: Thoth, out: TextIO) -> int:
    team = args.team.strip()
    if not team:
        raise BadInput("--team names the workspace to purge (its id, T...)")
    if app.settings.slack_token_keys is not None and _installations(app).find(
            enterprise_id=None, team_id=team) is not None:
        raise BadInput(f"Thoth is still installed in {team}: its memory would grow again;"
                       " purge a workspace after it uninstalled Thoth")
    if not args.yes:
        raise BadInput(f"this deletes everything Thoth keeps of {team} and cannot be undone"
                       " (export it first: thoth episodes export --team); say --yes")
    by = login_name()
    purged = purge_workspace(app, team, by=by, now=time.time())
    app.audit.record(actor=by, action="workspace.purge", target=team,
                     origin="cli", detail=purged.describe())
    print(f"purged workspace {team}: {purged.describe()}", file=out)
    return 0


def _installations(app: Thoth) -> Installations:
    if app.settings.slack_token_keys is None:
        raise ConfigurationError("SLACK_TOKEN_KEYS is not set: Thoth keeps no installs"
                                 " without it (README, 'Slack')")
    return installations_of(app.settings, app.db)
