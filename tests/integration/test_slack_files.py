"""Files people share with Thoth in Slack, end to end (issue 50): signed deliveries through
the real Bolt app, files downloaded from the loopback Slack with the bot token, read, shown
to the loopback Messages API as content blocks, and kept with the exchange, redacted;
bad files said in one line each, the words answered all the same."""

from __future__ import annotations

import dataclasses
import io
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fpdf import FPDF
from PIL import Image

from bridge.settings import Settings
from bridge.slack.bolt_app import MESSAGE, message_payload, take_over
from bridge.slack.delivery_order import DeliveryOrder
from bridge.slack.events import Incoming, files_of
from bridge.slack.inbox import SlackInbox
from bridge.slack_api.file_downloads import NO_ACCESS
from layers.episodic.episode import Episode, EpisodeFile
from layers.shared.offloaded import Offloaded
from layers.shared.places import Viewer
from tests.fakes import HashingEmbedder
from tests.integration.slack_harness import CHANNEL, Harness, running_bridge, shown
from tests.secret_corpus import SECRETS
from tests.servers import anthropic_api as api
from tests.servers.anthropic_api import FakeAnthropic, RecordedRequest
from tests.waiting import wait_until

AWS_KEY = next(seeded for seeded in SECRETS if seeded.kind == "aws access key id")
LOG = ("2026-11-29T21:04:11Z INFO deploy 4812 started\n"
       f"2026-11-29T21:04:12Z DEBUG env: {AWS_KEY.text}\n"
       "2026-11-29T21:04:19Z ERROR payments-api: connection refused by ledgerdb:5432\n")
CSV = "service,p50_ms,errors\npayments-api,412,97\nledger,38,0\n"
PRIVATE = "G7"


@pytest.fixture
def slack(model_settings: Settings, fake_anthropic: FakeAnthropic,
          hashing_embedder: HashingEmbedder) -> Iterator[Harness]:
    """The bridge with files:read granted, and files capped at 1 MB."""
    with running_bridge(model_settings, fake_anthropic, hashing_embedder,
                        file_max_mb=1) as harness:
        harness.slack.scopes += ",files:read"
        harness.slack.add_channel(PRIVATE, "payments-oncall", "private")
        yield harness


def png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 40), (200, 30, 30)).save(out, "PNG")
    return out.getvalue()


def pdf(text: str, *, password: str | None = None) -> bytes:
    document = FPDF()
    document.add_page()
    document.set_font("Helvetica", size=12)
    document.multi_cell(0, 8, text=text)
    if password is not None:
        document.set_encryption(owner_password="owner", user_password=password)
    return bytes(document.output())


def bomb() -> bytes:
    """A PNG of a few kilobytes that would unfold into 64 million pixels."""
    out = io.BytesIO()
    Image.new("1", (8000, 8000)).save(out, "PNG")
    return out.getvalue()


def share(h: Harness, text: str, ts: str, files: list[dict[str, Any]], *,
          channel: str = CHANNEL, channel_type: str = "channel") -> None:
    """A message with files, as Slack delivers it (``file_share``), the agent named."""
    h.slack.add_message(channel, text, ts=ts, files=files)
    assert h.event({"type": "message", "subtype": "file_share", "user": "U1",
                    "text": f"<@UBOT> {text}" if text else "<@UBOT>", "ts": ts,
                    "channel": channel, "channel_type": channel_type, "upload": False,
                    "display_as_bot": False, "files": files}) == 200


def bot_messages(h: Harness, ts: str, channel: str = CHANNEL) -> list[dict[str, Any]]:
    return [m for m in h.slack.messages(channel, ts) if m.get("user") == "UBOT"]


def answered(h: Harness, ts: str, channel: str = CHANNEL) -> dict[str, Any] | None:
    """The agent's streamed answer in the thread (not a line it posted before it)."""
    for message in bot_messages(h, ts, channel):
        stream = h.slack.stream(channel, message["ts"])
        if stream is not None and stream["state"] == "stopped" and shown(message):
            return message
    return None


def answer_of(h: Harness, ts: str, channel: str = CHANNEL) -> str:
    message = answered(h, ts, channel)
    return shown(message) if message else ""


