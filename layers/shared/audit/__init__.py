"""The audit log: every change people make to what Thoth keeps, append-only."""
