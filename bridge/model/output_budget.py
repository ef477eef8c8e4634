"""``max_tokens`` per purpose and model: thinking and text share it, and a cut is a failure.

On a model that thinks on every request (Opus 5.5 and its kin) ``max_tokens`` bounds
thinking plus the reply, so a bound sized for text alone cuts replies after long
thinking. The bound is the longest text a purpose may write plus what thinking takes
at the effort sent; it costs nothing unused (only generated tokens are charged).
"""

from __future__ import annotations

from bridge.model.catalogue import CATALOGUE, Capabilities

# The longest reply a turn writes (about 16 000 characters, far past what a Slack thread
# is read in), and a reflection report (five notes, a skill body, observations).
REPLY_TOKENS = 4_000
REPORT_TOKENS = 4_000
# Room for thinking before the text, by effort. Anthropic's advice when a reply stops at
# max_tokens is to raise it or lower effort: these leave room for the long tail of
# medium (and grow with the level), so a cut is rare rather than routine.
THINKING_ALLOWANCE = {"low": 4_000, "medium": 12_000, "high": 24_000, "xhigh": 48_000,
                      "max": 64_000}


def max_tokens_for(capabilities: Capabilities, effort: str | None, text_tokens: int) -> int:
    """``text_tokens`` of text, plus thinking at ``effort`` on a model that thinks."""
    thinking = 0
    if capabilities.thinks:
        level = capabilities.effort_for(effort) or capabilities.effort_default or "high"
        thinking = THINKING_ALLOWANCE.get(level, THINKING_ALLOWANCE["high"])
    return min(capabilities.max_output, text_tokens + thinking)


def sized_max_tokens(chosen: int | None, model: str, effort: str, text_tokens: int) -> int:
    """The operator's ``max_tokens`` for a purpose if set, else sized for ``model``."""
    return chosen or max_tokens_for(CATALOGUE.capabilities(model), effort, text_tokens)
