"""`thoth init`, `episodes import/export` and `recall`, called as functions and as a process."""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from bridge.all_tables import ALL_SCHEMAS
from bridge.cli.main import main
from bridge.settings import Settings
from layers.shared.embedding.embedder import MiniLMEmbedder
from layers.shared.storage.engines import open_sqlite

ROOT = Path(__file__).resolve().parents[2]


class Cli:
    """Runs `thoth` in-process with the shared model and captures its output."""

    def __init__(self, settings: Settings, embedder: MiniLMEmbedder) -> None:
        self.settings = settings
        self.embedder = embedder

    def __call__(self, *argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = main(
            list(argv), settings=self.settings, stdout=out, stderr=err, embedder=self.embedder
        )
        return code, out.getvalue(), err.getvalue()


@pytest.fixture
def cli(settings: Settings, minilm: MiniLMEmbedder) -> Cli:
    return Cli(settings, minilm)


def _write_lines(path: Path, records: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _record(id_: str, text: str, **extra: str) -> dict[str, str]:
    return {
        "id": id_,
        "user_text": text,
        "summary": "",
        "created_at": "2026-03-01T10:00:00Z",
        **extra,
    }


def test_init_is_idempotent(cli: Cli, settings: Settings) -> None:
    assert cli("init")[0] == 0
    code, out, _ = cli("init")
    assert code == 0 and "0 episodes" in out
    assert settings.db_path.exists()


def test_import_export_round_trip(cli: Cli, tmp_path: Path) -> None:
    source = _write_lines(
        tmp_path / "in.jsonl",
        [
            _record(
                "e1",
                "The design review moved to Thursday",
                channel="C1",
                channel_type="private",
                team="T1",
                thread_ts="1712.5",
                user="U1",
            ),
            {
                "user_text": "No id given here",
                "summary": "kept anyway",
                "created_at": "2026-03-02T00:00:00",
            },
        ],
    )
    code, out, err = cli("episodes", "import", str(source))
    assert (code, out.strip(), err) == (0, "imported 2 episodes", "")
    code, out, _ = cli("episodes", "export")
    exported = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(exported) == 2
    first = next(e for e in exported if e["id"] == "e1")
    assert (first["channel"], first["channel_type"], first["team"], first["user"]) == (
        "C1",
        "private",
        "T1",
        "U1",
    )
    second = next(e for e in exported if e["id"] != "e1")
    assert (second["team"], second["channel"], second["channel_type"]) == (
        "local",
        "local",
        "public",
    )
    assert second["created_at"].startswith("2026-03-02T00:00:00")
    # Exported ids now exist: importing the export again is refused whole.
    again = _write_lines(tmp_path / "again.jsonl", exported)
    code, _, err = cli("episodes", "import", str(again))
    assert code == 2 and "already exists" in err


def test_one_workspace_is_exported_and_purged_alone(cli: Cli, tmp_path: Path) -> None:
    source = _write_lines(tmp_path / "in.jsonl", [
        _record("a1", "The freeze starts Friday", team="T1", channel="C1"),
        _record("a2", "Deploys pause for the freeze", team="T1", channel="C1"),
        _record("b1", "Our launch is in March", team="T2", channel="C2"),
    ])
    assert cli("episodes", "import", str(source))[0] == 0
    code, out, _ = cli("episodes", "export", "--team", "T1")
    assert code == 0 and sorted(json.loads(line)["id"] for line in out.splitlines()) == [
        "a1", "a2"]
    code, out, _ = cli("episodes", "purge", "--team", "T1")
    assert (code, out.strip()) == (0, "purged the 2 episodes of workspace T1")
    code, out, _ = cli("episodes", "export")
    assert [json.loads(line)["id"] for line in out.splitlines()] == ["b1"]
    # Recall no longer finds what was purged.
    code, out, _ = cli("recall", "freeze Friday")
    assert code == 0 and "freeze starts Friday" not in out


def test_a_bad_line_rejects_the_whole_file(cli: Cli, tmp_path: Path) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_text(
        json.dumps(_record("a", "fine"))
        + "\n"
        + "{not json\n"
        + json.dumps(_record("b", "fine too"))
        + "\n",
        encoding="utf-8",
    )
    code, out, err = cli("episodes", "import", str(source))
    assert code == 2 and out == ""
    assert "line 2" in err and "nothing was imported" in err and len(err.strip().splitlines()) == 1
    assert cli("episodes", "export")[1] == ""
    code, out, _ = cli("episodes", "import", "--skip-bad", str(source))
    assert code == 0 and "imported 2 episodes" in out and "skipped 1 bad lines" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"user_text": "x", "summary": "", "created_at": "yesterday"}\n', "line 1: created_at"),
        (b'{"user_text": "x", "created_at": "2026-01-01T00:00:00Z"}\n', "line 1: summary"),
        (
            b'{"user_text": "caf\xe9", "summary": "", "created_at": "2026-01-01T00:00:00Z"}\n',
            "not valid UTF-8",
        ),
        (b"[1, 2]\n", "expected a JSON object"),
        (
            b'{"user_text": "x", "summary": "", "created_at": "2026-01-01T00:00:00Z",'
            b' "channel_type": "dm"}\n',
            "channel_type",
        ),
    ],
)
def test_malformed_lines_are_named(cli: Cli, tmp_path: Path, content: bytes, message: str) -> None:
    source = tmp_path / "one.jsonl"
    source.write_bytes(content)
    code, _, err = cli("episodes", "import", str(source))
    assert code == 2 and message in err


