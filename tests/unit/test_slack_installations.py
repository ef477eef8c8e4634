"""The installs' store (bridge/slack_api/installs/): bot tokens sealed at rest and resealed
under a new key without losing an install, the org-wide install answering for its
workspaces, and OAuth states used once."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import yaml

from bridge.all_tables import ALL_SCHEMAS
from bridge.slack_api.installs.install_flow import BOT_SCOPES
from bridge.slack_api.installs.installations import Installations, Installed
from bridge.slack_api.installs.oauth_states import STATE_TTL_S, OAuthStates
from layers.shared.errors import ConfigurationError
from layers.shared.storage.database import Database
from layers.shared.storage.engines import open_sqlite
from layers.shared.token_cipher import TokenCipher, TokenNotOpened

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "xoxb-1111-2222-abcdefabcdefabcdef"


@pytest.fixture
def db(tmp_path: Path) -> Database:
    return open_sqlite(tmp_path / "thoth.db", schemas=ALL_SCHEMAS)


def test_a_token_is_sealed_at_rest_and_resealed_under_a_new_key(db: Database,
                                                                 tmp_path: Path) -> None:
    old, new = TokenCipher.new_key(), TokenCipher.new_key()
    Installations(db, TokenCipher([old])).keep(
        Installed(enterprise_id=None, team_id="T1", is_enterprise_install=False,
                  bot_token=TOKEN, bot_user_id="UBOT1"))
    raw = sqlite3.connect(tmp_path / "thoth.db").execute(
        "SELECT * FROM slack_installations").fetchall()
    assert TOKEN not in repr(raw)

    rotating = Installations(db, TokenCipher([new, old]))
    assert rotating.reseal() == 1
    # The old key dropped: the install is still there, its token still opens.
    found = Installations(db, TokenCipher([new])).find(enterprise_id=None, team_id="T1")
    assert found is not None and found.bot_token == TOKEN and found.bot_user_id == "UBOT1"
    with pytest.raises(TokenNotOpened):
        Installations(db, TokenCipher([old])).find(enterprise_id=None, team_id="T1")


def test_a_key_that_is_not_a_fernet_key_is_one_clear_line() -> None:
    with pytest.raises(ConfigurationError, match="not a Fernet key"):
        TokenCipher.from_setting("not-a-key")
    with pytest.raises(ConfigurationError, match="empty"):
        TokenCipher.from_setting(" , ")


def test_an_org_wide_install_answers_for_its_workspaces_unless_one_has_its_own(
    db: Database,
) -> None:
    installs = Installations(db, TokenCipher([TokenCipher.new_key()]))
    installs.keep(Installed(enterprise_id="E1", team_id=None, is_enterprise_install=True,
                            bot_token="xoxb-org"))
    installs.keep(Installed(enterprise_id="E1", team_id="T2", is_enterprise_install=False,
                            bot_token="xoxb-own"))
    org = installs.find(enterprise_id="E1", team_id="T1")
    own = installs.find(enterprise_id="E1", team_id="T2")
    assert org is not None and org.bot_token == "xoxb-org"
    assert own is not None and own.bot_token == "xoxb-own"
    assert installs.find(enterprise_id="E9", team_id="T9") is None
    # The org's own id as a team: the place of a channel shared across its workspaces
    # (directory.place_team), spoken in through the org-wide install.
    by_org = installs.find(enterprise_id=None, team_id="E1")
    assert by_org is not None and by_org.bot_token == "xoxb-org"

    assert installs.remove(enterprise_id="E1", team_id="T2")
    assert installs.find(enterprise_id=None, team_id="T2") is None
    assert installs.remove(enterprise_id="E1", team_id=None)
    assert installs.listed() == []


def test_an_orgs_place_with_no_org_wide_install_is_spoken_in_by_a_workspace_of_it(
    db: Database,
) -> None:
    installs = Installations(db, TokenCipher([TokenCipher.new_key()]))
    installs.keep(Installed(enterprise_id="E1", team_id="T2", is_enterprise_install=False,
                            bot_token="xoxb-two", installed_at=20.0))
    installs.keep(Installed(enterprise_id="E1", team_id="T1", is_enterprise_install=False,
                            bot_token="xoxb-one", installed_at=10.0))
    installs.keep(Installed(enterprise_id=None, team_id="T5", is_enterprise_install=False,
                            bot_token="xoxb-five", installed_at=5.0))
    found = installs.find(enterprise_id=None, team_id="E1")
    assert found is not None and found.bot_token == "xoxb-one"
    assert installs.find(enterprise_id=None, team_id="E2") is None


def test_an_oauth_state_is_used_once_and_lapses(db: Database) -> None:
    now = [1000.0]
    states = OAuthStates(db, clock=lambda: now[0])
    state = states.issue()
    assert states.consume(state)
    assert not states.consume(state)  # replayed
    assert not states.consume("forged")
    late = states.issue()
    now[0] += STATE_TTL_S + 1
    assert not states.consume(late)


def test_the_manifest_asks_for_the_scopes_the_install_flow_asks_for() -> None:
    manifest = yaml.safe_load((ROOT / "manifest.yml").read_text())
    assert sorted(manifest["oauth_config"]["scopes"]["bot"]) == sorted(BOT_SCOPES)
    events = manifest["settings"]["event_subscriptions"]["bot_events"]
    assert {"app_uninstalled", "tokens_revoked"} <= set(events)


def test_doctor_says_whether_the_keys_open_every_install(tmp_path: Path) -> None:
    from pydantic import SecretStr

    from bridge.app import build
    from bridge.health_checks import Status, _slack
    from bridge.settings import Settings
    from tests.fakes import HashingEmbedder

    old, new = TokenCipher.new_key(), TokenCipher.new_key()
    settings = Settings(_env_file=None, thoth_home=tmp_path,  # type: ignore[call-arg]
                        slack_token_keys=SecretStr(old), slack_client_id="1.2",
                        slack_client_secret=SecretStr("s"), slack_signing_secret=SecretStr("x"),
                        console_url="https://thoth.example.com")
    app = build(settings, embedder=HashingEmbedder())
    try:
        Installations(app.db, TokenCipher([old])).keep(Installed(
            enterprise_id=None, team_id="T1", is_enterprise_install=False, bot_token=TOKEN))
        (check,) = _slack(app)
        assert check.status == Status.OK and "1 workspace" in check.detail
        app.settings = settings.model_copy(update={"slack_token_keys": SecretStr(new)})
        (check,) = _slack(app)
        assert check.status == Status.FAIL and "T1" in check.detail
        app.settings = settings.model_copy(update={"console_url": None})
        (check,) = _slack(app)
        assert check.status == Status.FAIL and "CONSOLE_URL" in check.detail
    finally:
        app.close()


def test_thoth_installations_new_key_list_and_reseal(tmp_path: Path) -> None:
    import io

    from pydantic import SecretStr

    from bridge.cli.main import main
    from bridge.settings import Settings
    from tests.fakes import HashingEmbedder

    def thoth(settings: Settings, *argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = main(list(argv), settings=settings, stdout=out, stderr=err,
                    embedder=HashingEmbedder())
        return code, out.getvalue(), err.getvalue()

    bare = Settings(_env_file=None, thoth_home=tmp_path)  # type: ignore[call-arg]
    code, out, _ = thoth(bare, "installations", "new-key")
    key = out.strip().splitlines()[-1]
    assert code == 0 and TokenCipher([key]).open(TokenCipher([key]).seal(TOKEN)) == TOKEN
    code, _, err = thoth(bare, "installations", "list")
    assert code == 1 and "SLACK_TOKEN_KEYS is not set" in err

    keyed = bare.model_copy(update={"slack_token_keys": SecretStr(key)})
    code, out, _ = thoth(keyed, "installations", "list")
    assert (code, out.strip()) == (0, "Thoth is installed in no workspace through Slack's"
                                      " OAuth flow")
    code, out, _ = thoth(keyed, "installations", "reseal")
    assert code == 0 and out.startswith("0 bot token(s) and 0 connection record(s) sealed again")
