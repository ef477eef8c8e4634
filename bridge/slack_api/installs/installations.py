"""The workspaces (and Enterprise Grid orgs) Thoth is installed in, with their bot tokens.

One row per install: a workspace's own install is found by its team id; an org-wide
install on Enterprise Grid by the org's enterprise id, and it answers for every workspace
of the org that has no install of its own. Only bot tokens are kept (Thoth asks Slack for
no user scopes), sealed with ``SLACK_TOKEN_KEYS`` (``layers/shared/token_cipher.py``):
the database alone never gives a token away. Uninstalling deletes the row at once; the
workspace's memory stays until the operator exports it (``thoth episodes export
--team``) and purges it (``thoth installations purge --team``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bridge.settings import Settings
from layers.shared.storage.database import Database
from layers.shared.token_cipher import TokenCipher, TokenNotOpened

# How long an install found is answered from memory: a burst of deliveries reads the
# database once per workspace, not once per request. Deleting an install drops it here at
# once; another replica may go on using a revoked token this long, which Slack refuses.
FOUND_FOR_S = 2.0

COLUMNS = ("installed_in, enterprise_id, team_id, is_enterprise_install, app_id, bot_id,"
           " bot_user_id, bot_scopes, bot_token_sealed, installer_user_id, installed_at")


@dataclass(frozen=True)
class Installed:
    enterprise_id: str | None
    team_id: str | None
    is_enterprise_install: bool
    bot_token: str = field(repr=False)
    bot_id: str | None = None
    bot_user_id: str | None = None
    bot_scopes: str = ""
    app_id: str | None = None
    installer_user_id: str | None = None
    installed_at: float = 0.0

    @property
    def installed_in(self) -> str:
        """The row's key: the org for an org-wide install, else the workspace."""
        key = self.enterprise_id if self.is_enterprise_install else self.team_id
        if not key:
            raise ValueError("an install names neither its workspace nor its org")
        return key


