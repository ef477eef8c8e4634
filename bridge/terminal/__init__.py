"""The terminal transport: `thoth chat`."""
