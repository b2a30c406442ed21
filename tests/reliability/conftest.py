"""The reliability suite: the reference server as a hostile client meets it (docs/RELIABILITY.md).

Servers run as `wsmode serve` child processes (harness.load.embedded_server) where a test
needs signals (SIGTERM, SIGKILL) or a restart, and in a thread otherwise. Bounded for CI: generated
cases are a few hundred per transport; `bench/ratios/fuzz.py` runs the same generators at scale.
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


@pytest.fixture
def thread_server(tmp_path: Path) -> Iterator[Any]:
    """A reference server in a thread: `thread_server(**ServerConfig changes)` as a context."""
    from reference_server.app import running_in_thread
    from reference_server.config import ServerConfig

    def factory(**changes: Any) -> Any:
        config = ServerConfig(port=0, profile="zero", data_dir=tmp_path / "data")
        return running_in_thread(config.with_changes(**changes))

    yield factory


def exchange(port: int, *chunks: bytes, pause_s: float = 0.0, timeout_s: float = 10.0) -> bytes:
    """Send raw bytes (optionally paced), then read until the server closes; the bytes read."""
    import socket
    import time

    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        try:
            for chunk in chunks:
                sock.sendall(chunk)
                time.sleep(pause_s)
        except OSError:
            pass  # the server answered and closed while we were still sending
        received = b""
        while True:
            try:
                data = sock.recv(65536)
            except OSError:
                return received
            if not data:
                return received
            received += data


def status_of(raw: bytes) -> int:
    """The status code of the first HTTP response in `raw` (0 when there is none)."""
    if not raw.startswith(b"HTTP/1.1 "):
        return 0
    return int(raw[9:12])
