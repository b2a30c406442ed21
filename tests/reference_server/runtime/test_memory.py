"""A connection that held many bytes trims the allocator once it closes; others do not."""

from __future__ import annotations

import asyncio

import pytest

from harness.transport.exchange import ws_exchange
from harness.transport.ws import WsClient
from reference_server.app import ReferenceServer
from reference_server.config import Limits
from reference_server.runtime.memory import MemoryReturn

from ..conftest import ServerFactory, run

pytestmark = pytest.mark.skipif(
    not MemoryReturn(1).available, reason="no malloc_trim here (not glibc)"
)


async def one_turn_then_close(server: ReferenceServer) -> None:
    client = await WsClient.connect(server.ws_url)
    body = {"model": "m", "input": "x" * 2000, "store": False}
    assert (await ws_exchange(client, body, timeout_s=10)).ok
    await client.close()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while server.services.metrics.connections and loop.time() < deadline:
        await asyncio.sleep(0.01)
    while server.services.memory_return._running and loop.time() < deadline:
        await asyncio.sleep(0.01)


@pytest.mark.parametrize(("threshold_bytes", "trims"), [(1, 1), (1 << 40, 0), (0, 0)])
def test_only_a_connection_over_the_threshold_trims_when_it_closes(
    make_server: ServerFactory, threshold_bytes: int, trims: int
) -> None:
    with make_server(limits=Limits(memory_trim_after_bytes=threshold_bytes)) as server:
        run(one_turn_then_close(server))
        assert server.services.memory_return.trims == trims
