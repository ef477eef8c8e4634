"""Slack text: escaped, long replies split, which events are a person talking."""

from __future__ import annotations

from bridge.slack.events import from_event, mentions, strip_mention
from bridge.slack_api.escaping import escape, escaped_pieces, mention, preview, split_message


def test_everything_remembered_is_escaped_and_only_thoth_mentions_stay_live() -> None:
    stored = "<!channel> ping & <@U2> said a < b > c, see <https://x.io|docs>"
    assert escape(stored) == (
        "&lt;!channel&gt; ping &amp; &lt;@U2&gt; said a &lt; b &gt; c,"
        " see &lt;https://x.io|docs&gt;"
    )
    assert "<" not in escape(stored) and ">" not in escape(stored)
    assert mention("U1") == "<@U1>"


def test_cuts_never_split_an_entity_and_respect_the_limit() -> None:
    escaped = escape("<" * 5000)
    pieces = split_message(escaped, limit=1000)
    assert all(len(piece) <= 1000 for piece in pieces)
    assert all(piece.endswith("&lt;") for piece in pieces)
    assert "".join(pieces) == escaped
    assert preview(escape("a & b " * 50), 14) == "a &amp; b a …"
    assert escaped_pieces("<!here>" * 3000, limit=12_000)[0].startswith("&lt;!here&gt;")


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


def test_a_message_of_files_is_someone_talking_and_keeps_only_what_reading_needs() -> None:
    shared = {"id": "F1", "name": "deploy.log", "title": "deploy.log", "size": 10,
              "mimetype": "text/plain", "url_private_download": "https://files.example/F1",
              "permalink": "https://test.slack.com/files/U1/F1/deploy.log",
              "thumb_360": "https://files.example/thumb", "shares": {"public": {}}}
    event = {"type": "message", "subtype": "file_share", "user": "U1", "text": "",
             "ts": "1.1", "channel": "D1", "channel_type": "im",
             "files": [shared, {"name": "no id, no file"}]}
    incoming = from_event(event, team="T1", event_id="Ev1", bot_user="UBOT")
    assert incoming is not None and incoming.text == ""
    (kept,) = incoming.files
    assert set(kept) == {"id", "name", "title", "size", "mimetype", "url_private_download",
                         "permalink"}
    assert from_event({**event, "files": []}, team="T1", event_id="Ev2", bot_user="UBOT") is None


def test_a_remembered_or_model_written_link_shows_where_it_goes() -> None:
    from bridge.slack_api.escaping import escape

    said = escape("See [open the thread](https://evil.example/x) or [https://a.b](https://a.b)")
    assert said == "See open the thread (https://evil.example/x) or https://a.b"
    assert escape("a [bracket] and (parens) stay") == "a [bracket] and (parens) stay"


def test_links_with_parentheses_titles_or_references_are_inert_too() -> None:
    from bridge.slack_api.escaping import inert_links

    assert inert_links("[wiki](https://e.org/x_(y))") == "wiki (https://e.org/x_(y))"
    assert inert_links('[docs](https://evil.example "Thoth") ok') == (
        "docs (https://evil.example) ok")
    assert inert_links("[open the thread][1]\n[1]: https://evil.example") == (
        "[open the thread] [1]\n1: https://evil.example")