def test_a_50000_character_episode_is_refused_and_nothing_changes(cli: Cli, tmp_path: Path) -> None:
    cli(
        "episodes",
        "import",
        str(_write_lines(tmp_path / "a.jsonl", [_record("keep", "stored before")])),
    )
    huge = _write_lines(tmp_path / "huge.jsonl", [_record("huge", "y" * 50_000)])
    code, _, err = cli("episodes", "import", str(huge))
    assert code == 2 and "line 1: user_text" in err and "40000" in err
    exported = cli("episodes", "export")[1]
    assert [json.loads(line)["id"] for line in exported.splitlines()] == ["keep"]


def test_missing_file_and_empty_query(cli: Cli, tmp_path: Path) -> None:
    code, _, err = cli("episodes", "import", str(tmp_path / "nope.jsonl"))
    assert code == 2 and "cannot read" in err and "No such file" in err
    code, _, err = cli("recall", "   ")
    assert code == 2 and "query is empty" in err
    code, _, err = cli("recall", "x", "--k", "0")
    assert code == 2 and "--k" in err


def test_recall_as_a_viewer_and_in_batch(cli: Cli, tmp_path: Path) -> None:
    cli(
        "episodes",
        "import",
        str(
            _write_lines(
                tmp_path / "in.jsonl",
                [
                    _record(
                        "pub",
                        "Kafka consumers lag during the nightly batch",
                        team="T1",
                        channel="C1",
                    ),
                    _record(
                        "dm",
                        "my Kafka consumer notes",
                        team="T1",
                        channel="D1",
                        channel_type="im",
                        user="U1",
                    ),
                ],
            )
        ),
    )
    code, out, _ = cli("recall", "kafka lag", "--team", "T1", "--json", "--k", "5")
    assert code == 0 and [r["id"] for r in json.loads(out)] == ["pub"]
    # The export's record of the episode, with its score: one JSON shape for an episode.
    (found,) = json.loads(out)
    _, exported, _ = cli("episodes", "export")
    as_exported = next(r for r in map(json.loads, exported.splitlines()) if r["id"] == "pub")
    assert {k: v for k, v in found.items() if k != "score"} == as_exported
    assert 0 < found["score"] <= 1.5
    code, out, _ = cli(
        "recall",
        "kafka lag",
        "--team",
        "T1",
        "--channel",
        "D1",
        "--channel-type",
        "im",
        "--user",
        "U1",
        "--json",
        "--k",
        "5",
    )
    assert {r["id"] for r in json.loads(out)} == {"pub", "dm"}
    code, out, _ = cli("recall", "kafka lag", "--team", "T1")
    assert code == 0 and out.startswith("1. 2026-03-01") and "[pub]" in out

    batch = _write_lines(
        tmp_path / "q.jsonl",
        [
            {"id": "q1", "query": "consumer lag", "team": "T1"},
            {
                "id": 2,
                "query": "kafka notes",
                "team": "T1",
                "channel": "D1",
                "channel_type": "im",
                "user": "U1",
                "at": "2026-04-01T00:00:00Z",
            },
        ],
    )
    code, out, _ = cli("recall", "--batch", str(batch), "--k", "5", "--json")
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [line["id"] for line in lines] == ["q1", 2]
    assert [r["id"] for r in lines[0]["results"]] == ["pub"]
    assert lines[1]["results"][0]["id"] == "dm"
    assert all(set(r) == {"id", "score"} for line in lines for r in line["results"])


