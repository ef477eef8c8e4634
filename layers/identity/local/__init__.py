"""The local identity backend: observations per person in the database, no server needed."""