def episode_of(h: Harness, ts: str, channel: str = CHANNEL, *,
               described: bool = False) -> Episode:
    """The stored episode of the thread's answer, with its files (``described``: once
    its images have their descriptions)."""
    store = h.thoth.episodic.store

    def found() -> Episode | None:
        answer = answered(h, ts, channel)
        record = h.bridge.stores.replies.find(channel, answer["ts"]) if answer else None
        stored = store.get(record.episode_id) if record and record.episode_id else None
        episode = store.with_files(stored) if stored else None
        if episode is None or (described and not all(
                file.extract for file in episode.files if file.kind == "image")):
            return None
        return episode

    return wait_until(found)


def turn_request(h: Harness) -> RecordedRequest:
    """The turn's request (not the images' description after it)."""
    return next(r for r in h.model.wait_for_requests(1)
                if "Describe each image" not in json.dumps(r.body))


def shared_blocks(request: RecordedRequest) -> list[dict[str, Any]]:
    """The person's message from its first shared file on (the context before it)."""
    content = request.body["messages"][-1]["content"]
    first = next(at for at, block in enumerate(content)
                 if block["type"] == "text" and block["text"].startswith(
                     ("<shared-file", "<unread-files")))
    return list(content[first:])


def stored_bytes(home: Path) -> str:
    return "\n".join(path.read_bytes().decode("utf-8", "replace")
                     for path in home.rglob("*") if path.is_file() and ".git" not in path.parts)


def test_shared_files_reach_the_model_as_blocks_and_are_kept_redacted(
    slack: Harness, model_settings: Settings,
) -> None:
    h = slack
    files = [h.slack.add_file("F1", "error.png", png(), mimetype="image/png"),
             h.slack.add_file("F2", "runbook.pdf", pdf("Runbook: restart the ledger pool "
                                                      "before payments-api."),
                              mimetype="application/pdf"),
             h.slack.add_file("F3", "deploy.log", LOG.encode(), mimetype="text/plain"),
             h.slack.add_file("F4", "latency.csv", CSV.encode(), mimetype="text/csv")]
    h.model.push(api.text("The ledger database refused connections."),
                 api.text("error.png: a red error banner."))
    share(h, "why did the deploy fail?", "1700400000.000100", files)
    assert wait_until(lambda: answer_of(h, "1700400000.000100")) == (
        "The ledger database refused connections.")

    blocks = shared_blocks(turn_request(h))
    assert [block["type"] for block in blocks] == [
        "text", "image", "text", "document", "text", "text", "text"]
    assert blocks[0]["text"] == '<shared-file name="error.png"/>'
    assert blocks[1]["source"]["media_type"] == "image/png"
    assert blocks[3]["source"]["media_type"] == "application/pdf"
    assert blocks[4]["text"].startswith('<shared-file name="deploy.log">')
    assert "connection refused by ledgerdb:5432" in blocks[4]["text"]
    assert blocks[5]["text"].startswith('<shared-file name="latency.csv">')
    assert "payments-api,412,97" in blocks[5]["text"]
    assert blocks[6]["text"] == "why did the deploy fail?"
    # Downloaded with the bot token, only the message's own files; no line was posted.
    downloads = [c for c in h.slack.requests if c.path.startswith("/files-pri/")]
    assert len(downloads) == 4 and {c.token for c in downloads} == {"xoxb-test"}
    assert len(bot_messages(h, "1700400000.000100")) == 1

    episode = episode_of(h, "1700400000.000100", described=True)
    by_name = {file.name: file for file in episode.files}
    assert [file.name for file in episode.files] == [
        "error.png", "runbook.pdf", "deploy.log", "latency.csv"]
    assert [file.kind for file in episode.files] == ["image", "pdf", "text", "text"]
    for file, sent in zip(episode.files, files, strict=True):
        assert (file.size, file.permalink) == (sent["size"], sent["permalink"])
    assert "restart the ledger pool" in by_name["runbook.pdf"].extract
    assert "connection refused by ledgerdb:5432" in by_name["deploy.log"].extract
    assert "[REDACTED:" in by_name["deploy.log"].extract
    assert by_name["error.png"].extract == "a red error banner."
    # The secret in the log reached the model, never the disk.
    assert any(AWS_KEY.secret in json.dumps(r.body) for r in h.model.requests)
    wait_until(lambda: h.bridge.stores.inbox.waiting() == 0)
    on_disk = stored_bytes(model_settings.thoth_home)
    assert "ledgerdb:5432" in on_disk and AWS_KEY.secret not in on_disk


