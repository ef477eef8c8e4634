"""Every text Thoth says to people in a conversation — the terminal chat and Slack (replies,
notices, statuses, buttons, suggested prompts) — in one place: wording is reviewed here,
not in code. Decided: a command's own report lines (`thoth init`, `episodes import`,
`doctor`) stay beside the command that prints them, a tool's step title beside the tool
(``bridge/pipeline/tools/``), and reflection's summary is reflection's
(``reflection/run.py``), which imports nothing of the bridge."""

from __future__ import annotations

OFFLINE_BEST_EVIDENCE = "What memory holds that answers it best:"
# The related episodes not already shown whole as the best evidence.
OFFLINE_ALSO_RELATED = "Related episodes:"
NO_MODEL_CONFIGURED = (
    "No language model is configured (set ANTHROPIC_API_KEY to enable one): I keep what"
    " you tell me and answer questions from what my memory holds."
)
NOTHING_REMEMBERED = "Memory holds nothing related to this message yet."
OFFLINE_NOTED = "Noted and kept; ask me about it any time:\n> {message}"
MODEL_FAILED = (
    "Sorry, I couldn't get an answer from the language model just now (it is"
    " unavailable or overloaded). Please try again in a minute."
)
# A Slack message queued while the model's API is overloaded: answered, once, in the
# same thread when it is back (bridge/pipeline/answer_later.py).
MODEL_OVERLOADED_LATER = "Claude is overloaded; I will answer when it is back."
EMPTY_REPLY = (
    "Sorry, the language model finished without an answer. Please rephrase or try again."
)
INTERRUPTED = "(interrupted before the reply was complete)"
INTERNAL_ERROR = "Sorry, something went wrong on my side while answering. Please try again."
# A turn the database has no room to keep (issue 55, a full disk): not answered, so
# nothing of it is half kept and nothing is answered twice when it is sent again.
DISK_FULL = (
    "I can't keep this conversation: the server's disk is full, so I haven't answered"
    " this message. Please send it again once there is room (whoever runs Thoth has been"
    " told)."
)
COST_CAP_REACHED = (
    "I've reached today's spending limit for the language model (DAILY_COST_CAP_USD ="
    " ${cap:.2f}), so I won't make new model calls until midnight UTC."
)
PERSON_CAP_REACHED = (
    "You've used your share of today's language-model budget"
    " (DAILY_COST_CAP_PER_PERSON_USD = ${cap:.2f}), so I won't make new model calls for"
    " you until midnight UTC. The rest of the team's budget is theirs."
)
SESSION_ENDED = "Session ended."
IDENTITY_KEPT = (
    "{count} turn(s) not yet sent to the identity backend (Honcho did not answer in time)"
    " are kept, and sent when Thoth next starts."
)
SESSION_ENDED_SLACK = (
    "Session ended. I'll look back on it and post anything worth keeping here for approval."
)
FOLLOWUP_CANCELLED = "Okay, I won't check back on this thread."
NO_OPEN_SESSION = "There is no open session in this thread to end."
NOT_YOUR_SESSION = "Only someone who took part in this conversation can end it."
CHAT_BANNER = (
    "Thoth — session {session_id}. /attach PATH sends a file with your next message,"
    " /recall QUERY searches memory, /done ends the session, /quit leaves. Ctrl-D also"
    " leaves."
)
# Files attached with /attach (or --file) when the chat ended before a message took them.
ATTACHED_NOT_SENT = "Not sent: {names} (attached, but no message followed)."
CHAT_RESUME_HINT = "Resume this session later with: thoth chat --session {short_id}"

# Slack: reactions, feedback buttons and skill cards (said only to the person concerned).
FORGOTTEN = "Forgotten: that exchange is deleted from my memory (text and vector)."
NOT_A_FOUNDER = "Only founders (FOUNDER_USER_IDS) can approve or reject skills."
NOT_A_FOUNDER_NOTES = "Only founders (FOUNDER_USER_IDS) can keep or reject memory notes."
ASKER_ONLY = "Only the person who asked can save (🧠) or forget (🗑️) this exchange."
# The message shortcuts (bridge/slack/shortcuts.py).
NOTE_PROPOSED = "Proposed as a memory note here; a founder keeps or rejects it (its card)."
NOTE_KEPT_AT_ONCE = "Kept as a memory note here."
FORGET_THIS_NOT_YOURS = (
    "Only an answer of mine to something you asked can be forgotten this way.")
ALREADY_FORGOTTEN = "That exchange is already forgotten."
FEEDBACK_THANKS = "Thanks, noted. It shapes which answers I lean on next time."
FEEDBACK_TAKEN_BACK = "Okay, your feedback on that reply is taken back."
STOPPED = "(stopped before the reply was complete)"
RECALL_USAGE = "/recall needs a query: /recall what did we decide about the deploy?"
NOTHING_TO_END = "There is no open session in this channel to end."
THOTH_COMMAND_USAGE = (
    "Usage, in a DM with Thoth: /thoth token [what it is for] makes a token for MCP"
    " (Claude Code, Cursor, Codex); /thoth tokens lists yours; /thoth revoke ID revokes one;"
    " /thoth connections lists the accounts you connected; /thoth disconnect NAME ends one;"
    ' /thoth routine add "0 9 * * 1-5" #channel TEXT makes a routine (it posts in the channel'
    " named, or here without one; the schedule is in your time zone); /thoth routines lists"
    " yours, to pause, resume, run now or delete.")
