"""The SQLite database every layer keeps its rows in."""
