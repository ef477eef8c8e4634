"""One line of an error for a log or /health: redacted whole, then cut."""

from __future__ import annotations

from layers.shared.one_line import one_line


def test_a_secret_across_the_cut_is_still_redacted() -> None:
    secret = "postgresql://thoth:s3cretpassword1234567@db.internal:5432/thoth"
    line = one_line("x" * 170 + " cannot connect to " + secret, max_chars=200)
    assert "s3cretpassword" not in line
    assert len(line) <= 200


def test_whitespace_is_folded_and_a_bare_exception_named() -> None:
    assert one_line("connection\n   refused\tnow") == "connection refused now"
    assert one_line(TimeoutError()) == "TimeoutError"