def test_entry_point_runs_as_a_process(tmp_path: Path) -> None:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "ANTHROPIC_", "HONCHO_"))
    }
    env.update(THOTH_HOME=str(tmp_path / "home"), HF_HUB_OFFLINE="1")
    done = subprocess.run(
        [sys.executable, "-m", "bridge", "init"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "home" / "thoth.db").exists()
    blocked = tmp_path / "file"
    blocked.write_text("")
    env["THOTH_HOME"] = str(blocked / "home")
    failed = subprocess.run(
        [sys.executable, "-m", "bridge", "recall", "anything"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert failed.returncode == 1
    assert (
        failed.stderr.startswith("error: cannot open the database")
        and "THOTH_HOME" in failed.stderr
    )
    assert len(failed.stderr.strip().splitlines()) == 1


def test_retention_is_enforced_on_start(
    settings: Settings, minilm: MiniLMEmbedder, tmp_path: Path
) -> None:
    keep_forever = Cli(settings, minilm)
    old = _record("old", "the previous office was on Main street")
    old["created_at"] = "2020-01-01T00:00:00Z"
    keep_forever("episodes", "import", str(_write_lines(tmp_path / "old.jsonl", [old])))
    assert "old" in keep_forever("episodes", "export")[1]
    with_retention = Cli(settings.model_copy(update={"episode_retention_days": 30}), minilm)
    code, out, _ = with_retention("episodes", "export")
    assert code == 0 and out == ""
    code, out, _ = with_retention("episodes", "purge")
    assert code == 0 and "purged 0 episodes older than 30 days" in out


def test_long_queries(cli: Cli, tmp_path: Path) -> None:
    cli(
        "episodes",
        "import",
        str(_write_lines(tmp_path / "a.jsonl", [_record("a", "zebra crossing")])),
    )
    words = " ".join(f"word{i}" for i in range(3000))
    code, out, _ = cli("recall", f"{words} zebra", "--json")
    assert code == 0 and json.loads(out) is not None
    code, _, err = cli("recall", "q" * 50_000)
    assert code == 2 and "the limit is 40000" in err


def _many(path: Path, count: int) -> Path:
    path.write_text("".join(
        json.dumps({"id": f"e{n}", "user_text": f"note number {n} about the deploy",
                    "summary": f"deploy note {n}", "created_at": "2026-11-01T10:00:00Z"}) + "\n"
        for n in range(count)
    ))
    return path


def test_import_shows_progress_on_a_terminal_and_nothing_when_piped(tmp_path: Path) -> None:
    episodes = _many(tmp_path / "many.jsonl", 600)
    env = {**os.environ, "THOTH_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "bridge", "episodes", "import", str(episodes)]
    controller, terminal = pty.openpty()
    # A terminal of 80 columns (a new pseudo-terminal has none, and a bar fits in none).
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    try:
        on_terminal = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=terminal,
                                     text=True, timeout=300, cwd=tmp_path)
        os.close(terminal)
        shown = b""
        while select.select([controller], [], [], 0.5)[0]:
            try:
                chunk = os.read(controller, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(controller)
    assert on_terminal.returncode == 0 and on_terminal.stdout == "imported 600 episodes\n"
    assert b"600/600" in shown and b"episodes" in shown  # the bar reached the end
    assert b"256/600" in shown  # and moved a batch at a time before that
    again = _many(tmp_path / "more.jsonl", 3)
    again.write_text(again.read_text().replace('"e', '"piped-e'))
    piped = subprocess.run([*command[:-1], str(again)], env=env, capture_output=True,
                           text=True, timeout=300, cwd=tmp_path)
    assert piped.returncode == 0 and piped.stderr == ""


def test_a_batch_that_fails_takes_back_the_batches_before_it(cli: Cli, tmp_path: Path) -> None:
    cli("init")
    db = open_sqlite(cli.settings.db_path, schemas=ALL_SCHEMAS)
    with db.write() as conn:  # a store failure in the second batch, as a full disk would be
        conn.execute("CREATE TRIGGER fail_late BEFORE INSERT ON episodes WHEN NEW.id = 'e300'"
                     " BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END")
    code, _, err = cli("episodes", "import", str(_many(tmp_path / "many.jsonl", 400)))
    assert code != 0 and "e300" in err
    with db.read() as conn:
        assert conn.execute("SELECT count(*) FROM episodes").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM episode_vectors").fetchone()[0] == 0
    db.close()
