"""The reliability suite: the reference server as a hostile client meets it (RELIABILITY.md).

Servers run as `wsmode serve` child processes (harness.load.embedded_server) where a test needs
signals (SIGTERM, SIGKILL) or a restart, and in a thread otherwise. Bounded for CI: generated
cases are a few hundred per transport; `bench/fuzz.py` runs the same generators at scale.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.load.embedded_server import EmbeddedServer

TERMINAL_TYPES = frozenset(
    {"response.completed", "response.incomplete", "response.failed", "error"}
)


@pytest.fixture
def child_server(tmp_path: Path) -> Iterator[Any]:
    """Start `wsmode serve` children on `tmp_path/data`: `child_server(*args, profile=...)`."""
    started: list[EmbeddedServer] = []

    def start(*extra_args: str, profile: str = "zero") -> EmbeddedServer:
        server = EmbeddedServer(
            profile=profile, data_dir=tmp_path / "data", extra_args=tuple(extra_args)
        )
        started.append(server.start())
        return server

    yield start
    for server in started:
        server.stop()


def create(**fields: Any) -> str:
    return json.dumps({"type": "response.create", "model": "m", **fields})


def scripted(tokens: int, **fields: Any) -> str:
    """A create whose output is one message of exactly `tokens` tokens."""
    script = {"script": [{"type": "message", "tokens": tokens}]}
    return create(input="go", wsmode=script, **fields)