def test_a_files_words_are_recalled_where_it_was_shared_and_nowhere_else(
    slack: Harness,
) -> None:
    h = slack
    log = h.slack.add_file("F1", "oncall.log", b"the ledger pool ran out of zanzibar"
                           b" connections at 21:04\n", mimetype="text/plain")
    share(h, "see this", "1700410000.000100", [log], channel=PRIVATE,
          channel_type="group")
    wait_until(lambda: answer_of(h, "1700410000.000100", PRIVATE))
    assert len(episode_of(h, "1700410000.000100", PRIVATE).files) == 1
    recall = h.thoth.episodic.recall
    there = recall("zanzibar connections", Viewer("T1", PRIVATE, "private", "U1"), k=3)
    elsewhere = recall("zanzibar connections", Viewer("T1", CHANNEL, "public", "U1"), k=3)
    assert [hit.episode.user_text for hit in there] == ["see this"]
    assert elsewhere == []


def test_a_mentions_partial_file_is_looked_up_by_its_own_id(slack: Harness) -> None:
    h = slack
    h.slack.add_file("F9", "spec.pdf", pdf("The export runs nightly at 02:00 UTC."),
                     mimetype="application/pdf")
    h.slack.add_file("F10", "other.pdf", pdf("Never named by the message."))
    # As app_mention events carry a file at times: its id, and a word to ask files.info.
    partial = {"id": "F9", "file_access": "check_file_info", "created": 1700420000,
               "timestamp": 1700420000, "user": "U1"}
    assert h.event({"type": "app_mention", "user": "U1", "text": "<@UBOT> when does it run?",
                    "ts": "1700420000.000100", "channel": CHANNEL, "files": [partial]}) == 200
    wait_until(lambda: answer_of(h, "1700420000.000100"))
    assert [c.field("file") for c in h.slack.calls("files.info")] == ["F9"]
    blocks = shared_blocks(turn_request(h))
    assert [block["type"] for block in blocks] == ["text", "document", "text"]
    assert blocks[0]["text"] == '<shared-file name="spec.pdf"/>'
    assert not any("F10" in c.path for c in h.slack.requests)


def test_a_reply_carries_its_thread_roots_files_on_its_first_turn(slack: Harness) -> None:
    h = slack
    root = "1700430000.000100"
    log = h.slack.add_file("F1", "deploy.log", LOG.encode(), mimetype="text/plain")
    # Shared without naming the agent: no turn of its own.
    h.slack.add_message(CHANNEL, "tonight's deploy", ts=root, files=[log])
    assert h.mention("what failed?", "1700430000.000200", thread_ts=root) == 200
    wait_until(lambda: answer_of(h, root))
    (replies,) = h.slack.calls("conversations.replies")
    assert (replies.field("ts"), str(replies.field("limit"))) == (root, "1")
    blocks = shared_blocks(turn_request(h))
    assert [block["type"] for block in blocks] == ["text", "text"]
    assert "ledgerdb:5432" in blocks[0]["text"] and blocks[1]["text"] == "what failed?"
    # The session's next turn does not carry them again (its episode keeps them).
    assert h.mention("and who owns it?", "1700430000.000400", thread_ts=root) == 200
    (_, later) = h.model.wait_for_requests(2)
    assert later.conversation()[-1]["content"] == "and who owns it?"
    assert len(h.slack.calls("conversations.replies")) == 1


