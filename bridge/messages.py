"""Every text Thoth shows its users, in one place (wording is reviewed here, not in code)."""

from __future__ import annotations

NO_MODEL_CONFIGURED = (
    "No language model is configured (set ANTHROPIC_API_KEY to enable one), so I can"
    " only show what my memory holds for this message."
)
NOTHING_REMEMBERED = "Memory holds nothing related to this message yet."
MODEL_FAILED = (
    "Sorry, I couldn't get an answer from the language model just now (it is"
    " unavailable or overloaded). Please try again in a minute."
)
EMPTY_REPLY = (
    "Sorry, the language model finished without an answer. Please rephrase or try again."
)
INTERRUPTED = "(interrupted before the reply was complete)"
INTERNAL_ERROR = "Sorry, something went wrong on my side while answering. Please try again."
COST_CAP_REACHED = (
    "I've reached today's spending limit for the language model (DAILY_COST_CAP_USD ="
    " ${cap:.2f}), so I won't make new model calls until midnight UTC."
)
SESSION_ENDED = "Session ended."
SESSION_ENDED_SLACK = (
    "Session ended. I'll look back on it and post anything worth keeping here for approval."
)
FOLLOWUP_CANCELLED = "Okay, I won't check back on this thread."
NO_OPEN_SESSION = "There is no open session in this thread to end."
CHAT_BANNER = (
    "Thoth — session {session_id}. /recall QUERY searches memory, /done ends the"
    " session, /quit leaves. Ctrl-D also leaves."
)
CHAT_RESUME_HINT = "Resume this session later with: thoth chat --session {session_id}"
