"""Turning text into vectors (MiniLM, run in numpy) for every layer that searches by
meaning: episodes, identity's local backend, skill matching."""
