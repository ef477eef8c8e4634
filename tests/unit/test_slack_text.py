"""Slack text: Markdown to mrkdwn, long replies split, which events are a person talking."""

from __future__ import annotations

from bridge.slack.events import from_event, mentions, strip_mention
from bridge.slack.mrkdwn import split_message, to_mrkdwn


def test_markdown_becomes_mrkdwn_outside_code() -> None:
    markdown = (
        "# Plan\n**Deploy** on *Friday* with ~~care~~. See [docs](https://x.io/a).\n"
        "- one\n- two `**raw**`\n```\n**code**\n```"
    )
    assert to_mrkdwn(markdown) == (
        "*Plan*\n*Deploy* on _Friday_ with ~care~. See <https://x.io/a|docs>.\n"
        "• one\n• two `**raw**`\n```\n**code**\n```"
    )


def test_long_text_is_split_at_paragraphs_and_code_blocks_stay_closed() -> None:
    text = "\n\n".join(["word " * 150] * 10) + "\n\n```\n" + "line\n" * 400 + "```"
    pieces = split_message(text, limit=1000)
    assert all(len(piece) <= 1000 for piece in pieces)
    assert all(piece.count("```") % 2 == 0 for piece in pieces)
    assert "".join(p.replace("```", "") for p in pieces).count("word") == 1500


def test_only_people_talking_become_messages() -> None:
    person = {"type": "message", "user": "U1", "text": "<@UBOT> hi <@U2>", "ts": "1.1",
              "channel": "C1"}
    incoming = from_event(person, team="T1", event_id="Ev1", bot_user="UBOT")
    assert incoming is not None
    assert incoming.text == "hi <@U2>" and incoming.thread_root == "1.1"
    assert incoming.session_key == "slack:T1:C1:1.1"
    for ignored in (
        {**person, "bot_id": "B1"},
        {**person, "user": "UBOT"},
        {**person, "subtype": "message_changed"},
        {**person, "text": "<@UBOT>"},
    ):
        assert from_event(ignored, team="T1", event_id="Ev", bot_user="UBOT") is None
    assert mentions("hey <@UBOT|thoth>", "UBOT") and not mentions("hey <@U2>", "UBOT")
    assert strip_mention("<@UBOT> recall deploys", "UBOT") == "recall deploys"
