"""`thoth init`, `thoth skills …` and `thoth doctor`, called as functions on a real home."""

from __future__ import annotations

import io
import json
from pathlib import Path

import git

from bridge.cli.main import main
from bridge.settings import Settings
from tests.fakes import HashingEmbedder
from tests.servers import anthropic_api as api
from tests.servers.anthropic_api import FakeAnthropic

BODY = (
    "# Standup digest\n\n1. Collect yesterday's updates from the thread.\n"
    "2. Group by person: done, doing, blocked.\n3. Flag every blocker with its owner.\n"
)


def thoth(settings: Settings, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), settings=settings, stdout=out, stderr=err, embedder=HashingEmbedder())
    return code, out.getvalue(), err.getvalue()


def test_init_creates_the_brain_once(settings: Settings) -> None:
    code, out, _ = thoth(settings, "init")
    assert code == 0 and "brain:" in out and "(3 skills)" in out
    assert thoth(settings, "init")[0] == 0
    assert len(list(git.Repo(settings.brain_path).iter_commits())) == 1


def test_propose_approve_show_and_remove(settings: Settings, tmp_path: Path) -> None:
    body = tmp_path / "body.md"
    body.write_text(BODY)
    code, out, err = thoth(
        settings, "skills", "propose", "standup-digest", "--description", "Digest a standup",
        "--body-file", str(body), "--by", "dana",
    )
    assert code == 0, err
    code, listing, _ = thoth(settings, "skills", "list", "--json")
    (draft,) = json.loads(listing)["drafts"]
    assert draft["slug"] == "standup-digest" and draft["state"] == "pending"

    code, out, _ = thoth(settings, "skills", "approve", draft["id"], "--by", "ari")
    assert code == 0 and "approved standup-digest 1.0.0" in out
    code, out, _ = thoth(settings, "skills", "show", "standup-digest")
    assert "Flag every blocker" in out
    code, out, _ = thoth(settings, "skills", "show", draft["id"])
    assert "accepted" in out and "decided by ari" in out
    code, again, err = thoth(settings, "skills", "approve", draft["id"])
    assert code == 2 and "already accepted" in err

    code, out, _ = thoth(settings, "skills", "remove", "standup-digest", "--by", "ari")
    assert code == 0
    summaries = [c.summary for c in git.Repo(settings.brain_path).iter_commits()]
    assert summaries[:2] == ["Remove skill standup-digest", "Add skill standup-digest 1.0.0"]
    # Each decision is in the audit log, by whom, from the command line.
    from bridge.all_tables import ALL_SCHEMAS
    from layers.shared.audit.log import AuditLog
    from layers.shared.storage.engines import open_sqlite

    db = open_sqlite(settings.thoth_home / "thoth.db", schemas=ALL_SCHEMAS)
    try:
        logged = [(e.actor, e.action, e.origin) for e in AuditLog(db).entries(action="skill")]
    finally:
        db.close()
    assert logged == [("ari", "skill.remove", "cli"), ("ari", "skill.approve", "cli")]


def test_bad_skill_input_is_one_line_and_exit_2(settings: Settings, tmp_path: Path) -> None:
    code, _, err = thoth(
        settings, "skills", "propose", "x", "--description", "d", "--body-file",
        str(tmp_path / "missing.md"),
    )
    assert code == 2 and err.startswith("error: cannot read") and err.count("\n") == 1
    assert thoth(settings, "skills", "reject", "nope")[0] == 2
    assert thoth(settings, "skills", "remove", "nope")[0] == 2


def test_doctor_reports_a_truncated_persona_file_and_a_skipped_skill(settings: Settings) -> None:
    assert thoth(settings, "init")[0] == 0
    (settings.brain_path / "persona" / "MEMORY.md").write_text("- note\n" * 3000)
    broken = settings.brain_path / "skills" / "broken-one"
    broken.mkdir()
    (broken / "SKILL.md").write_text("no front matter")
    code, out, _ = thoth(settings, "doctor")
    assert code == 0, out
    assert "warn  persona    MEMORY.md is over 12000 characters" in out
    assert "warn  skills     broken-one is skipped" in out
    assert "info  model      no ANTHROPIC_API_KEY" in out


