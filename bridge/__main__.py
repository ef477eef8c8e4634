"""`python -m bridge` is the same as `thoth`."""

from bridge.cli.main import run

run()
