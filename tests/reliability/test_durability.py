"""A store=true response whose terminal event was sent survives SIGKILL (persistence.py's window).

With `async_post` off the commit lands before the terminal: retrievable however soon the kill
comes. With it on (the default) the documented window (`DURABILITY_WINDOW_S`) is asserted: every
response whose terminal arrived that long before the kill is retrievable, and its chain hydrates.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
import urllib.error
import urllib.request
from typing import Any

from websockets.asyncio.client import connect

from reference_server.store.persistence import DURABILITY_WINDOW_S

from .conftest import create


async def _chain(url: str, turns: int) -> list[str]:
    """Run a chained store=true conversation; the ids, each read off its terminal event."""
    ids: list[str] = []
    async with connect(url, max_size=None) as ws:
        for turn in range(turns):
            previous = {"previous_response_id": ids[-1]} if ids else {}
            await ws.send(create(input=f"turn {turn}", store=True, **previous))
            while True:
                event = json.loads(await ws.recv())
                if event["type"] in ("response.completed", "response.incomplete"):
                    ids.append(event["response"]["id"])
                    break
                assert event["type"] not in ("error", "response.failed"), event
    return ids


def _retrievable(http_url: str, response_id: str) -> bool:
    try:
        with urllib.request.urlopen(f"{http_url}/responses/{response_id}", timeout=10) as reply:
            return bool(reply.status == 200)
    except urllib.error.HTTPError:
        return False


async def _continues(url: str, previous_id: str) -> str:
    async with connect(url, max_size=None) as ws:
        await ws.send(create(input="after restart", store=False, previous_response_id=previous_id))
        while True:
            event: dict[str, Any] = json.loads(await ws.recv())
            if event["type"] in ("response.completed", "response.incomplete", "error"):
                return str(event["type"])


def _kill_and_restart(child_server: Any, server: Any, *args: str) -> Any:
    server.process.send_signal(signal.SIGKILL)
    server.process.wait(10)
    return child_server(*args)


def test_without_async_post_a_response_is_durable_when_its_terminal_is_sent(
    child_server: Any,
) -> None:
    server = child_server("--disable", "async_post")
    ids = asyncio.run(_chain(server.ws_url, 12))
    restarted = _kill_and_restart(child_server, server)  # no pause at all
    assert [i for i in ids if not _retrievable(restarted.http_url, i)] == []
    assert asyncio.run(_continues(restarted.ws_url, ids[-1])) == "response.completed"


def test_with_async_post_a_response_is_durable_within_the_documented_window(
    child_server: Any,
) -> None:
    server = child_server()
    ids = asyncio.run(_chain(server.ws_url, 12))
    time.sleep(DURABILITY_WINDOW_S)
    restarted = _kill_and_restart(child_server, server)
    assert [i for i in ids if not _retrievable(restarted.http_url, i)] == []
    assert asyncio.run(_continues(restarted.ws_url, ids[-1])) == "response.completed"