class Installations:
    def __init__(self, db: Database, cipher: TokenCipher, *,
                 clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._cipher = cipher
        self._clock = clock
        self._found: dict[tuple[str | None, str | None, bool], tuple[float, Installed]] = {}

    def keep(self, install: Installed) -> None:
        """Record an install; installing again replaces the one before (a new token)."""
        self._found.clear()
        row = (install.installed_in, install.enterprise_id, install.team_id,
               int(install.is_enterprise_install), install.app_id, install.bot_id,
               install.bot_user_id, install.bot_scopes, self._cipher.seal(install.bot_token),
               install.installer_user_id, install.installed_at or self._clock())
        with self._db.write() as conn:
            conn.execute("DELETE FROM slack_installations WHERE installed_in = ?", (row[0],))
            conn.execute(f"INSERT INTO slack_installations ({COLUMNS})"
                         " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)

    def find(self, *, enterprise_id: str | None, team_id: str | None,
             is_enterprise_install: bool = False) -> Installed | None:
        """The install that answers for a request: the workspace's own, else its org's
        org-wide one."""
        asked = (enterprise_id, team_id, is_enterprise_install)
        kept = self._found.get(asked)
        if kept is not None and self._clock() < kept[0]:
            return kept[1]
        found = self._looked_up(enterprise_id=enterprise_id, team_id=team_id,
                                is_enterprise_install=is_enterprise_install)
        if found is not None:
            self._found[asked] = (self._clock() + FOUND_FOR_S, found)
        return found

    def _looked_up(self, *, enterprise_id: str | None, team_id: str | None,
                   is_enterprise_install: bool) -> Installed | None:
        # A team id finds its workspace's install, or, when it is an org's id (the place
        # of a channel shared across the org's workspaces), the org-wide one.
        keys = [] if is_enterprise_install or not team_id else [team_id]
        if not enterprise_id and team_id:
            enterprise_id = self._org_of(team_id)
        if enterprise_id:
            keys.append(enterprise_id)
        with self._db.read() as conn:
            for key in keys:
                row = conn.execute(f"SELECT {COLUMNS} FROM slack_installations"
                                   " WHERE installed_in = ?", (key,)).fetchone()
                if row is not None and (key == team_id or bool(row[3])):
                    return self._installed(row)
            if team_id and not is_enterprise_install:
                # An org's place where the org has no org-wide install: the first of its
                # workspaces' own installs speaks there (Slack's shared channel holds it).
                row = conn.execute(f"SELECT {COLUMNS} FROM slack_installations"
                                   " WHERE enterprise_id = ? AND is_enterprise_install = 0"
                                   " ORDER BY installed_at LIMIT 1", (team_id,)).fetchone()
                if row is not None:
                    return self._installed(row)
        return None

    def answered_for(self, *, team_ids: Sequence[str], enterprise_id: str) -> None:
        """Note that ``team_ids`` are workspaces of the org ``enterprise_id``: its org-wide
        install answered a request of one, or Slack said it was given access to them."""
        with self._db.write() as conn:
            for team_id in team_ids:
                conn.execute("INSERT INTO slack_org_teams (team_id, enterprise_id)"
                             " VALUES (?, ?) ON CONFLICT (team_id) DO UPDATE SET"
                             " enterprise_id = excluded.enterprise_id", (team_id, enterprise_id))

    def no_longer_for(self, team_ids: Sequence[str]) -> None:
        """The org's install was taken from these workspaces (``team_access_revoked``)."""
        self._found.clear()
        with self._db.write() as conn:
            for team_id in team_ids:
                conn.execute("DELETE FROM slack_org_teams WHERE team_id = ?", (team_id,))

    def teams_of(self, enterprise_id: str) -> list[str]:
        """The workspaces an org's install answers for, as Slack last said."""
        with self._db.read() as conn:
            rows = conn.execute("SELECT team_id FROM slack_org_teams WHERE enterprise_id = ?",
                                (enterprise_id,)).fetchall()
        return sorted(str(row[0]) for row in rows)

    def _org_of(self, team_id: str) -> str | None:
        with self._db.read() as conn:
            row = conn.execute("SELECT enterprise_id FROM slack_org_teams WHERE team_id = ?",
                               (team_id,)).fetchone()
        return None if row is None else str(row[0])

    def remove(self, *, enterprise_id: str | None, team_id: str | None) -> bool:
        """Delete the install a workspace was answered through, and its token
        (``tokens_revoked``, ``app_uninstalled``): the workspace's own, or, for an event
        that names only the org, the org-wide one."""
        key = team_id or enterprise_id
        if not key:
            return False
        self._found.clear()
        with self._db.write() as conn:
            gone = conn.execute("DELETE FROM slack_installations WHERE installed_in = ?",
                                (key,)).rowcount
        return gone > 0

    def listed(self) -> list[Installed]:
        """Every install, tokens left sealed (an empty ``bot_token``): for `thoth
        installations list`, which never needs one."""
        with self._db.read() as conn:
            rows = conn.execute(f"SELECT {COLUMNS} FROM slack_installations"
                                " ORDER BY installed_at").fetchall()
        return [self._installed(row, opened=False) for row in rows]

    def unopened(self) -> list[str]:
        """The installs whose token no key of SLACK_TOKEN_KEYS opens (for `thoth doctor`)."""
        with self._db.read() as conn:
            rows = conn.execute("SELECT installed_in, bot_token_sealed"
                                " FROM slack_installations").fetchall()
        shut = []
        for key, sealed in rows:
            try:
                self._cipher.open(str(sealed))
            except TokenNotOpened:
                shut.append(str(key))
        return shut

    def reseal(self) -> int:
        """Seal every token again with the first key of SLACK_TOKEN_KEYS; how many."""
        with self._db.write() as conn:
            rows = conn.execute("SELECT installed_in, bot_token_sealed"
                                " FROM slack_installations").fetchall()
            for key, sealed in rows:
                conn.execute("UPDATE slack_installations SET bot_token_sealed = ?"
                             " WHERE installed_in = ?", (self._cipher.reseal(str(sealed)), key))
        return len(rows)

    def _installed(self, row: tuple[object, ...], *, opened: bool = True) -> Installed:
        def text(value: object) -> str | None:
            return None if value is None else str(value)

        return Installed(
            enterprise_id=text(row[1]), team_id=text(row[2]),
            is_enterprise_install=bool(row[3]), app_id=text(row[4]), bot_id=text(row[5]),
            bot_user_id=text(row[6]), bot_scopes=str(row[7] or ""),
            bot_token=self._cipher.open(str(row[8])) if opened else "",
            installer_user_id=text(row[9]), installed_at=float(str(row[10])),
        )


def installs_wanted(settings: Settings) -> bool:
    return settings.slack_bot_token is None and settings.slack_token_keys is not None


def installations_of(settings: Settings, db: Database) -> Installations:
    assert settings.slack_token_keys is not None
    return Installations(db, TokenCipher.from_setting(
        settings.slack_token_keys.get_secret_value()))
