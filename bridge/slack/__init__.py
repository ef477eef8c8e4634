"""The Slack transport on slack-bolt: what Bolt delivers (events, clicks, shortcuts, slash
commands: ``listeners.py``) and what Thoth does with it (the conversation, reactions, the
App Home and the AI pane). Slack's Web API, shared with the console and MCP, is
``bridge/slack_api/``."""
