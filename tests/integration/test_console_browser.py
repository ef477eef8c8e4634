"""The memory console end to end: `thoth console` as a real process, driven in the
machine's Chromium (Debian's package; Playwright launches it, nothing is downloaded).

Screenshots of each page are kept in build/test-artifacts/console/.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bridge.all_tables import ALL_SCHEMAS
from layers.identity.local.store import ObservationStore
from layers.identity.protocol import Person
from layers.notes.store import NoteStore
from layers.shared.places import LOCAL_TEAM, Place
from layers.shared.storage.engines import open_sqlite
from tests.servers.anthropic_api import FakeAnthropic
from tests.servers.slack_api import FakeSlack
from tests.servers.slack_sign_in import SignInWithSlack

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SHOTS = ROOT / "build" / "test-artifacts" / "console"
# What the machine's closed network needs of Chromium (docs: the browser's background
# connections are refused, many at a time).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
EPISODES = [
    {"id": "e-deploy", "user_text": "we deploy the api with blue-green on Thursdays",
     "summary": "Blue-green, Thursdays.", "created_at": 1_790_000_000, "team": LOCAL_TEAM,
     "channel": "general", "channel_type": "public", "user": "dana", "user_name": "dana"},
    {"id": "e-lunch", "user_text": "the team lunch moved to Fridays at noon",
     "summary": "", "created_at": 1_790_000_100, "team": "T1", "channel": "C1",
     "channel_type": "public", "user": "U2", "user_name": "ari"},
]

if not Path(CHROMIUM).exists():  # pragma: no cover - .ci/run installs it
    pytest.skip("Chromium is not installed (apt-get install chromium; .ci/run does)",
                allow_module_level=True)


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "THOTH_"))}
    env.update(THOTH_HOME=str(home), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return env


@pytest.fixture
def console(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A home with two episodes and a proposed note, and its console's sign-in link."""
    home = tmp_path / "home"
    run = [sys.executable, "-m", "bridge"]
    subprocess.run([*run, "init"], env=_env(home), check=True, capture_output=True)
    lines = tmp_path / "episodes.jsonl"
    lines.write_text("".join(json.dumps(e) + "\n" for e in EPISODES))
    subprocess.run([*run, "episodes", "import", str(lines)], env=_env(home), check=True,
                   capture_output=True, timeout=180)
    # Something the identity layer learns about dana (the local backend, offline).
    subprocess.run([*run, "chat", "--user", "dana"], env=_env(home), check=True,
                   capture_output=True, timeout=180, text=True,
                   input="how do we deploy the api?\nI prefer short answers in threads\n")
    db = open_sqlite(home / "thoth.db", schemas=ALL_SCHEMAS)
    NoteStore(db).propose("Releases need a second reviewer", Place("T1", "C1", "public"),
                          user="U1", author_name="dana", source="🧠 reaction",
                          session_id=None)
    db.close()
    process = subprocess.Popen([*run, "console", "--port", "0"], env=_env(home),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = re.search(r"http://\S+/console/login/\S+", line)
        assert found, f"no sign-in link in {line!r}"
        yield found.group(0), home
    finally:
        process.terminate()
        process.wait(timeout=30)


def _user_model_of_next_turn(home: Path, fake: FakeAnthropic) -> str:
    """What the next turn of dana's (at the terminal) puts in its ``<user-model>``."""
    env = {**_env(home), "ANTHROPIC_API_KEY": "sk-ant-test-key", "ANTHROPIC_BASE_URL": fake.url}
    asked = len(fake.requests)
    subprocess.run([sys.executable, "-m", "bridge", "chat", "--user", "dana"], env=env,
                   check=True, capture_output=True, timeout=180, text=True,
                   input="how should you answer me?\n")
    texts = fake.wait_for_requests(asked + 1)[asked].context_texts()
    return "".join(text for text in texts if text.startswith("<user-model>"))


def test_the_operator_signs_in_searches_forgets_keeps_a_note_and_reads_the_audit_log(
    console: tuple[str, Path], tmp_path: Path, fake_anthropic: FakeAnthropic,
) -> None:
    from playwright.sync_api import sync_playwright

    link, home = console
    base = link.split("/console/")[0] + "/console"
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            assert page.goto(f"{base}/").status == 401  # signed out: nothing shown
            assert "Sign in" in page.inner_text("h1")
            page.goto(link)
            # Two imported, and what dana told Thoth (offline, her question is not kept).
            assert page.inner_text("#episodes") == "3"
            assert page.inner_text("#notes-proposed") == "1"
            assert page.inner_text("#identity") == "local"
            assert page.inner_text("#open-sessions") == "1"  # dana's, at the terminal
            page.screenshot(path=str(SHOTS / "overview.png"))
            page.click("#health-link")  # what `thoth doctor` checks, run now
            statuses = dict(zip(page.locator("tr.check td:nth-child(1)").all_inner_texts(),
                                page.locator("tr.check td.status").all_inner_texts(),
                                strict=True))
            assert statuses["database"] == "ok" and statuses["brain"] == "ok"
            assert statuses["identity"] == "info"  # not probed from a serving process
            page.screenshot(path=str(SHOTS / "health.png"))
            page.go_back()

            page.click("nav a:text('Episodes')")
            page.fill("input[name=q]", "how do we deploy the api")
            page.click("form.search button")
            assert "blue-green on Thursdays" in page.inner_text("ol.episodes")
            page.screenshot(path=str(SHOTS / "episodes.png"))
            # Its provenance: dana's first turn recalled it, in her DM at the terminal.
            page.click("#episode-e-deploy a")
            assert "blue-green on Thursdays" in page.inner_text("#episode")
            assert page.locator("#permalink").count() == 0  # imported, no Slack thread
            uses = page.locator("ol.uses li").all_inner_texts()
            assert len(uses) == 1 and "im terminal" in uses[0] and "dana" in uses[0]
            page.screenshot(path=str(SHOTS / "episode.png"))
            page.go_back()
            # Narrowed: by person, by place, by a day long before any of them.
            page.goto(f"{base}/episodes?q=deploy+the+api&person=dana")
            assert page.locator("#episode-e-deploy").count() == 1
            page.goto(f"{base}/episodes?q=deploy+the+api&person=U2")
            assert page.locator("#episode-e-deploy").count() == 0
            page.goto(f"{base}/episodes?channel=C1")  # no words: the place's newest
            assert page.locator("ol.episodes li").evaluate_all(
                "items => items.map(item => item.id)") == ["episode-e-lunch"]
            page.goto(f"{base}/episodes?q=deploy+the+api&until=2020-01-01")
            assert page.inner_text("p.empty") == "Nothing you may see matched."
            page.goto(f"{base}/episodes?since=2026-13-01")
            assert "since is a day as YYYY-MM-DD" in page.inner_text("#problem")
            page.goto(f"{base}/episodes?until=9999-12-31")  # past the last day there is
            assert "until is a day as YYYY-MM-DD" in page.inner_text("#problem")
            page.goto(f"{base}/episodes?q=how+do+we+deploy+the+api")
            page.click("#episode-e-deploy summary")  # asked first
            page.click("#episode-e-deploy button.danger")
            assert page.locator("#episode-e-deploy").count() == 0  # forgotten for good
            # Said, and back on the search it was forgotten from.
            assert "Forgotten for good" in page.inner_text("#said")
            assert page.input_value("input[name=q]") == "how do we deploy the api"

            page.goto(f"{base}/notes")
            assert "Releases need a second reviewer" in page.inner_text("ol.notes")
            page.click("ol.notes button:text('Keep')")
            page.goto(f"{base}/notes?status=kept")
            assert "Releases need a second reviewer" in page.inner_text("ol.notes")
            memory = (home / "brain" / "persona" / "MEMORY.md").read_text()
            assert "Releases need a second reviewer" in memory
            page.screenshot(path=str(SHOTS / "notes.png"))

            page.goto(f"{base}/audit")
            actions = page.locator("tr.entry td:nth-child(3)").all_inner_texts()
            # Newest first; the import that filled the home was logged from the CLI.
            assert actions == ["note.keep", "episode.forget", "login", "episodes.import"]
            page.screenshot(path=str(SHOTS / "audit.png"))
            exported = page.request.get(f"{base}/audit.jsonl").text()
            assert [json.loads(line)["action"] for line in exported.splitlines()] == actions
            # The brain as a git bundle: a clone of it has the kept note.
            page.click("nav a:text('Export')")
            with page.expect_download() as download:
                page.click("#export-brain")
            bundle = tmp_path / "brain.bundle"
            download.value.save_as(bundle)
            clone = tmp_path / "brain-clone"
            subprocess.run(["git", "clone", "-q", str(bundle), str(clone)], check=True)
            assert "Releases need a second reviewer" in (
                clone / "persona" / "MEMORY.md").read_text()

            page.click("nav a:text('People')")
            page.fill("input[name=team]", LOCAL_TEAM)
            page.fill("input[name=user]", "dana")
            page.click("form.search button")
            assert "short answers" in page.inner_text("ol.facts")
            page.screenshot(path=str(SHOTS / "people.png"))
            assert "short answers" in _user_model_of_next_turn(home, fake_anthropic)
            page.click("ol.facts summary")  # asked first
            page.click("ol.facts button.danger")
            assert page.inner_text("#said") == "deleted 1 fact(s)"
            assert page.locator("ol.facts li").count() == 0
            # Gone from the next turn's <user-model> too.
            assert "short answers" not in _user_model_of_next_turn(home, fake_anthropic)
            # Forgetting everything, as the page's button posts it (with its CSRF token).
            token = page.locator("input[name=csrf_token]").first.get_attribute("value")
            everything = page.request.post(f"{base}/people/{LOCAL_TEAM}/dana/forget",
                                           form={"csrf_token": token or ""})
            assert everything.ok
            # Her facts (none left), her DMs with Thoth (her three sessions at the terminal)
            # and her notes; what she said with others is kept, and the page says why.
            assert "3 exchange(s) and 3 session(s) of their DMs with Thoth" in (
                everything.text()), everything.text()
            assert "Kept: 0 exchange(s) in channels" in everything.text()
            page.goto(f"{base}/audit?action=person")
            assert page.locator("tr.entry td:nth-child(3)").all_inner_texts() == [
                "person.forget"]
            page.goto(f"{base}/audit?action=fact")
            assert page.locator("tr.entry td:nth-child(3)").all_inner_texts() == ["fact.forget"]

            page.click("nav a:text('Spend')")
            # dana's two turns with the (loopback) model, per day, person and channel.
            assert page.inner_text("#total") != "$0.00"
            assert "dana" in page.inner_text("#per-person")
            # Her sessions were forgotten: what they cost is kept, under no session.
            assert "(no session)" in page.inner_text("#per-channel")

            # A change without the page's CSRF token is refused, and changes nothing.
            refused = page.request.post(f"{base}/episodes/e-lunch/forget", form={"q": "x"})
            assert refused.status == 403
            page.goto(f"{base}/episodes?q=team+lunch")
            assert page.locator("#episode-e-lunch").count() == 1
        finally:
            browser.close()


def test_a_forged_cookie_and_a_used_link_sign_nobody_in(console: tuple[str, Path]) -> None:
    from playwright.sync_api import sync_playwright

    link, _ = console
    base = link.split("/console/")[0] + "/console"
    forged = base64.b64encode(json.dumps({
        "actor": "operator", "name": "mallory", "sees_everything": True, "founder": True,
    }).encode()).decode()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context()
            context.add_cookies([{"name": "thoth_console", "value": forged,
                                  "url": base}])
            page = context.new_page()
            assert page.goto(f"{base}/").status == 401
            assert page.goto(f"{base}/audit.jsonl").status == 403
            assert page.goto(link).status == 200  # the operator's one use
            other = browser.new_page()
            assert other.goto(link).status == 401  # used once: nobody else gets in
            assert "used up" in other.inner_text("p.problem")
        finally:
            browser.close()


def test_a_draft_is_read_as_a_diff_approved_and_its_commit_undone(
    console: tuple[str, Path], tmp_path: Path,
) -> None:
    from playwright.sync_api import sync_playwright

    link, home = console
    base = link.split("/console/")[0] + "/console"
    body = tmp_path / "standup.md"
    body.write_text("# Standup digest\n\n1. Collect the updates from the thread.\n"
                    "2. Group them by person, newest first.\n"
                    "3. Flag every blocker with its owner.\n")
    subprocess.run([sys.executable, "-m", "bridge", "skills", "propose", "standup-digest",
                    "--description", "Digest a standup", "--body-file", str(body),
                    "--by", "dana"], env=_env(home), check=True, capture_output=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(link)
            page.click("nav a:text('Skills')")
            draft = page.locator("ol.drafts li").first
            assert "+3. Flag every blocker with its owner." in draft.inner_text()
            page.screenshot(path=str(SHOTS / "skills.png"))
            draft.locator("button:text('Approve')").click()
            assert page.locator("#skill-standup-digest").count() == 1
            latest = page.locator("tr.commit").first
            assert "Add skill standup-digest 1.0.0" in latest.inner_text()
            latest.locator("a").click()
            assert "+3. Flag every blocker" in page.inner_text("#diff")
            page.go_back()
            page.locator("tr.commit").first.locator("button:text('Undo')").click()
            assert page.locator("#skill-standup-digest").count() == 0  # a new commit undid it
            assert page.locator("tr.commit").first.inner_text().count("Revert") == 1
            assert not (home / "brain" / "skills" / "standup-digest").exists()
            page.goto(f"{base}/audit?action=skill")
            assert page.locator("tr.entry td:nth-child(3)").all_inner_texts() == [
                "skill.approve"]
            page.goto(f"{base}/audit?action=brain")
            assert page.locator("tr.entry td:nth-child(3)").all_inner_texts() == [
                "brain.revert"]
        finally:
            browser.close()


SIGNED_IN_EPISODES = [
    {"id": "e-public", "user_text": "the release train leaves on Thursdays", "summary": "",
     "created_at": 1_790_000_000, "team": "T1", "channel": "C1", "channel_type": "public",
     "user": "U2", "user_name": "ari", "thread_ts": "1790000000.000100"},
    {"id": "e-private", "user_text": "the release train salary budget is secret",
     "summary": "", "created_at": 1_790_000_100, "team": "T1", "channel": "G1",
     "channel_type": "private", "user": "U2", "user_name": "ari"},
    {"id": "e-her-private", "user_text": "the release train crew rota, kept in-house",
     "summary": "", "created_at": 1_790_000_150, "team": "T1", "channel": "G2",
     "channel_type": "private", "user": "U2", "user_name": "ari"},
    {"id": "e-own-dm", "user_text": "remind me the release train checklist", "summary": "",
     "created_at": 1_790_000_200, "team": "T1", "channel": "D1", "channel_type": "im",
     "user": "U1", "user_name": "dana"},
    {"id": "e-other-dm", "user_text": "my release train worries, between us", "summary": "",
     "created_at": 1_790_000_300, "team": "T1", "channel": "D2", "channel_type": "im",
     "user": "U2", "user_name": "ari"},
]


@pytest.fixture
def slack_console(tmp_path: Path) -> Iterator[tuple[str, SignInWithSlack, Path]]:
    """A console whose members sign in with the loopback Slack: its base URL, Slack's
    sign-in, and its home."""
    home = tmp_path / "home"
    run = [sys.executable, "-m", "bridge"]
    lines = tmp_path / "episodes.jsonl"
    lines.write_text("".join(json.dumps(e) + "\n" for e in SIGNED_IN_EPISODES))
    subprocess.run([*run, "episodes", "import", str(lines)], env=_env(home), check=True,
                   capture_output=True, timeout=180)
    db = open_sqlite(home / "thoth.db", schemas=ALL_SCHEMAS)
    try:  # what the identity layer knows of dana, and of ari
        observations = ObservationStore(db)
        for who, text in (("U1", "prefers tea over coffee"), ("U2", "is moving to Lisbon")):
            observations.add(Person("T1", who), text, None, np.ones(384, np.float32) / 20,
                             source="message", session_id=None, now=1_790_000_000.0)
    finally:
        db.close()
    with FakeSlack() as slack:
        slack.add_user("U1", "dana")
        slack.add_user("UFOUNDER", "fia")
        slack.add_user("UGUEST", "gus", is_restricted=True)
        slack.add_channel("C1", "general")
        # Two private channels Thoth is in: dana is a member of the second only.
        slack.add_channel("G1", "pay", "private", members=["UBOT", "U2", "UFOUNDER"])
        slack.add_channel("G2", "release-crew", "private", members=["UBOT", "U1", "U2"])
        sign_in = SignInWithSlack(slack, client_id="111.222", client_secret="s3cret",
                                  redirect_uris=())
        env = {**_env(home), "SLACK_CLIENT_ID": "111.222", "SLACK_CLIENT_SECRET": "s3cret",
               "SLACK_API_URL": slack.url, "FOUNDER_USER_IDS": "UFOUNDER",
               "SLACK_BOT_TOKEN": "xoxb-test"}
        process = subprocess.Popen([*run, "console", "--port", "0"], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert process.stdout is not None
            found = re.search(r"(http://\S+/console)/login/", process.stdout.readline())
            assert found
            base = found.group(1)
            sign_in.redirect_uris = (f"{base}/signin/slack/callback",)
            yield base, sign_in, home
        finally:
            process.terminate()
            process.wait(timeout=30)


def test_members_sign_in_with_slack_and_see_only_what_slack_lets_them_read(
    slack_console: tuple[str, SignInWithSlack, Path],
) -> None:
    from playwright.sync_api import sync_playwright

    base, sign_in, _ = slack_console
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            def signed_in_as(user: str) -> Any:
                sign_in.signed_in_as = user
                page = browser.new_context().new_page()
                page.goto(f"{base}/")
                page.click("#slack-sign-in")  # to Slack's authorize page, and back
                return page

            dana = signed_in_as("U1")
            assert dana.inner_text("header .who") == "dana"
            assert dana.locator("nav a:text('Audit log')").count() == 0
            dana.goto(f"{base}/episodes?q=release+train")
            shown = set(dana.locator("ol.episodes li").evaluate_all(
                "items => items.map(item => item.id)"))
            # Public channels, her own DMs and the private channel Slack says she is in;
            # never another private channel's, or another's DM.
            assert shown == {"episode-e-public", "episode-e-own-dm", "episode-e-her-private"}
            dana.screenshot(path=str(SHOTS / "member-episodes.png"))
            assert dana.locator("#episode-e-own-dm button.danger").count() == 1  # hers
            # An episode's page links to its thread in Slack; one she may not see is 404.
            dana.click("#episode-e-public a")
            assert dana.get_attribute("#permalink", "href") == (
                "https://test.slack.com/archives/C1/p1790000000000100")
            assert dana.goto(f"{base}/episodes/e-private").status == 404
            assert dana.goto(f"{base}/episodes/e-other-dm").status == 404
            dana.goto(f"{base}/episodes?q=release+train")
            assert dana.locator("#episode-e-public button.danger").count() == 0  # ari's
            assert dana.goto(f"{base}/audit").status == 403
            # Notes, drafts and the brain's history hold words from private places.
            assert dana.goto(f"{base}/notes").status == 403
            assert dana.goto(f"{base}/skills").status == 403
            exported = dana.request.get(f"{base}/export/episodes.jsonl").text()
            assert {json.loads(line)["id"] for line in exported.splitlines()} == {
                "e-public", "e-own-dm", "e-her-private"}  # her export is her view, no more
            assert dana.request.get(f"{base}/export/brain.bundle").status == 403
            # Her own page: what Thoth knows about her, and only her.
            dana.goto(f"{base}/people?team=T1&user=U2")
            assert "tea" in dana.inner_text("ol.facts") and "Lisbon" not in dana.content()
            token = dana.locator("input[name=csrf_token]").first.get_attribute("value")
            refused = dana.request.post(f"{base}/people/T1/U2/forget",
                                        form={"csrf_token": token or ""})
            assert refused.status == 403  # ari's facts are not hers to forget
            dana.click("ol.facts summary")
            dana.click("ol.facts button.danger")
            assert dana.inner_text("#said") == "deleted 1 fact(s)"

            fia = signed_in_as("UFOUNDER")  # a founder: the operator's view
            fia.goto(f"{base}/episodes?q=release+train")
            assert fia.locator("ol.episodes li").count() == 5
            everything = fia.request.get(f"{base}/export/episodes.jsonl").text()
            assert len(everything.splitlines()) == 5
            # "View as" dana shows the founder exactly what dana saw.
            fia.goto(f"{base}/episodes?q=release+train&as=T1:U1")
            assert fia.inner_text("#viewing-as") == "Seen as T1:U1 would see it."
            assert set(fia.locator("ol.episodes li").evaluate_all(
                "items => items.map(item => item.id)")) == shown
            assert dana.goto(f"{base}/episodes?q=release+train&as=T1:U2") is not None
            assert dana.locator("#viewing-as").count() == 0  # only founders preview
            assert set(dana.locator("ol.episodes li").evaluate_all(
                "items => items.map(item => item.id)")) == shown  # still her own view
            fia.goto(f"{base}/audit?action=login")
            assert fia.locator("tr.entry td:nth-child(2)").all_inner_texts() == [
                "slack:UFOUNDER", "slack:U1"]
            fia.goto(f"{base}/audit?actor=slack:U1")  # what dana did, newest first
            assert fia.locator("tr.entry td:nth-child(3)").all_inner_texts() == [
                "fact.forget", "export.episodes", "login"]

            # A guest's memory is confined to their channels: not a console member.
            guest = signed_in_as("UGUEST")
            assert "full members" in guest.inner_text("p.problem")
            assert guest.goto(f"{base}/episodes?q=release").status == 401

            # Slack's code is good once; a callback that did not start here is refused.
            stranger = browser.new_context().new_page()
            forged = stranger.goto(f"{base}/signin/slack/callback?code=T1.x&state=forged")
            assert forged is not None and forged.status == 401
            assert "did not start here" in stranger.inner_text("p.problem")
        finally:
            browser.close()
    codes = [call.args.get("code") for call in sign_in.fake.requests
             if call.method == "openid.connect.token"]
    assert len(codes) == 3 and len(set(codes)) == 3


def test_a_note_kept_in_the_console_shows_so_on_its_card_in_slack(
    slack_console: tuple[str, SignInWithSlack, Path],
) -> None:
    from playwright.sync_api import sync_playwright
    from slack_sdk import WebClient

    from bridge.slack_api.note_cards import NoteCardStore, note_card_message

    base, sign_in, home = slack_console
    db = open_sqlite(home / "thoth.db", schemas=ALL_SCHEMAS)
    try:
        note = NoteStore(db).propose("Deploys need two approvals", Place("T1", "C1", "public"),
                                     user="U1", author_name="dana", source="🧠 reaction",
                                     session_id=None)
        slack = sign_in.fake
        posted = WebClient(token="xoxb-test", base_url=slack.url).chat_postMessage(
            channel="C1", **note_card_message(note, None))
        card_ts = str(posted["ts"])
        NoteCardStore(db).record(note.id, channel="C1", ts=card_ts)
    finally:
        db.close()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            sign_in.signed_in_as = "UFOUNDER"
            page = browser.new_page()
            page.goto(f"{base}/")
            page.click("#slack-sign-in")
            page.goto(f"{base}/notes")
            page.click(f"#note-{note.id} button:text('Keep')")
            assert page.locator(f"#note-{note.id}").count() == 0  # no longer waiting
            card = slack.message("C1", card_ts) or {}
            # One state: the card says it was kept, by whom, as a ✅ on it would have.
            assert "Kept by" in str(card.get("markdown_text") or card.get("text"))
            # An edit is a new version replacing the old; the chain shows both, dated.
            page.goto(f"{base}/notes?status=kept")
            page.click(f"#note-{note.id} a")
            page.fill("form.edit textarea", "Deploys need two approvals and a green build")
            page.click("form.edit button")
            versions = page.locator("ol.versions li")
            assert versions.count() == 2
            assert versions.locator(".status").all_inner_texts() == ["replaced", "kept"]
            assert "green build" in versions.nth(1).inner_text()
            page.screenshot(path=str(SHOTS / "note-versions.png"))
        finally:
            browser.close()
    card = slack.message("C1", card_ts) or {}
    assert "Replaced by" in str(card.get("markdown_text") or card.get("text"))
    memory = (home / "brain" / "persona" / "MEMORY.md").read_text()
    assert "green build" in memory and "two approvals\n" not in memory


def test_reflections_show_each_sessions_outcome_and_what_became_of_its_proposals(
    console: tuple[str, Path],
) -> None:
    from playwright.sync_api import sync_playwright

    link, home = console
    base = link.split("/console/")[0] + "/console"
    db = open_sqlite(home / "thoth.db", schemas=ALL_SCHEMAS)
    try:
        with db.read() as conn:
            session_id = str(conn.execute("SELECT id FROM sessions").fetchone()[0])
        note = NoteStore(db).propose("dana wants short answers in threads",
                                     Place(LOCAL_TEAM, "terminal", "im"), user="dana",
                                     author_name="dana", source="reflection",
                                     session_id=session_id)
    finally:
        db.close()
    subprocess.run([sys.executable, "-m", "bridge", "reflect", session_id[:8]],
                   env=_env(home), check=True, capture_output=True, timeout=180)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(link)
            page.click("nav a:text('Reflections')")
            shown = page.locator(f"#reflection-{session_id}")
            assert shown.locator(".outcome").inner_text() == "success"
            assert shown.locator("li.note .fate").inner_text() == "proposed"
            page.goto(f"{base}/notes")
            page.click(f"#note-{note.id} button:text('Keep')")
            page.goto(f"{base}/reflections")
            assert shown.locator("li.note .fate").inner_text() == "kept"
            page.screenshot(path=str(SHOTS / "reflections.png"))
        finally:
            browser.close()


def test_the_operator_imports_episodes_and_a_brain_that_continues_this_one(
    console: tuple[str, Path], tmp_path: Path,
) -> None:
    from playwright.sync_api import sync_playwright

    link, home = console
    good = tmp_path / "more.jsonl"
    good.write_text("".join(json.dumps({
        "id": episode_id, "user_text": "the on-call rota flips on Mondays", "summary": "",
        "created_at": 1_790_000_500, "team": LOCAL_TEAM, "channel": "general",
        "channel_type": "public"}) + "\n" for episode_id in ("e-imported", "ops/rota #1")))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "e-half", "user_text": "fine", "summary": "",'
                   ' "created_at": 1790000600}\nnot json\n')
    # The brain grown elsewhere from an export of this one, and a stranger's brain.
    grown = tmp_path / "grown"
    subprocess.run(["git", "clone", "-q", str(home / "brain"), str(grown)], check=True)
    _bundled(grown, {"persona/EXTRA.md": "Answer in British English.\n"},
             tmp_path / "grown.bundle")
    _bundled(grown, {"persona/EXTRA.md": "token ghp_abcdefghijklmnopqrstuvwxyz0123456789\n"},
             tmp_path / "secret.bundle")
    stranger = tmp_path / "stranger"
    subprocess.run(["git", "init", "-q", "-b", "main", str(stranger)], check=True)
    _bundled(stranger, {"x.md": "x\n"}, tmp_path / "stranger.bundle")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(link)
            page.click("nav a:text('Export')")

            def imported(form: str, path: Path) -> str:
                page.set_input_files(f"#{form} input[type=file]", str(path))
                page.click(f"#{form} button")
                return page.inner_text("#said")

            assert "line 2: not valid JSON" in imported("import-episodes", bad)
            assert "nothing was imported" in page.inner_text("#said")
            assert imported("import-episodes", good) == "imported 2 episodes"
            assert "id 'e-imported' already exists" in imported("import-episodes", good)
            assert "does not continue" in imported(
                "import-brain", tmp_path / "stranger.bundle")
            assert "holds a secret" in imported("import-brain", tmp_path / "secret.bundle")
            assert not (home / "brain" / "persona" / "EXTRA.md").exists()
            assert imported("import-brain", tmp_path / "grown.bundle").startswith(
                "the brain is now at")
            assert (home / "brain" / "persona" / "EXTRA.md").read_text() == (
                "Answer in British English.\n")
            page.screenshot(path=str(SHOTS / "import.png"))
            page.goto(link.split("/console/")[0] + "/console/episodes?q=on-call+rota")
            assert page.locator("#episode-e-imported").count() == 1
            page.click("li[id='episode-ops/rota #1'] a")  # any id has its page
            assert "on-call rota" in page.inner_text("#episode")
            page.goto(link.split("/console/")[0] + "/console/audit?action=brain")
            assert page.locator("tr.entry td:nth-child(3)").all_inner_texts() == [
                "brain.import"]
            page.goto(link.split("/console/")[0] + "/console/audit?action=episodes")
            # The console's, then the fixture's from the command line; refusals write none.
            targets = page.locator("tr.entry td:nth-child(4)").all_inner_texts()
            assert len(targets) == 2 and targets[0] == "more.jsonl"
        finally:
            browser.close()


def _bundled(repo: Path, files: dict[str, str], bundle: Path) -> None:
    """Commit ``files`` in ``repo``, then write its main as ``bundle``."""
    for name, text in files.items():
        (repo / name).write_text(text)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@x"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "grown elsewhere"], check=True)
    subprocess.run([*git, "bundle", "create", "-q", str(bundle), "main"], check=True)


def test_a_member_makes_a_token_in_the_console_and_an_agent_reads_her_memory_with_it(
    slack_console: tuple[str, SignInWithSlack, Path],
) -> None:
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from playwright.sync_api import sync_playwright

    base, sign_in, _ = slack_console
    mcp_url = base.removesuffix("/console") + "/mcp"

    async def recalled(token: str) -> set[str]:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                      timeout=30) as http, \
                streamable_http_client(mcp_url, http_client=http) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            found = await session.call_tool("recall", {"query": "release train", "k": 10})
            assert not found.is_error, found.content
            return {hit["id"] for hit in found.structured_content["result"]}

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            sign_in.signed_in_as = "U1"
            dana = browser.new_context().new_page()
            dana.goto(f"{base}/")
            dana.click("#slack-sign-in")
            dana.click("nav a:text('MCP tokens')")
            assert mcp_url in dana.inner_text("main")
            dana.fill("input[name=label]", "laptop Claude Code")
            dana.click("#make-token")
            secret = dana.inner_text("#new-token code.secret").strip()
            assert secret.startswith("thoth_mcp_")
            # The agent reads what dana reads: public, her DM, the private channel she is in.
            # In a thread of its own: Playwright's sync API holds this thread's event loop.
            with ThreadPoolExecutor(1) as other:
                read = other.submit(asyncio.run, recalled(secret)).result(timeout=60)
            assert read == {"e-public", "e-own-dm", "e-her-private"}
            dana.reload()  # shown once: a new look at the page has no token on it
            assert dana.locator("#new-token").count() == 0 and secret not in dana.content()
            assert dana.locator("table.tokens tr").count() == 1  # the reload made none
            dana.screenshot(path=str(SHOTS / "member-tokens.png"))
            dana.click("table.tokens summary")  # asked first
            dana.click("table.tokens button.danger")  # revoke
            assert "revoked" in dana.inner_text("table.tokens")
            assert httpx2.post(mcp_url, headers={"Authorization": f"Bearer {secret}"},
                               json={}).status_code == 401
        finally:
            browser.close()
