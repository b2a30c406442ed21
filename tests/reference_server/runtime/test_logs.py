"""The server log: one structured line per response, one per bad upgrade, never a key."""

from __future__ import annotations

import asyncio
import json
import logging
import socket

import pytest
from websockets.asyncio.client import connect

from reference_server.runtime.logs import JsonFormatter, TextFormatter

from ..conftest import ServerFactory

KEY = "sk-secret-key-for-the-log-test"


async def _turns(url: str) -> None:
    async with connect(url, additional_headers={"Authorization": f"Bearer {KEY}"}) as ws:
        await ws.send(json.dumps({"type": "response.create", "model": "m", "input": "hi"}))
        while json.loads(await ws.recv())["type"] != "response.completed":
            pass
        missing = {"type": "response.create", "model": "m", "previous_response_id": "resp_x"}
        await ws.send(json.dumps({**missing, "input": "again"}))
        assert json.loads(await ws.recv())["type"] == "error"


def test_one_line_per_response_and_refusal_with_fields_and_no_key(
    make_server: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    with make_server(api_keys=(KEY,)) as server:
        asyncio.run(_turns(server.ws_url))
    lines = [r for r in caplog.records if r.name == "wsmode.responses"]
    assert [r.fields["status"] for r in lines] == ["completed", "refused"]  # type: ignore[attr-defined]
    done = lines[0].fields  # type: ignore[attr-defined]
    assert done["response_id"].startswith("resp_") and done["connection"].startswith("ws-")
    assert done["cache"] == "none" and done["tokens_out"] > 0 and done["ttft_ms"] is not None
    assert lines[1].fields["cache"] == "miss"  # type: ignore[attr-defined]
    for formatter in (TextFormatter(), JsonFormatter()):
        rendered = [formatter.format(r) for r in caplog.records]
        assert not any(KEY in line for line in rendered)
    assert f"response_id={done['response_id']} connection=ws-" in TextFormatter().format(lines[0])
    parsed = json.loads(JsonFormatter().format(lines[0]))
    assert parsed["response_id"] == done["response_id"] and parsed["level"] == "info"


def test_a_bad_upgrade_is_one_warning_without_a_traceback(
    make_server: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    with make_server() as server, socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(
            b"GET /v1/responses HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Key: abc\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        assert sock.recv(100).startswith(b"HTTP/1.1 400")
    upgrade = [r for r in caplog.records if r.name == "websockets.server" and r.levelno > 20]
    assert len(upgrade) == 1 and upgrade[0].exc_info is None
    assert "Sec-WebSocket-Key" in upgrade[0].getMessage()
    assert not any("rejected (400" in r.getMessage() for r in caplog.records)
