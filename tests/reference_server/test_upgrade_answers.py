"""The answers a client relies on before a WebSocket exists (PROTOCOL.md §1.1): 401 for a bad key
on the upgrade, 426 for an upgrade to a server with WebSocket mode switched off (codex falls back
to HTTP at once only on 426), HTTP served as usual meanwhile."""

from __future__ import annotations

import json

import httpx
import pytest

from harness.transport.failures import HttpStatusError
from harness.transport.ws import WsClient

from .conftest import ServerFactory, run


def refusal(url: str, key: str) -> HttpStatusError:
    async def main() -> None:
        client = await WsClient.connect(url, api_key=key)
        await client.close()

    with pytest.raises(HttpStatusError) as info:
        run(main())
    return info.value


def test_websocket_mode_off_answers_426_and_http_still_serves(make_server: ServerFactory) -> None:
    with make_server(websocket=False, api_keys=("sk-a",)) as server:
        off = refusal(server.ws_url, "sk-a")
        bad_key = refusal(server.ws_url, "sk-wrong")
        with httpx.Client(base_url=server.http_url, timeout=10) as http:
            served = http.post(
                "/responses",
                json={"model": "m", "input": "hi"},
                headers={"Authorization": "Bearer sk-a"},
            )
    assert off.status == 426
    assert json.loads(off.body)["error"]["code"] == "websocket_not_supported"
    assert bad_key.status == 401 and json.loads(bad_key.body)["error"]["code"] == "invalid_api_key"
    assert served.status_code == 200 and served.json()["status"] == "completed"
