"""Issue 55, fault 5: the disk under SQLite fills, then space is freed.

A real ``thoth serve`` (HTTP mode, SQLite) with its ``THOTH_HOME`` on a small tmpfs made
for the run (``tests/small_disk.py``: root only), the loopback Slack (its rate tiers
lifted) and the loopback Messages API. One thread is answered first (the disk has room),
then a filler file takes every free byte (the write-ahead log checkpointed to nothing
first: every write from there needs new room), ``--full-threads`` threads are sent, the
disk stays full ``--full-s`` seconds, the filler is deleted and ``--after-threads`` more
threads are sent. Each thread is a mention and its ``message`` event, each delivered
twice (the second as Slack's retry). No restart anywhere.

Printed (``bench/fault_figures.py``), per thread: answered once, told plainly it could not
be kept (and not answered), lost (neither), doubled (two messages of Thoth's: two
answers, told twice, or told and answered too); the seconds from the space freed to the
first turn stored in the transcript; transcript turns lost (an answered thread not in
it) or doubled; and ``PRAGMA integrity_check`` once it is all over.

    python bench/fault_disk_full.py [--full-threads 10] [--after-threads 5] [--full-s 10]
    python bench/fault_disk_full.py --short
"""

from __future__ import annotations

import argparse
import http.client
import json
import sqlite3
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from slack_sdk.signature import SignatureVerifier  # noqa: E402

from bench.fault_figures import FaultFigures, print_table  # noqa: E402
from bench.slack_burst import SECRET, Replica, _environment, _init, _places  # noqa: E402
from tests.servers.anthropic_api import FakeAnthropic  # noqa: E402
from tests.servers.slack_api import FakeSlack  # noqa: E402
from tests.small_disk import MB, SmallDisk, small_disk  # noqa: E402

DISK_MB = 64
# The Slack inbox's lease: a delivery left leased while the disk was full comes round
# again after it; the run waits two leases after the last thread to see any that would.
LEASE_S = 3.0
DISK_FULL_WORDS = "disk is full"
STORED_WAIT_S = 60.0


def measure(full_threads: int = 10, after_threads: int = 5, full_s: float = 10.0,
            workdir: Path | None = None) -> FaultFigures:
    with tempfile.TemporaryDirectory(prefix="thoth-fault-disk-") as scratch:
        where = workdir or Path(scratch)
        with small_disk(where / "disk", DISK_MB * MB) as disk:
            return _run(disk, where, full_threads, after_threads, full_s)


def _run(disk: SmallDisk, scratch: Path, full_threads: int, after_threads: int,
         full_s: float) -> FaultFigures:
    with FakeSlack(rate_limits=False) as slack, FakeAnthropic() as model:
        place = _places(slack, 0)[0]
        slack.add_user("U1", "dana")
        environment = {**_environment(slack.url, model.url, None),
                       "INBOX_LEASE_S": str(LEASE_S)}
        home = disk.path / "home"
        home.mkdir()
        # The server's log is kept off the small disk, so it says what happened in full.
        (home / "serve.log").symlink_to(scratch / "serve.log")
        _init(home, environment)
        replica = Replica(home, environment)
        database = home / "thoth.db"
        sender = _Sender(replica.url(), place.channel, place.bot)
        try:
            sender.thread(0)
            _stored(database, 0, STORED_WAIT_S)
            with sqlite3.connect(database) as conn:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            disk.fill()
            full = range(1, full_threads + 1)
            for number in full:
                sender.thread(number)
            time.sleep(full_s)
            disk.free()
            freed = time.monotonic()
            after = range(full_threads + 1, full_threads + after_threads + 1)
            for number in after:
                sender.thread(number)
            first = _stored(database, after[0], STORED_WAIT_S) if after else None
            recovery_s = (first - freed) if first is not None else float("inf")
            for number in after:
                _stored(database, number, STORED_WAIT_S)
            time.sleep(2 * LEASE_S)  # a delivery left leased comes round: seen here
        finally:
            replica.stop()
        told, answered = _thoth_said(slack, place.channel)
        turns = _stored_turns(database)
        integrity = _integrity(database)
        model_calls = len(model.requests)
    numbers = list(full) + list(after)
    said = {n: told.get(n, 0) + answered.get(n, 0) for n in numbers}
    answered_once = [n for n in numbers if said[n] == 1 and answered.get(n, 0) == 1]
    return FaultFigures(
        fault="disk full (SQLite)",
        sent=len(numbers),
        answered_once=len(answered_once),
        told_failed=sum(1 for n in numbers if said[n] == 1 and told.get(n, 0) == 1),
        lost=sum(1 for n in numbers if said[n] == 0),
        doubled=sum(1 for n in numbers if said[n] > 1),
        recovery_s=recovery_s,
        writes_lost=sum(1 for n in answered_once if turns.get(n, 0) == 0),
        writes_doubled=sum(1 for n in numbers if turns.get(n, 0) > 1),
        how=(f"THOTH_HOME on a {DISK_MB} MB tmpfs filled to the last byte for {full_s:g} s:"
             f" {full_threads} threads while full, {after_threads} after (mention + message"
             f" event, each retried); model calls {model_calls - 1} for"
             f" {len(answered_once)} answered; integrity_check {integrity}"),
    )


