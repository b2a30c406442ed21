"""Running the `wsmode` CLI in-process in tests, as a user's shell would see it."""

from __future__ import annotations

from typing import Any

from harness.cli import main


def run_cli(argv: list[str], capsys: Any) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `wsmode argv`, SystemExit included (parser errors)."""
    try:
        status = main(argv)
    except SystemExit as exc:
        status = int(exc.code or 0)
    captured = capsys.readouterr()
    return status, captured.out, captured.err
