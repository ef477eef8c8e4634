"""The one Settings object: read once from the environment and `.env`, then passed down.

No other module reads ``os.environ``. Layers take plain values from the composition
root (``bridge.app.build``), so they never import this module. A child process (the
reflection) is handed its parent's settings whole, as JSON (``SETTINGS_JSON_VARIABLE``):
the same values, whatever their type, with nothing re-read from `.env`.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from bridge.model.catalogue import DEFAULT_PRICES, Effort
from bridge.model.pricing import ModelPrice
from bridge.model.protocol import WEB_TOOLS, WebTool
from layers.shared.places import PLACE_KINDS

DEFAULT_SLACK_API_URL = "https://slack.com/api/"
# The kinds of place a place list names (mcp.json's ``places``, WEB_TOOLS_PLACES); any
# other word must be a Slack channel id (C…, G… or D…).
_CHANNEL_ID = re.compile(r"^[CGD][A-Z0-9]{2,}$")
# Where a child process finds its parent's settings (``Settings.to_json``).
SETTINGS_JSON_VARIABLE = "THOTH_SETTINGS_JSON"


class Settings(BaseSettings):
    """Every setting DESIGN.md names; `.env.example` documents each one."""

    model_config = SettingsConfigDict(
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        case_sensitive=False,
        # `KEY=` (as in a copied .env.example) means "not set", not an empty string.
        env_ignore_empty=True,
    )

    thoth_home: Path = Field(default=Path("~/.thoth"))
    # Unset: the SQLite file under THOTH_HOME. postgresql://…: every store on that
    # PostgreSQL (a secret: it may hold the password).
    database_url: SecretStr | None = None
    # Who runs reflections, follow-ups and identity ingest: "inline", the process that
    # queued them (one `thoth serve`, or `thoth chat`); "workers", `thoth worker`
    # processes claiming them from the database's queues (docs/deployment.md).
    background_work: Literal["inline", "workers"] = "inline"
    # Seconds a replica's hold on a Slack delivery lasts unrenewed: how soon another
    # replica answers what a crashed one had acknowledged (renewed three times as often).
    inbox_lease_s: Annotated[float, Field(ge=1)] = 30

    anthropic_api_key: SecretStr | None = None
    anthropic_base_url: str | None = None
    # claude-sonnet-4-5 (DESIGN.md's example) reaches end of life on 2026-11-30 (the
    # SDK's deprecation table), so the default is its successor at the same price.
    # The model Anthropic's Models overview recommends as the starting point (models.json).
    thoth_model: str = "claude-opus-5-5"
    thoth_reflection_model: str = "claude-opus-5-5"
    # Tries per model call (429, 5xx, 529 overloaded and timeouts are retried).
    model_max_attempts: Annotated[int, Field(ge=1, le=10)] = 4
    model_timeout_s: Annotated[float, Field(gt=0)] = 60
    # The wall-clock time within which a model call's retries may start (retry-after is
    # honoured within it); past it the turn is queued and answered once the model is back.
    model_retry_budget_s: Annotated[float, Field(gt=0)] = 30
    # Once the model's API was found overloaded, one call is let through this often to
    # see whether it is back (bridge/model/overload.py).
    model_probe_every_s: Annotated[float, Field(gt=0)] = 5
    # How often serve looks for turns queued while the model was overloaded.
    answer_later_every_s: Annotated[float, Field(gt=0)] = 2
    # How much the model reasons (output_config.effort), per purpose. A turn is read live
    # in Slack: medium (Opus 5.5's own default) keeps replies quick. Reflection runs once
    # after the session and what it keeps lasts: high. A model without the level gets the
    # nearest lower one it has; a model without effort gets none (models.json).
    thoth_effort: Effort = "medium"
    thoth_reflection_effort: Effort = "high"
    # max_tokens caps thinking and text together. Unset, it is sized per model and effort
    # (bridge/model/output_budget.py) so that thinking plus the longest reply fits.
    model_max_tokens: Annotated[int | None, Field(gt=0)] = None
    reflection_max_tokens: Annotated[int | None, Field(gt=0)] = None
    # Dollars per million tokens; MODEL_PRICES (JSON) adds to or overrides the defaults.
    model_prices: dict[str, ModelPrice] = Field(default_factory=lambda: dict(DEFAULT_PRICES))

    slack_bot_token: SecretStr | None = None
    slack_app_token: SecretStr | None = None
    slack_signing_secret: SecretStr | None = None
    slack_api_url: str = DEFAULT_SLACK_API_URL
    # How long one Slack Web API call may take before it counts as failed (a timed-out
    # post may still have landed: bridge/slack_api/sure_posts.py checks before sending
    # again), and how long a reply keeps trying to reach a failing Slack before the turn
    # is told it was not delivered.
    slack_timeout_s: Annotated[float, Field(gt=0)] = 30.0
    slack_delivery_window_s: Annotated[float, Field(gt=0)] = 180.0

    honcho_api_key: SecretStr | None = None
    honcho_url: str | None = None
    honcho_workspace_id: str | None = None
    # The user model from Honcho: "representation" (stored facts, no LLM call) or
    # "dialectic" (Honcho's own model answers "what should I know about this person?").
    honcho_user_model: Literal["representation", "dialectic"] = "representation"
    # Honcho's deriver batches a conversation's messages for up to 30 minutes, so after a
    # "forget me" it may still draw facts from what the person said before it: this long
    # after the forget those are swept, and until then their new turns wait unsent.
    honcho_forget_settle_min: Annotated[float, Field(ge=0)] = 35

    honcho_disabled: bool = False
    episodic_disabled: bool = False
    reflection_disabled: bool = False

    founder_user_ids: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Who keeps a memory note proposed from a conversation: "approval", a founder (a card
    # in the thread, or `thoth notes approve`); "auto", kept at once when it rests on
    # founders' own words only (every other note still waits for a founder).
    memory_notes: Literal["approval", "auto"] = "approval"
    # Signs the memory console's session cookies. Unset: one made on the first start and
    # kept in THOTH_HOME/console_secret (bridge/console/cookie_secret.py); set it (the same
    # on every replica) when replicas do not share THOTH_HOME.
    console_secret: SecretStr | None = None
    # Sign in with Slack for the console (the app's Basic Information page): members sign
    # in and see what Slack lets them read; unset, only the operator's link signs in.
    slack_client_id: str | None = None
    slack_client_secret: SecretStr | None = None
    # Seal the bot tokens of the workspaces Thoth is installed in (Fernet keys, commas
    # between them: the first seals, each opens). Set, with no SLACK_BOT_TOKEN: Thoth is
    # installed through Slack's OAuth flow, into as many workspaces as install it.
    slack_token_keys: SecretStr | None = None
    # Where people reach the console and /mcp (https://thoth.example.com), for Slack's
    # redirect back and as MCP's OAuth issuer; unset, the address the browser used (and
    # no OAuth sign-in for MCP clients: tokens only).
    console_url: str | None = None
    daily_cost_cap_usd: Annotated[float, Field(ge=0)] = 5.0
    # Each person's share of the day's spend (their turns; reflection is the team's).
    # Unset: no share, only DAILY_COST_CAP_USD.
    daily_cost_cap_per_person_usd: Annotated[float | None, Field(ge=0)] = None
    brain_remote: str | None = None
    # Each fetch and push to BRAIN_REMOTE is killed past this; a remote that failed is
    # then skipped (commits kept here, pushed when it answers) until a probe succeeds.
    brain_remote_timeout_s: Annotated[float, Field(gt=0)] = 10

    reflection_idle_min: Annotated[float, Field(gt=0)] = 30
    # A reflection process is killed past this; a run older than it is retried. At high
    # effort a thinking model may write 28 000 tokens, and a cut report is asked again
    # with twice the room: at 60-80 tokens a second that is minutes, not seconds.
    reflection_timeout_s: Annotated[float, Field(gt=0)] = 900
    user_model_timeout_s: Annotated[float, Field(gt=0)] = 1.5
    recall_tau_days: Annotated[float, Field(gt=0)] = 14
    recall_top_k: Annotated[int, Field(gt=0, le=50)] = 3
    # An episode sharing no word with the query is recalled only this close in meaning
    # (MiniLM's cosine; layers/episodic/memory.py). 0: the k nearest, however far.
    recall_min_similarity: Annotated[float, Field(ge=0, le=1)] = 0.25
    # Which of recall's levers are on (layers/episodic/recall_levers.py): "default", "all",
    # "none", or names, comma-separated. For measuring each; a team leaves it at default.
    recall_levers: str = "default"
    episode_retention_days: Annotated[int, Field(ge=0)] = 0
    # The session transcript sent with each turn, newest turns first, in tokens.
    transcript_token_budget: Annotated[int, Field(gt=0)] = 6000
    # Megabytes a shared file may be: a larger one is not downloaded, and the person is
    # told (bridge/files/reading.py; Slack serves files of up to 1 GB).
    file_max_mb: Annotated[int, Field(ge=1, le=100)] = 20
    # The team's MCP servers (bridge/team_tools/config.py): this file, else mcp.json in
    # THOTH_HOME; none when neither exists.
    mcp_config: Path | None = None
    # Seconds one call to a team's MCP tool may take before the model is told it timed out.
    mcp_tool_timeout_s: Annotated[float, Field(gt=0, le=600)] = 60.0
    # Routines (bridge/routines/): how often one may run at most, how many one person may
    # have, and how late a run missed while no process was up is still run (once).
    routine_min_interval_min: Annotated[float, Field(ge=1, le=1440)] = 15.0
    routine_max_per_person: Annotated[int, Field(ge=1, le=1000)] = 20
    routine_grace_min: Annotated[float, Field(ge=1, le=10080)] = 120.0
    # Anthropic's web tools, run by the API itself: "search", "fetch", or both, commas
    # between. Empty: off (bridge/pipeline/web_access.py).
    web_tools: Annotated[list[WebTool], NoDecode] = Field(default_factory=list)
    # Where they may be used: public, private, im, mpim or channel ids, commas between.
    # Unset: wherever Thoth answers.
    web_tools_places: Annotated[list[str] | None, NoDecode] = None

    @field_validator("founder_user_ids", mode="before")
    @classmethod
    def _split_user_ids(cls, value: object) -> object:
        # Slack ids are plain tokens, so a comma list is friendlier in .env than JSON;
        # a JSON list and spaces between ids are taken too (people write both).
        if isinstance(value, str):
            if value.strip().startswith("["):
                try:
                    return json.loads(value)
                except json.JSONDecodeError as error:
                    raise ValueError(f"is not a JSON list ({error.msg})") from error
            return [part for part in re.split(r"[\s,]+", value) if part]
        return value

    @field_validator("web_tools", mode="before")
    @classmethod
    def _known_web_tools(cls, value: object) -> object:
        # A word that is not a web tool is refused with the words that are, in one line,
        # rather than pydantic's error per list item.
        words = _words(value)
        if words is None:
            return value
        words = [word.lower() for word in words]
        unknown = [word for word in words if word not in WEB_TOOLS]
        if unknown:
            raise ValueError(f"{unknown[0]!r} is not a web tool: use {', '.join(WEB_TOOLS)}"
                             " or both, commas between (empty: off)")
        return list(dict.fromkeys(words))

    @field_validator("web_tools_places", mode="before")
    @classmethod
    def _known_places(cls, value: object) -> object:
        words = _words(value)
        if words is None:
            return value
        unknown = [word for word in words
                   if word not in PLACE_KINDS and not _CHANNEL_ID.match(word)]
        if unknown:
            raise ValueError(f"{unknown[0]!r} is neither a kind of place"
                             f" ({', '.join(PLACE_KINDS)}) nor a channel id")
        return words

    @field_validator("anthropic_base_url", "slack_api_url", "honcho_url", mode="after")
    @classmethod
    def _is_a_web_address(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urllib.parse.urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{value!r} is not an http:// or https:// address")
        return value

    @field_validator("database_url", mode="after")
    @classmethod
    def _is_a_postgresql_url(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and urllib.parse.urlsplit(value.get_secret_value()).scheme not in (
            "postgresql", "postgres"
        ):
            raise ValueError("is not a postgresql:// URL (leave it unset for SQLite)")
        return value

    @field_validator("model_prices", mode="after")
    @classmethod
    def _prices_extend_defaults(cls, value: dict[str, ModelPrice]) -> dict[str, ModelPrice]:
        return {**DEFAULT_PRICES, **value}

    @field_validator("thoth_home", mode="after")
    @classmethod
    def _expand_home(cls, value: Path) -> Path:
        return value.expanduser()

    @field_validator("slack_api_url", mode="after")
    @classmethod
    def _slack_url_ends_with_slash(cls, value: str) -> str:
        # slack_sdk joins the method name onto the base URL, so it must end in "/".
        return value if value.endswith("/") else value + "/"

    @model_validator(mode="after")
    def _slack_transport_is_complete(self) -> Settings:
        if self.slack_app_token is not None and self.slack_bot_token is None:
            raise ValueError(
                "SLACK_APP_TOKEN is set but SLACK_BOT_TOKEN is not: set both for Socket Mode"
            )
        return self

    def to_json(self) -> str:
        """Every setting, secrets included (for a child process of this one only)."""
        values = self.model_dump(mode="json")
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, SecretStr):
                values[name] = value.get_secret_value()
        return json.dumps(values)

    @classmethod
    def from_json(cls, text: str) -> Settings:
        return cls(_env_file=None, **json.loads(text))  # type: ignore[call-arg]

    @property
    def db_path(self) -> Path:
        return self.thoth_home / "thoth.db"

    @property
    def brain_path(self) -> Path:
        return self.thoth_home / "brain"

    @property
    def mcp_config_path(self) -> Path:
        return self.mcp_config.expanduser() if self.mcp_config else self.thoth_home / "mcp.json"


def _words(value: object) -> list[str] | None:
    """A comma (or space) list as its words; a list as its items; None for anything else
    (left to pydantic to refuse)."""
    if isinstance(value, str):
        return [word for word in re.split(r"[\s,]+", value.strip()) if word]
    if isinstance(value, list | tuple):
        return [str(item).strip() for item in value]
    return None


def load_settings() -> Settings:
    """The parent's settings in a child process; the environment and `.env` otherwise."""
    handed_down = os.environ.get(SETTINGS_JSON_VARIABLE)
    return Settings.from_json(handed_down) if handed_down else Settings()