class _Sender:
    """Signed deliveries of one thread at a time, as Slack sends them."""

    def __init__(self, url: str, channel: str, bot: str) -> None:
        self._url = urlsplit(url)
        self._channel = channel
        self._bot = bot
        self._verifier = SignatureVerifier(SECRET)
        self.base = int(time.time())

    def ts(self, number: int) -> str:
        return f"{self.base}.{number:06d}"

    def thread(self, number: int) -> None:
        ts = self.ts(number)
        mention = {"type": "app_mention", "user": "U1",
                   "text": f"<@{self._bot}> {_question(number)}", "ts": ts,
                   "channel": self._channel, "team": "T1", "event_ts": ts}
        message = {**mention, "type": "message", "channel_type": "channel"}
        for letter, event in (("M", mention), ("S", message)):
            body = json.dumps({
                "type": "event_callback", "team_id": "T1", "api_app_id": "A1",
                "event_id": f"Ev{letter}{number:04d}", "event_time": self.base, "event": event,
                "authorizations": [{"enterprise_id": None, "team_id": "T1",
                                    "user_id": self._bot, "is_bot": True,
                                    "is_enterprise_install": False}]})
            for retry in (False, True):
                self._post(body, retry=retry)

    def _post(self, body: str, *, retry: bool) -> None:
        moment = str(int(time.time()))
        headers = {"content-type": "application/json", "x-slack-request-timestamp": moment,
                   "x-slack-signature": self._verifier.generate_signature(
                       timestamp=moment, body=body) or ""}
        if retry:
            headers |= {"x-slack-retry-num": "1", "x-slack-retry-reason": "http_timeout"}
        connection = http.client.HTTPConnection(self._url.hostname or "", self._url.port,
                                                timeout=10)
        try:
            connection.request("POST", self._url.path, body=body.encode(), headers=headers)
            connection.getresponse().read()
        finally:
            connection.close()


def _question(number: int) -> str:
    return f"question {number:04d}"


def _stored(database: Path, number: int, timeout_s: float) -> float | None:
    """When thread ``number``'s turn was first seen in the transcript (monotonic)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _stored_turns(database).get(number):
            return time.monotonic()
        time.sleep(0.05)
    return None


def _stored_turns(database: Path) -> dict[int, int]:
    """Transcript turns per thread number."""
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT user_text FROM transcript_turns").fetchall()
    turns: dict[int, int] = {}
    for (text,) in rows:
        tail = str(text).rsplit("question ", 1)
        if len(tail) == 2 and tail[1].strip().isdigit():
            number = int(tail[1])
            turns[number] = turns.get(number, 0) + 1
    return turns


def _thoth_said(slack: FakeSlack, channel: str) -> tuple[dict[int, int], dict[int, int]]:
    """Per thread number (the thread's ts, ``_Sender.ts``), Thoth's messages saying the
    disk is full, and its others."""
    told: dict[int, int] = {}
    answered: dict[int, int] = {}
    for message in slack.messages(channel):
        thread = str(message.get("thread_ts") or "")
        if not str(message.get("user") or "").startswith("UBOT") or not thread:
            continue
        number = int(thread.rsplit(".", 1)[1])
        kind = told if DISK_FULL_WORDS in json.dumps(message) else answered
        kind[number] = kind.get(number, 0) + 1
    return told, answered


def _integrity(database: Path) -> str:
    with sqlite3.connect(database) as conn:
        return " ".join(str(row[0]) for row in conn.execute("PRAGMA integrity_check"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full-threads", type=int, default=10)
    parser.add_argument("--after-threads", type=int, default=5)
    parser.add_argument("--full-s", type=float, default=10.0,
                        help="how long the disk stays full after the last thread sent")
    parser.add_argument("--short", action="store_true",
                        help="3 threads while full, 2 after, 2 s full")
    args = parser.parse_args(argv)
    if args.short:
        args.full_threads, args.after_threads, args.full_s = 3, 2, 2.0
    figures = measure(args.full_threads, args.after_threads, args.full_s)
    print_table([figures])
    return 0 if figures.met else 1


if __name__ == "__main__":
    raise SystemExit(main())
