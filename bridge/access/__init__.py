"""Who may reach Thoth from outside Slack, shared by the console and MCP: people's
tokens, and the person a web sign-in names."""
