"""Without -v a command says its own warnings and no library's; with -v, or for a service
(serve, worker), every logger speaks."""

from __future__ import annotations

import argparse
import io
import logging
from collections.abc import Iterator

import pytest

from bridge.cli.main import _configure_logging


@pytest.fixture
def root_handler() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers = [handler]
    yield stream
    root.handlers = saved


def _said(stream: io.StringIO) -> str:
    logging.getLogger("httpx").warning("a library's retry")
    logging.getLogger("bridge.cli.chat").warning("our own warning")
    return stream.getvalue()


@pytest.mark.parametrize(
    ("verbose", "long_running", "library_heard"),
    [(False, False, False), (True, False, True), (False, True, True)],
    ids=["a command", "a command with -v", "a service"],
)
def test_only_our_own_warnings_reach_a_person_without_v(
    root_handler: io.StringIO, verbose: bool, long_running: bool, library_heard: bool
) -> None:
    _configure_logging(argparse.Namespace(verbose=verbose, long_running=long_running),
                       io.StringIO())
    said = _said(root_handler)
    assert "our own warning" in said
    assert ("a library's retry" in said) is library_heard
