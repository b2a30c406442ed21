from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, TypeVar

import pytest

from reference_server.app import ReferenceServer, running_in_thread
from reference_server.config import ServerConfig

T = TypeVar("T")
ServerFactory = Callable[..., AbstractContextManager[ReferenceServer]]


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


@pytest.fixture
def make_server(tmp_path: Path) -> ServerFactory:
    """A reference server in a thread; keyword arguments override ServerConfig fields."""

    def factory(**changes: Any) -> AbstractContextManager[ReferenceServer]:
        # self_check: every event the server builds is checked against the grammar here
        config = ServerConfig(port=0, profile="zero", data_dir=tmp_path / "data", self_check=True)
        return running_in_thread(config.with_changes(**changes))

    return factory


@pytest.fixture
def server(make_server: ServerFactory) -> Iterator[ReferenceServer]:
    with make_server() as srv:
        yield srv


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


TOOLS = [
    {
        "type": "function",
        "name": "read_file",
        "description": "Read a file",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
            "additionalProperties": False,
        },
    }
]
