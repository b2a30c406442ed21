"""One rollout's connection to its target: a WebSocket, or a keep-alive HTTP client from a pool;
each create is one exchange, timed at the socket (harness.transport.exchange)."""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Mapping
from typing import Any

from harness.load.core.injects import InjectedExchange, multi_agent_exchange
from harness.load.core.replay_options import Endpoint, ReplayOptions
from harness.traces.format import Turn
from harness.transport.exchange import Exchange, sse_exchange, ws_exchange
from harness.transport.failures import TargetTimeout
from harness.transport.sse import SseClient
from harness.transport.ws import WsClient

_PoolKey = tuple[str, str | None, float]

# WebSocket handshakes in flight at once per event loop. A closed loop starts every rollout at
# once: 5,000 simultaneous SYNs overflow the target's accept queue (1,024-4,096 on Linux), the
# kernel drops them and the client retries after 1, 3, 7 s, so some opens missed their 10 s
# deadline and failed as transport errors (bench/ratios/load_scale.py). Queued here instead,
# they open at the target's accept rate; a turn's timings start after its connection is open.
MAX_OPENING_HANDSHAKES = 256
_opening_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)


def _opening_gate() -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    gate = _opening_gates.get(loop)
    if gate is None:
        gate = _opening_gates[loop] = asyncio.Semaphore(MAX_OPENING_HANDSHAKES)
    return gate


class HttpClientPool:
    """Keep-alive HTTP clients handed to rollouts one at a time, reused across rollouts.

    Building an `SseClient` is cheap (its TLS context is built once per process), so the pool
    is no longer needed to keep a ~22 ms event-loop stall out of the measurements; it keeps each
    client's keep-alive connection open across rollouts, like an agent process that keeps its
    HTTP client across tasks. A client serves one rollout at a time (its byte counters stay per
    rollout).
    """

    def __init__(self) -> None:
        self._free: dict[_PoolKey, list[SseClient]] = {}
        self._keys: dict[int, _PoolKey] = {}
        self._all: list[SseClient] = []

    def _new(self, key: _PoolKey) -> SseClient:
        url, api_key, timeout_s = key
        client = SseClient(url, api_key=api_key, timeout_s=timeout_s, max_connections=1)
        self._all.append(client)
        self._keys[id(client)] = key
        return client

    def prefill(self, url: str, api_key: str | None, timeout_s: float, count: int) -> None:
        key = (url, api_key, timeout_s)
        free = self._free.setdefault(key, [])
        while len(free) < count:
            free.append(self._new(key))

    def acquire(self, url: str, api_key: str | None, timeout_s: float) -> SseClient:
        key = (url, api_key, timeout_s)
        free = self._free.setdefault(key, [])
        return free.pop() if free else self._new(key)

    def release(self, client: SseClient) -> None:
        key = self._keys.get(id(client))
        if key is not None:  # else the pool was closed meanwhile (Ctrl-C): the client with it
            self._free.setdefault(key, []).append(client)

    @property
    def size(self) -> int:
        return len(self._all)

    async def aclose(self) -> None:
        for client in self._all:
            await client.close()
        self._all.clear()
        self._free.clear()
        self._keys.clear()


class Session:
    """One rollout's connection: a WebSocket, or an HTTP client with keep-alive."""

    def __init__(
        self, endpoint: Endpoint, options: ReplayOptions, pool: HttpClientPool | None = None
    ) -> None:
        self.endpoint = endpoint
        self.options = options
        self.pool = pool
        self.ws: WsClient | None = None
        self.sse: SseClient | None = None
        self.timed_out = False  # the last exchange ran out of time (a liveness probe decides)
        self.broken = False  # ... or its connection failed (refused, reset, closed)

    async def open(self) -> None:
        url = self.endpoint.for_mode(self.options.mode)
        if self.options.mode == "ws":
            async with _opening_gate():  # the connect timeout starts once it is this one's turn
                self.ws = await WsClient.connect(
                    url,
                    api_key=self.endpoint.api_key,
                    beta_header=self.endpoint.beta_header,
                    timeout_s=self.options.connect_timeout_s,
                )
        elif self.pool is not None:
            self.sse = self.pool.acquire(url, self.endpoint.api_key, self.options.read_timeout_s)
        else:
            self.sse = SseClient(
                url,
                api_key=self.endpoint.api_key,
                timeout_s=self.options.read_timeout_s,
                max_connections=1,
            )

    async def exchange(self, body: Mapping[str, Any]) -> tuple[Exchange, int, int]:
        """(exchange, bytes sent, bytes received) for one create."""
        timeout = self.options.turn_timeout_s
        if self.ws is not None:
            ex = await ws_exchange(
                self.ws, body, timeout_s=timeout, event_timeout_s=self.options.event_timeout_s
            )
            self.timed_out = isinstance(ex.transport_error, TargetTimeout)
            self.broken = ex.transport_error is not None
            if self.timed_out:
                await self.cancel()
            return ex, ex.bytes_sent, ex.bytes_received
        assert self.sse is not None
        sent0, received0 = self.sse.bytes_sent, self.sse.bytes_received
        try:
            async with asyncio.timeout(timeout):
                ex = await sse_exchange(self.sse, body, timeout_s=timeout)
        except TimeoutError:
            ex = Exchange(dict(body), time.perf_counter_ns())
            ex.transport_error = TargetTimeout(f"no terminal event within {timeout} s")
        self.timed_out = isinstance(ex.transport_error, TargetTimeout)
        self.broken = ex.transport_error is not None
        return ex, self.sse.bytes_sent - sent0, self.sse.bytes_received - received0

    async def inject_exchange(
        self, body: dict[str, Any], turn: Turn
    ) -> tuple[InjectedExchange, int, int]:
        """A multi-agent turn: its calls answered in flight (ws only)."""
        assert self.ws is not None
        sent0, received0 = self.ws.bytes_sent, self.ws.bytes_received
        done = await multi_agent_exchange(
            self.ws,
            body,
            turn,
            scripted=self.options.send_script,
            time_scale=self.options.time_scale,
            timeout_s=self.options.turn_timeout_s,
        )
        self.timed_out = isinstance(done.exchange.transport_error, TargetTimeout)
        sent, received = self.ws.bytes_sent - sent0, self.ws.bytes_received - received0
        if self.timed_out:
            await self.cancel()
        return done, sent, received

    async def cancel(self) -> None:
        """Abandon the response in flight: over ws close the socket now (the API cancels a
        response whose connection goes); an HTTP stream given up has already had its connection
        dropped by the client (never pooled half-read). The rollout ends after this turn."""
        if self.ws is not None:
            await self.ws.close()

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self.sse is not None:
            if self.pool is not None:
                self.pool.release(self.sse)
            else:
                await self.sse.close()
