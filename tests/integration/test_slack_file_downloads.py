"""A message's files downloaded from the loopback Slack as Slack serves them: with the
bot token, within the caps; Slack's sign-in page (its answer to a token that may not
read a file) is no access, never the file."""

from __future__ import annotations

import asyncio

from bridge.files.reading import Unread
from bridge.files.shared_file import SharedFile
from bridge.slack_api.file_downloads import NO_ACCESS, Caps, download
from tests.servers.slack_api import FakeSlack

LOG = b"2026-11-29 ERROR the deploy failed: connection refused\n" * 20
TOKEN = "xoxb-test"
WITH_FILES = ("chat:write,channels:history,channels:read,groups:read,im:history,"
              "files:read")


def test_the_messages_files_are_downloaded_with_the_bot_token_in_order() -> None:
    with FakeSlack(scopes=WITH_FILES) as slack:
        log = slack.add_file("F1", "deploy.log", LOG, mimetype="text/plain")
        png = slack.add_file("F2", "error.png", b"\x89PNG\r\n\x1a\n" + b"0" * 100,
                             mimetype="image/png")
        found = asyncio.run(download([log, png], TOKEN))
        assert [type(file) for file in found] == [SharedFile, SharedFile]
        first = found[0]
        assert isinstance(first, SharedFile)
        assert (first.name, first.data, first.mimetype) == ("deploy.log", LOG, "text/plain")
        assert first.permalink == log["permalink"]
        asked = [call for call in slack.requests if call.path.startswith("/files-pri/")]
        assert [call.headers.get("authorization") for call in asked] == [
            f"Bearer {TOKEN}"] * 2


def test_a_token_that_may_not_read_files_gets_slacks_sign_in_page_said_as_no_access() -> None:
    with FakeSlack(scopes="chat:write,channels:history") as slack:
        log = slack.add_file("F1", "deploy.log", LOG, mimetype="text/plain")
        (found,) = asyncio.run(download([log], TOKEN))
        assert isinstance(found, Unread) and found.why == NO_ACCESS


def test_caps_come_before_the_bytes() -> None:
    with FakeSlack(scopes=WITH_FILES) as slack:
        big = slack.add_file("F1", "huge.bin", b"x" * 3000)
        many = [slack.add_file(f"F{n}", f"note{n}.txt", b"hello") for n in range(2, 12)]
        found = asyncio.run(download([big, *many], TOKEN, Caps(max_bytes=2048, most_files=8)))
        assert isinstance(found[0], Unread) and "over the" in found[0].why
        # Over the cap by its object's size: never fetched.
        assert not any("F1" in call.path for call in slack.requests
                       if call.path.startswith("/files-pri/"))
        assert [isinstance(file, SharedFile) for file in found[1:8]] == [True] * 7
        assert all(isinstance(file, Unread) and "first 8 files" in file.why
                   for file in found[8:])
        # A body longer than its object said is cut off at the cap.
        lying = dict(slack.add_file("F20", "small.txt", b"y" * 4096), size=10)
        (cut,) = asyncio.run(download([lying], TOKEN, Caps(max_bytes=2048)))
        assert isinstance(cut, Unread) and "over the" in cut.why


def test_a_slow_download_and_a_deleted_file_cost_that_file_only() -> None:
    with FakeSlack(scopes=WITH_FILES) as slack:
        slow = slack.add_file("F1", "slow.txt", b"late")
        quick = slack.add_file("F2", "quick.txt", b"on time")
        gone = dict(slack.add_file("F3", "gone.txt", b"x"), mode="tombstone")
        slack.delay_next("slow.txt", 2.0)
        found = asyncio.run(download([slow, quick, gone], TOKEN, Caps(timeout_s=0.5)))
        assert isinstance(found[0], Unread) and "longer than 0.5 s" in found[0].why
        assert isinstance(found[1], SharedFile) and found[1].data == b"on time"
        assert isinstance(found[2], Unread) and "no copy" in found[2].why


def test_the_loopback_answers_files_info_as_slacks_reference_does() -> None:
    import pytest
    from slack_sdk import WebClient
    from slack_sdk.errors import SlackApiError

    with FakeSlack(scopes=WITH_FILES) as slack:
        shared = slack.add_file("F1", "spec.pdf", b"%PDF-1.7 ...", mimetype="application/pdf")
        client = WebClient(token=TOKEN, base_url=slack.url)
        assert client.files_info(file="F1")["file"] == shared
        with pytest.raises(SlackApiError) as missing:
            client.files_info(file="F404")
        assert missing.value.response["error"] == "file_not_found"
    with FakeSlack(scopes="chat:write") as refusing:
        refusing.add_file("F1", "spec.pdf", b"%PDF-1.7 ...")
        with pytest.raises(SlackApiError) as refused:
            WebClient(token=TOKEN, base_url=refusing.url).files_info(file="F1")
        assert refused.value.response["error"] == "missing_scope"