def test_doctor_fails_on_a_broken_brain(settings: Settings) -> None:
    settings.brain_path.mkdir(parents=True)
    (settings.brain_path / "stray.txt").write_text("not a repo")
    code, out, _ = thoth(settings, "doctor", "--json")
    assert code == 1
    brain = next(c for c in json.loads(out) if c["name"] == "brain")
    assert brain["status"] == "FAIL" and "not a git repository" in brain["detail"]
    code, _, err = thoth(settings, "init")
    assert code == 1 and "not a git repository" in err


def test_people_show_and_forget(settings: Settings) -> None:
    import asyncio

    from bridge.app import build
    from layers.identity.protocol import Person

    app = build(settings, embedder=HashingEmbedder())
    assert app.identity is not None
    asyncio.run(
        app.identity.observe(Person("local", "dana"), ["Dana runs the Friday demo"],
                             session_id=None, source="reflection")
    )
    app.close()
    code, out, _ = thoth(settings, "people", "show", "dana", "--json")
    (fact,) = json.loads(out)
    assert fact["text"] == "Dana runs the Friday demo" and fact["source"] == "reflection"
    code, out, _ = thoth(settings, "people", "forget", "dana")
    assert code == 0 and out.startswith("forgot dana: deleted 0 exchange(s)")
    assert ", 1 fact(s). Kept:" in out
    code, out, _ = thoth(settings, "people", "show", "dana")
    assert "nothing is known about dana" in out
    code, out, _ = thoth(settings, "doctor")
    assert "ok    identity   local backend (SQLite, no server)" in out


def test_doctor_warns_about_a_legacy_or_unpriced_model(settings: Settings) -> None:
    old = settings.model_copy(update={"thoth_model": "claude-sonnet-4-6",
                                      "thoth_reflection_model": "claude-nova-9"})
    code, out, _ = thoth(old, "doctor")
    assert "claude-sonnet-4-6 is legacy" in out and "THOTH_MODEL=claude-opus-5-5" in out
    assert "claude-nova-9 is unknown" in out and "charged as the dearest listed" in out


def test_doctor_shows_each_models_row_and_names_a_refusal_with_its_fix(
    model_settings: Settings, fake_anthropic: FakeAnthropic
) -> None:
    both = model_settings.model_copy(update={"thoth_reflection_model": "claude-haiku-5-5"})
    code, out, _ = thoth(both, "doctor")
    assert "ok    model      claude-opus-5-5 answers (THOTH_MODEL)" in out
    assert "claude-haiku-5-5 answers (THOTH_REFLECTION_MODEL)" in out
    assert ("THOTH_MODEL: claude-opus-5-5 (current): context 1,000,000, max output 128,000;"
            " thinking always adaptive; forced tools refused") in out
    assert "0.1/$0.5 per million in/out" in out and "5x every price past 100,000" in out
    assert "sees images (600 a request), PDFs (100 pages)" in out
    # The probe is shaped as turns are: thinking and effort as the model takes them.
    probe = fake_anthropic.requests[0].body
    assert probe["thinking"]["type"] == "adaptive" and probe["output_config"] == {
        "effort": "medium"}
    fake_anthropic.push(api.error(401, error_message="invalid x-api-key"))
    code, out, _ = thoth(model_settings, "doctor")
    assert code != 0 and "invalid x-api-key" in out and "check ANTHROPIC_API_KEY" in out


def test_doctor_loads_the_embedding_model_only_when_asked(settings: Settings) -> None:
    assert thoth(settings, "init")[0] == 0
    code, out, _ = thoth(settings, "doctor", "--json")
    (quick,) = [c for c in json.loads(out) if c["name"] == "embedding"]
    assert quick["status"] == "ok" and "--deep loads it" in quick["detail"]
    code, out, _ = thoth(settings, "doctor", "--deep", "--json")
    (deep,) = [c for c in json.loads(out) if c["name"] == "embedding"]
    assert deep["status"] == "ok" and "dims" in deep["detail"]


def test_doctor_warns_when_the_home_is_readable_by_others(settings: Settings) -> None:
    assert thoth(settings, "init")[0] == 0
    code, out, _ = thoth(settings, "doctor")
    assert "readable by its owner only" in out
    settings.thoth_home.chmod(0o755)
    code, out, _ = thoth(settings, "doctor")
    assert "can be read by other users" in out and f"chmod -R go-rwx {settings.thoth_home}" in out
