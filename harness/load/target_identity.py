"""The implementation behind a target URL, as it names itself: the response headers of one
WebSocket handshake (no request is sent), read before a bench or load run so its results file
names the implementation and its version (`harness.results.identity.resolve_identity`)."""

from __future__ import annotations

import asyncio
from typing import Final

from harness.errors import TransportError
from harness.transport.ws import WsClient

HANDSHAKE_TIMEOUT_S: Final = 5.0


async def _handshake_headers(url: str, api_key: str | None, timeout_s: float) -> dict[str, str]:
    client = await WsClient.connect(url, api_key=api_key, timeout_s=timeout_s)
    try:
        response = client.connection.response
        return dict(response.headers) if response is not None else {}
    finally:
        await client.close()


def server_headers(
    ws_url: str | None, api_key: str | None, timeout_s: float = HANDSHAKE_TIMEOUT_S
) -> dict[str, str]:
    """The handshake response headers of `ws_url`; {} when there is no ws URL or the handshake
    fails (the run itself then reports why: naming is no reason to stop)."""
    if not ws_url:
        return {}
    try:
        return asyncio.run(_handshake_headers(ws_url, api_key, timeout_s))
    except (TransportError, OSError, TimeoutError):
        return {}
