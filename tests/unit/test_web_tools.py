"""The web's parts on their own: where it is allowed, how a paused turn is sent back, which
pages a turn rests on, and how they are shown (``tests/integration/test_web_tools.py``
runs them together against the loopback Messages API and Slack)."""

from __future__ import annotations

from typing import Any

import anthropic.types
import pytest
from pydantic import TypeAdapter

from bridge.model.anthropic_model import joined_text, web_sources, wire_messages
from bridge.model.metered import estimated_cost
from bridge.model.pricing import ModelPrice
from bridge.model.protocol import (
    WEB_MAX_USES,
    ModelRequest,
    ModelResult,
    Paused,
    Said,
    Source,
    ToolCall,
    ToolExchange,
    ToolOutcome,
)
from bridge.pipeline.answering import MAX_SOURCES, Answer
from bridge.pipeline.web_access import WebAccess, with_sources
from bridge.slack.reply_sources import sources_block
from layers.shared.places import Place

CONTENT = TypeAdapter(list[anthropic.types.ContentBlock])
PRICE = ModelPrice(input=1, output=1, cache_read=0, cache_write=0)


def _blocks(*raw: dict[str, Any]) -> list[Any]:
    """Response blocks as the SDK parses them."""
    return CONTENT.validate_python(list(raw))


def test_the_web_is_used_only_where_the_list_allows() -> None:
    access = WebAccess(frozenset({"search"}), ("public", "C7"))
    assert access.at(Place("T1", "C1", "public")) == {"search"}
    assert access.at(Place("T1", "C7", "private")) == {"search"}
    assert access.at(Place("T1", "D1", "im")) == frozenset()
    assert WebAccess(frozenset({"fetch"})).at(Place("T1", "D1", "im")) == {"fetch"}
    assert WebAccess(places=None).at(Place("T1", "C1", "public")) == frozenset()


def test_a_paused_turn_and_what_follows_go_back_as_one_assistant_message() -> None:
    request = ModelRequest("m", (), (Said("user", "when?"),))
    paused = ModelResult("", echo=({"type": "server_tool_use", "id": "s1"},),
                         stop_reason="pause_turn")
    again = request.continued(paused).continued(
        ModelResult("", echo=({"type": "web_search_tool_result", "tool_use_id": "s1"},)))
    assert again.messages[1:] == (Paused(({"type": "server_tool_use", "id": "s1"},
                                          {"type": "web_search_tool_result",
                                           "tool_use_id": "s1"})),)
    assert wire_messages(again)[-1]["role"] == "assistant"
    call = ToolCall("t1", "recall", {})
    asked = ModelResult("", echo=({"type": "tool_use", "id": "t1"},), tool_calls=(call,))
    after = again.after_tools(asked, [ToolOutcome("t1", "nothing")])
    (exchange,) = after.messages[1:]
    assert isinstance(exchange, ToolExchange)
    assert [block["type"] for block in exchange.echo] == [  # type: ignore[index]
        "server_tool_use", "web_search_tool_result", "tool_use"]


def test_the_sources_are_the_cited_pages_else_the_search_results_each_once() -> None:
    result = {"type": "web_search_tool_result", "tool_use_id": "s1", "content": [
        {"type": "web_search_result", "url": "https://a.example", "title": "A",
         "encrypted_content": "e"},
        {"type": "web_search_result", "url": "https://b.example", "title": "B",
         "encrypted_content": "e"}]}
    cite = {"type": "web_search_result_location", "url": "https://b.example", "title": "B",
            "cited_text": "b", "encrypted_index": "i"}
    use = {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query": "q"}}
    cited = _blocks({"type": "text", "text": "Let me look."}, use, result,
                    {"type": "text", "text": "B says so.", "citations": [cite, cite]})
    assert web_sources(cited) == (Source("https://b.example", "B"),)
    # Words after a search start a new paragraph; words split by citations run on.
    assert joined_text(cited) == "Let me look.\n\nB says so."
    uncited = _blocks(use, result, {"type": "text", "text": "Found it."})
    assert [s.url for s in web_sources(uncited)] == ["https://a.example", "https://b.example"]


def test_an_answer_keeps_each_source_once_and_at_most_a_few() -> None:
    answer = Answer()
    pages = tuple(Source(f"https://{n}.example", str(n)) for n in range(MAX_SOURCES + 2))
    answer.add_sources(pages[:2])
    answer.add_sources(pages)
    assert answer.sources == list(pages[:MAX_SOURCES])
    assert with_sources("Yes.", answer.sources[:2]) == (
        "Yes.\n\nSources: https://0.example https://1.example")
    assert with_sources("Yes.", []) == "Yes."


def test_a_search_is_held_against_the_cap_while_it_may_run() -> None:
    plain = ModelRequest("m", (), (Said("user", "hi"),), max_tokens=10)
    searching = ModelRequest("m", (), (Said("user", "hi"),), max_tokens=10,
                             web=frozenset({"search"}))
    held = estimated_cost(searching, PRICE) - estimated_cost(plain, PRICE)
    assert held == pytest.approx(WEB_MAX_USES * 0.01)


def test_the_slack_links_are_thoths_own_markup_and_nothing_else_gets_through() -> None:
    block = sources_block([
        Source("https://example.com/a?x=1&y=<2>|3", "Tricky <!channel> title " + "x" * 100),
        Source("javascript:alert(1)", "Not a page"),
        Source("https://ok.example/b", ""),
    ])
    assert block is not None
    (element,) = block["elements"]
    text = element["text"]
    assert text.startswith("Sources: <https://example.com/a?x=1&amp;y=%3C2%3E%7C3|Tricky"
                           " &lt;!channel&gt; title x")
    assert "…> · <https://ok.example/b|ok.example>" in text
    assert "javascript" not in text
    assert sources_block([Source("ftp://example.com", "F")]) is None
