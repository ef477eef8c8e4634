"""Transports (terminal, Slack), the turn pipeline, the composition root and the CLI."""
