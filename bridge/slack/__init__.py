"""The Slack transport on slack-bolt: events, commands, reactions, approval cards."""