def test_each_bad_file_is_said_in_a_line_and_the_words_are_answered_and_kept(
    slack: Harness,
) -> None:
    h = slack
    files = [h.slack.add_file("F1", "locked.pdf", pdf("secret plan", password="hunter2"),
                              mimetype="application/pdf"),
             h.slack.add_file("F2", "huge.png", bomb(), mimetype="image/png"),
             h.slack.add_file("F3", "big.log", b"x" * (1024 * 1024 + 10),
                              mimetype="text/plain"),
             h.slack.add_file("F4", "blob.bin", random.Random(50).randbytes(4096))]
    h.model.push(api.text("Restart the pool."))
    ts = "1700440000.000100"
    share(h, "what now?", ts, files)
    assert wait_until(lambda: answer_of(h, ts)) == "Restart the pool."
    said, answer = bot_messages(h, ts)
    assert float(said["ts"]) < float(answer["ts"])
    lines = shown(said).splitlines()
    assert lines == [
        "I could not read locked.pdf: the PDF is password-protected.",
        "I could not read huge.png: the image would unfold into more pixels than Thoth"
        " opens (it may be built to exhaust memory).",
        "I could not read big.log: it is 1.0 MB, over the 1 MB files may be.",
        "I could not read blob.bin: it is not an image, a PDF or text, which is what Thoth"
        " reads.",
    ]
    # Over the cap by its object's size: never fetched.
    assert not any("F3" in c.path for c in h.slack.requests)
    blocks = shared_blocks(turn_request(h))
    assert [block["type"] for block in blocks] == ["text", "text"]
    assert blocks[0]["text"].startswith("<unread-files>") and "locked.pdf" in blocks[0]["text"]
    assert blocks[1]["text"] == "what now?"
    episode = episode_of(h, ts)
    assert episode.user_text == "what now?"
    assert [file.unread is not None for file in episode.files] == [True] * 4
    assert episode.files[0] == EpisodeFile(
        "locked.pdf", "other", files[0]["size"], "application/pdf", files[0]["permalink"],
        unread="the PDF is password-protected")


def test_a_download_slack_refuses_is_said_as_no_access_and_never_shown(
    slack: Harness,
) -> None:
    h = slack
    h.slack.scopes = h.slack.scopes.replace(",files:read", "")
    notes = h.slack.add_file("F1", "notes.txt", b"the real notes", mimetype="text/plain")
    ts = "1700450000.000100"
    share(h, "summarise these", ts, [notes])
    wait_until(lambda: answer_of(h, ts))
    said = bot_messages(h, ts)[0]
    assert shown(said) == f"I could not read notes.txt: {NO_ACCESS}."
    request = turn_request(h)
    assert "sign in to your workspace" not in json.dumps(request.body).lower()
    assert shared_blocks(request)[-1]["text"] == "summarise these"
    assert episode_of(h, ts).files[0].unread == NO_ACCESS


def test_a_message_of_files_alone_is_answered(slack: Harness) -> None:
    h = slack
    h.slack.add_channel("D1", "dana", "im")
    log = h.slack.add_file("F1", "deploy.log", LOG.encode(), mimetype="text/plain")
    ts = "1700460000.000100"
    assert h.event({"type": "message", "subtype": "file_share", "user": "U1", "text": "",
                    "ts": ts, "channel": "D1", "channel_type": "im", "files": [log]}) == 200
    request = h.model.wait_for_requests(1)[0]
    assert shared_blocks(request)[-1]["text"] == "[shared deploy.log]"


def test_a_message_with_files_taken_over_from_a_dead_replica_reads_them(
    slack: Harness,
) -> None:
    h = slack
    log = h.slack.add_file("F1", "deploy.log", LOG.encode(), mimetype="text/plain")
    ts = "1700470000.000100"
    incoming = Incoming("T1", CHANNEL, "U1", "what failed?", ts, ts, "EvDead1", "channel",
                        files=files_of({"files": [log]}))
    dead = SlackInbox(h.thoth.db, owner="dead-host:1:abc", lease_s=0)
    assert dead.take(("event:EvDead1",), lane=incoming.session_key, kind=MESSAGE,
                     payload=message_payload(incoming))
    quick = SlackInbox(h.thoth.db, owner=h.thoth.leases.owner, lease_s=0.3)
    lanes = DeliveryOrder(Offloaded(dataclasses.replace(h.bridge.stores, inbox=quick)),
                          lease_s=quick.lease_s)
    bridge = h.bridge
    bridge.runner.keep_running(lanes.keep(lambda entry: take_over(bridge, entry)))
    blocks = shared_blocks(h.model.wait_for_requests(1, 30)[0])
    assert blocks[0]["text"].startswith('<shared-file name="deploy.log">')
    assert blocks[-1]["text"] == "what failed?"
