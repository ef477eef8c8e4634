"""`thoth routines list|pause|resume|delete`: the operator sees every routine (as lines,
or JSON with the last runs) and changes any, each change audited as the operator's from
the CLI; a routine that is not there is one line and exit 2."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.app import Thoth, build
from bridge.cli.main import main
from bridge.routines.store import Routine, RoutineStore
from bridge.settings import Settings
from layers.shared.audit.log import AuditLog
from layers.shared.places import Place
from tests.fakes import HashingEmbedder

GENERAL = Place("T1", "C1", "public", None, "general")
DM = Place("T1", "D1", "im", None, None)


@pytest.fixture
def settings(isolated_environment: Path) -> Settings:
    return Settings(_env_file=None)  # type: ignore[call-arg]


@pytest.fixture
def made(settings: Settings) -> Iterator[tuple[Routine, Routine]]:
    app: Thoth = build(settings, embedder=HashingEmbedder())
    store = RoutineStore(app.db)
    digest = store.create(GENERAL, "U1", "dana", "post yesterday's decisions", "0 9 * * 1-5",
                          "Europe/London", 1_900_000_000.0)
    reminder = store.create(DM, "U2", "erin", "remind me of the deploy freeze", "0 16 * * 5",
                            "America/New_York", 1_900_000_000.0)
    assert store.begin_run(digest.id, 1_899_900_000.0, "replica-a")
    store.end_run(digest.id, 1_899_900_000.0, "posted", "posted in #general", "1.1")
    app.close()
    yield digest, reminder


def _thoth(settings: Settings, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), settings=settings, stdout=out, stderr=err,
                embedder=HashingEmbedder())
    return code, out.getvalue(), err.getvalue()


def test_list_shows_every_routine_and_json_its_last_runs(
    settings: Settings, made: tuple[Routine, Routine],
) -> None:
    digest, reminder = made
    code, out, err = _thoth(settings, "routines", "list")
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"{digest.id}  T1:U1  #general  0 9 * * 1-5 (Europe/London)"
                               "  active  next ")
    assert "posted" in lines[0] and "post yesterday's decisions" in lines[0]
    assert lines[1].startswith(f"{reminder.id}  T1:U2  D1") and "not run yet" in lines[1]
    code, out, _ = _thoth(settings, "routines", "list", "--json")
    assert code == 0
    listed = {item["id"]: item for item in json.loads(out)["routines"]}
    assert listed[digest.id]["zone"] == "Europe/London"
    assert listed[digest.id]["place"]["channel_name"] == "general"
    (run,) = listed[digest.id]["runs"]
    assert run["outcome"] == "posted" and run["posted_ts"] == "1.1"
    assert run["due_at"].startswith("2030-03-1")
    assert listed[reminder.id]["runs"] == []


def test_pause_resume_and_delete_as_the_operator_audited(
    settings: Settings, made: tuple[Routine, Routine],
) -> None:
    digest, _ = made
    code, out, err = _thoth(settings, "routines", "pause", digest.id)
    assert code == 0, err
    assert out.startswith(f"paused {digest.id}")
    code, out, _ = _thoth(settings, "routines", "list")
    assert "paused (paused by operator)" in out
    code, _, err = _thoth(settings, "routines", "pause", digest.id)
    assert code == 2 and "paused already" in err
    code, out, _ = _thoth(settings, "routines", "resume", digest.id)
    assert code == 0 and out.startswith(f"resumed {digest.id}: next run ")
    code, out, _ = _thoth(settings, "routines", "delete", digest.id)
    assert code == 0 and out.startswith(f"deleted {digest.id}")
    code, _, err = _thoth(settings, "routines", "delete", digest.id)
    assert code == 2 and err.strip() == f"error: there is no routine {digest.id!r}"
    app = build(settings, embedder=HashingEmbedder())
    try:
        assert RoutineStore(app.db).get(digest.id) is None
        entries = AuditLog(app.db).entries(action="routine")
    finally:
        app.close()
    assert sorted((e.action, e.actor, e.origin, e.target) for e in entries) == sorted(
        (action, "operator", "cli", f"routine:{digest.id}")
        for action in ("routine.pause", "routine.resume", "routine.delete"))


def test_no_routines_and_a_missing_id(settings: Settings) -> None:
    code, out, _ = _thoth(settings, "routines", "list")
    assert code == 0 and out == "no routines\n"
    code, _, err = _thoth(settings, "routines", "pause")
    assert code == 2 and "routine_id" in err
