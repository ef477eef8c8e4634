"""The team's own tools: MCP servers Thoth is a client of (issue 51)."""
