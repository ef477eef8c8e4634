"""The stores' placeholders, as psycopg reads them (layers/shared/storage/postgres.py)."""

from __future__ import annotations

from layers.shared.storage.postgres import format_style, redacted_url


def test_placeholders_become_psycopg_ones_outside_quoted_text() -> None:
    assert format_style("SELECT 1 FROM t WHERE a = ? AND b = :name") == (
        "SELECT 1 FROM t WHERE a = %s AND b = %(name)s"
    )
    # A literal or a quoted identifier keeps its ? and :word; % doubles everywhere.
    assert format_style("SELECT '?:x%' FROM \"a?b\" WHERE c LIKE ? AND d = 5 % 2") == (
        "SELECT '?:x%%' FROM \"a?b\" WHERE c LIKE %s AND d = 5 %% 2"
    )
    assert format_style("SELECT CAST(:q AS vector), x::text") == (
        "SELECT CAST(%(q)s AS vector), x::text"
    )


def test_a_url_loses_its_password_in_messages() -> None:
    assert redacted_url("postgresql://thoth:s3cret@db:5432/thoth") == (
        "postgresql://thoth:***@db:5432/thoth"
    )
    assert redacted_url("postgresql://db/thoth") == "postgresql://db/thoth"
