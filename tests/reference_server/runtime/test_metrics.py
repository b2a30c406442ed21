"""/metrics: every counter shows (send stalls included), and the size gauges follow the caches."""

from __future__ import annotations

import asyncio
import json
import urllib.request

from websockets.asyncio.client import connect

from reference_server.runtime.metrics import ServerMetrics

from ..conftest import ServerFactory


def gauge(text: str, name: str) -> float:
    return next(float(line.split()[1]) for line in text.splitlines() if line.startswith(name + " "))


def test_a_counted_send_stall_is_rendered() -> None:
    metrics = ServerMetrics()
    metrics.inc("wsmode_send_stalls_total")
    metrics.inc("wsmode_some_new_counter_total", reason="x")
    text = metrics.render()
    assert "# TYPE wsmode_send_stalls_total counter\nwsmode_send_stalls_total 1" in text
    assert 'wsmode_some_new_counter_total{reason="x"} 1' in text


def test_cache_and_store_gauges_follow_an_open_connection(make_server: ServerFactory) -> None:
    with make_server() as server:
        metrics_url = server.http_url.rsplit("/v1", 1)[0] + "/metrics"

        def scrape() -> str:
            with urllib.request.urlopen(metrics_url, timeout=5) as reply:
                return str(reply.read().decode())

        async def body() -> tuple[str, str]:
            async with connect(server.ws_url) as ws:
                create = {"type": "response.create", "model": "m", "input": "hi", "store": True}
                await ws.send(json.dumps(create))
                while json.loads(await ws.recv())["type"] != "response.completed":
                    pass
                await asyncio.sleep(0.2)  # the store write lands after the terminal
                during = await asyncio.to_thread(scrape)
            await asyncio.sleep(0.2)
            return during, await asyncio.to_thread(scrape)

        during, after = asyncio.run(body())
    assert gauge(during, "wsmode_connection_cache_entries") == 1
    assert gauge(during, "wsmode_connection_cache_bytes") > 0
    assert gauge(during, "wsmode_store_bytes") > 0
    assert gauge(during, "wsmode_prefix_cache_bytes") > 0
    assert gauge(after, "wsmode_connection_cache_entries") == 0
    for exported in ("wsmode_gc_tenure_pause_seconds", "wsmode_memory_trims_total"):
        assert f"\n{exported} " in after  # the GC policy's own pauses, the trims
