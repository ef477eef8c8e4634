"""The ways in (the Slack transport, the console, MCP, the terminal, and the worker beside
them), the floors they stand on (commands, Slack's Web API, serving HTTP, the turn
pipeline, the model), the composition root and the CLI (docs/architecture.md, "Layout")."""
