"""A number too large for a double (`1e400`) is a 400 naming its parameter, never a lost reply."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from websockets.asyncio.client import connect

from .cases import VALID

FRAME = '{"type":"response.create","model":"m","input":"hi","store":true,"top_p":1e400}'


def test_over_websocket_an_error_event_names_the_parameter_and_the_socket_stays_open(
    thread_server: Any,
) -> None:
    with thread_server() as server:

        async def body() -> tuple[dict[str, Any], str]:
            async with connect(server.ws_url) as ws:
                await ws.send(FRAME)
                error = json.loads(await ws.recv())
                await ws.send(json.dumps(VALID))
                while True:
                    event = json.loads(await ws.recv())
                    if event["type"] in ("response.completed", "response.incomplete"):
                        return error, event["type"]

        error, after = asyncio.run(body())
    assert error["type"] == "error" and error["status"] == 400
    assert (error["error"]["param"], error["error"]["code"]) == ("top_p", "invalid_value")
    assert after in ("response.completed", "response.incomplete")


@pytest.mark.parametrize("name", ["temperature", "top_p"])
def test_over_http_the_answer_is_400_naming_the_parameter(thread_server: Any, name: str) -> None:
    body = f'{{"model":"m","input":"hi","store":true,"{name}":-1e400}}'.encode()
    with thread_server() as server:
        request = urllib.request.Request(f"{server.http_url}/responses", data=body, method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        error = json.loads(refused.value.read())["error"]
        assert server.services.persistence.store.count() == 0  # nothing accepted, nothing lost
    assert refused.value.code == 400 and error["param"] == name
