"""Shared helpers for the load-harness tests: a reference server, the smoke trace, a runner."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from harness.load.core.replay_options import Endpoint
from harness.traces.format import Rollout, load_traces
from reference_server.app import ReferenceServer, running_in_thread
from reference_server.config import ServerConfig

T = TypeVar("T")
SMOKE = Path(__file__).resolve().parents[2] / "traces" / "smoke.jsonl"


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def smoke_rollouts() -> list[Rollout]:
    return load_traces(SMOKE)


@contextmanager
def reference_server(data_dir: Path, **changes: Any) -> Iterator[ReferenceServer]:
    config = ServerConfig(port=0, profile="zero", data_dir=data_dir).with_changes(**changes)
    with running_in_thread(config) as server:
        yield server


def endpoint(server: ReferenceServer, api_key: str | None = None) -> Endpoint:
    return Endpoint(server.ws_url, server.http_url, api_key)
