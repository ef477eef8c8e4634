"""The local identity backend: observations per person in SQLite, no server needed."""
