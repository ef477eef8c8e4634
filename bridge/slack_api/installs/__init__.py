"""Thoth installed into many workspaces through Slack's OAuth v2 flow (README, "Slack")."""
