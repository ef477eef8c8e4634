from pathlib import Path

import pytest
from pydantic import ValidationError

from bridge.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_need_no_configuration(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("THOTH_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.thoth_home == tmp_path / ".thoth"
    assert settings.db_path == tmp_path / ".thoth" / "thoth.db"
    assert (settings.recall_top_k, settings.recall_tau_days, settings.episode_retention_days) == (
        3,
        14,
        0,
    )
    assert settings.anthropic_api_key is None


def test_environment_is_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FOUNDER_USER_IDS", "U1, U2,,U3")
    monkeypatch.setenv("SLACK_API_URL", "http://127.0.0.1:9999/api")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.founder_user_ids == ["U1", "U2", "U3"]
    assert settings.slack_api_url == "http://127.0.0.1:9999/api/"
    assert "sk-ant-test" not in repr(settings)


def test_bad_values_fail_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECALL_TOP_K", "0")
    with pytest.raises(ValidationError, match="recall_top_k"):
        Settings(_env_file=None)  # type: ignore[call-arg]


def test_socket_mode_needs_a_bot_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-1-test")
    with pytest.raises(ValidationError, match="SLACK_BOT_TOKEN"):
        Settings(_env_file=None)  # type: ignore[call-arg]


def test_env_example_documents_every_setting() -> None:
    documented = {
        line.split("=", 1)[0].strip()
        for line in (ROOT / ".env.example").read_text().splitlines()
        if "=" in line and not line.startswith("#")
    }
    assert documented == {name.upper() for name in Settings.model_fields}


def test_a_copied_env_example_configures_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".env").write_text((ROOT / ".env.example").read_text())
    monkeypatch.chdir(tmp_path)
    settings = Settings()
    assert settings.anthropic_api_key is None
    assert settings.slack_bot_token is None
    assert settings.model_prices["claude-sonnet-4-6"].output == 15


def test_model_prices_extend_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "MODEL_PRICES",
        '{"claude-next": {"input": 1, "output": 2, "cache_read": 0.1, "cache_write": 1.25}}',
    )
    prices = Settings(_env_file=None).model_prices  # type: ignore[call-arg]
    assert prices["claude-next"].output == 2
    assert "claude-sonnet-4-6" in prices


def test_a_child_gets_every_setting_whole_whatever_its_type(tmp_path: Path) -> None:
    from pydantic import SecretStr

    from bridge.model.pricing import ModelPrice
    from bridge.reflection_launcher import child_environment
    from bridge.settings import SETTINGS_JSON_VARIABLE

    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        thoth_home=tmp_path,
        anthropic_api_key=SecretStr("sk-ant-api03-" + "x" * 40),
        founder_user_ids=["U1", "U2"],
        model_prices={"house-model": ModelPrice(input=1, output=2, cache_read=0, cache_write=0)},
        reflection_timeout_s=12.5,
        honcho_disabled=True,
    )
    handed = child_environment(settings)[SETTINGS_JSON_VARIABLE]
    child = Settings.from_json(handed)
    assert child == settings
    assert child.anthropic_api_key is not None
    assert child.anthropic_api_key.get_secret_value() == "sk-ant-api03-" + "x" * 40
    assert child.model_prices["house-model"].output == 2


def test_web_tools_are_off_by_default_and_read_as_a_comma_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert Settings(_env_file=None).web_tools == []  # type: ignore[call-arg]
    monkeypatch.setenv("WEB_TOOLS", "Search, fetch,search")
    monkeypatch.setenv("WEB_TOOLS_PLACES", "public im,C0123ABC")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.web_tools == ["search", "fetch"]
    assert settings.web_tools_places == ["public", "im", "C0123ABC"]


@pytest.mark.parametrize(("name", "value", "said"), [
    ("WEB_TOOLS", "search,browse", "'browse' is not a web tool: use search, fetch or both"),
    ("WEB_TOOLS_PLACES", "public,dms", "'dms' is neither a kind of place"),
])
def test_a_web_setting_with_an_unknown_word_names_it(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, said: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError, match=said):
        Settings(_env_file=None)  # type: ignore[call-arg]