ROUTINE_ADD_USAGE = (
    'Usage: /thoth routine add "CRON" [#channel] TEXT, e.g. /thoth routine add'
    ' "0 9 * * 1-5" #eng Post a summary of yesterday\'s decisions')
ROUTINE_MADE = ("Created routine {id}: {when} ({zone}), posting to {where}; next run {next}.")
NO_ROUTINES_HERE = "Routines are not made here."
TOKENS_ONLY_IN_A_DM = (
    "/thoth works in a DM with Thoth: a token is a secret, and a routine names the channel"
    " it posts in (/thoth routine add \"CRON\" #channel TEXT there).")
# Markdown: the token in a code span, so Slack shows it whole and it copies cleanly.
MCP_TOKEN_MADE = (
    "Your new MCP token ({label}), id `{id}`, shown this once:\n\n`{secret}`\n\n"
    "Give it to your MCP client as the header `Authorization: Bearer …` for this"
    " server's `/mcp`. It reads what you may read here. `/thoth revoke {id}` ends it.")
NO_MCP_TOKENS = "You have no MCP tokens. /thoth token makes one."
MCP_TOKEN_REVOKED = "Revoked {id} ({label}): it is refused from now on."

# Steps shown while a reply is made (Slack: tasks in the stream).
STEP_SEARCHING_MEMORY = "Searching memory"

# The model stopped short of an answer (its stop_reason).
REPLY_CUT = "(The reply was cut at the length limit before it was complete.)"
CONTEXT_FULL = (
    "(This conversation has grown too long for the model. Say `done` to end it and start"
    " a new thread.)"
)
MODEL_REFUSED = "(The model declined to answer this.)"
REPLY_PAUSED = "(The model paused before the reply was complete. Please ask again.)"
# What heads the web pages a reply rests on, under it.
SOURCES = "Sources"
TOOL_ROUNDS_USED = (
    "(I stopped after {rounds} rounds of looking things up without finishing the answer."
    " Please ask a narrower question.)"
)
MODEL_MISCONFIGURED = (
    "Sorry, the language model API refused Thoth's request. That is a configuration problem"
    " on our side, not a busy model, so trying again won't help: an operator can see the"
    " reason in the log and with `thoth doctor`."
)
MODEL_SPEND_LIMIT = (
    "The team's Anthropic API spend limit is reached, so I can't call the language model"
    " until it resets. An operator can raise the limit in the Anthropic Console."
)
MODEL_ASKS_TO_WAIT = (
    "The language model is busy and asks to wait about {seconds} seconds, longer than a"
    " reply should take. Please ask again then."
)


# Slack: the status line while a reply is made, the /recall acknowledgement, the AI
# pane's suggested prompts, the buttons under a reply and on a skill-draft card.
THINKING_STATUS = "is thinking…"
RECALL_ACK = "Searching memory…"
PROMPTS_TITLE = "Pick up where we left off, or ask anything:"
CONTINUE_TITLE = "Continue: {topic}"
CONTINUE_MESSAGE = "Back to this: {said}"
STARTER_PROMPTS = ("What do you know about me?", "What did we decide recently?")
HELPFUL = "Helpful"
NOT_HELPFUL = "Not helpful"
HELPFUL_LABEL = "Mark this reply as helpful"
NOT_HELPFUL_LABEL = "Mark this reply as not helpful"
APPROVE = "Approve"
REJECT = "Reject"
CARD_HINT = "Founders: click, or react ✅ / ❌ on this card."

# MCP: what a client (and the person who configured it) is told.
NO_MEMORY = (
    "no Thoth memory at {db} ({home}): set THOTH_HOME to the home that holds"
    " it, or run `thoth init` there to start one"
)
# Said in /mcp's 401 (its WWW-Authenticate header and body): a quoted-string, so no '"'.
TOKEN_HINT = (
    "a Thoth token is needed (none was sent, or it is unknown or revoked): make one with"
    " /thoth token in a DM with Thoth in Slack, or ask the operator for one (thoth tokens"
    " make), and send it as Authorization: Bearer <token>"
)
TOKEN_HINT_SIGN_IN = TOKEN_HINT + "; or sign in with Slack through your client's OAuth"
# A client (or a script) that registers or signs in faster than any person does: the
# 429's error_description beside its Retry-After.
MCP_OAUTH_TOO_MANY = (
    "too many {what} from this address: try again in {seconds} seconds"
)
# Which ways in /mcp offers (the startup lines, `thoth doctor`).
MCP_WAYS_IN_TOKENS = (
    "each person with a Thoth token of their own (/thoth token in a DM with Thoth, or"
    " thoth tokens make) only: no sign-in with Slack (OAuth is not configured)"
)
MCP_WAYS_IN_SIGN_IN = (
    "each person with a Thoth token of their own (/thoth token in a DM with Thoth, or"
    " thoth tokens make), or by signing in with Slack (OAuth)"
)
# A message acked while the database was away, held in memory until the hold ran out
# (bridge/slack/database_away.py): Slack will not send it again.
NOT_KEPT_DATABASE_AWAY = (
    "I could not keep your message: my database has been unavailable for ten minutes."
    " Please send it again in a few minutes."
)
