"""Slack's Web API, for every surface that speaks to Slack (the Bolt transport, the
console, MCP, the worker): clients per install and their rate budget, the directory of
names, escaping, Block Kit cards, installs and Sign in with Slack. Nothing here knows
Bolt's listeners; ``bridge/slack/`` is what Bolt delivers."""
