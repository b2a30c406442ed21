"""harness/load: the replay client's work for every event of a measured turn."""

from __future__ import annotations

import asyncio
from typing import Any

from websockets.asyncio.server import ServerConnection, serve
from websockets.frames import OP_TEXT, Frame

from bench.micro.inputs import TEXT_STREAM, frames, read_stream, run_now
from harness.load.core.exchange_outcome import fill_metrics
from harness.load.core.measurements import TurnResult
from harness.protocol.stream import StreamAccumulator
from harness.transport.exchange import Exchange, read_until_done
from harness.transport.ws import WsClient

READ_BYTES = 64 * 1024
ROUNDS = 200


async def _hello_then_wait(connection: ServerConnection) -> None:
    await connection.send("{}")  # one frame, so the client's connection takes its fast path
    await connection.wait_closed()


def test_replay_turn_events(benchmark: Any) -> None:
    """One real 401-event response as the `ws` replay mode takes it off a real loopback
    WebSocket: frames cut out of 64 KiB reads (`StampedClientConnection.data_received`), each
    decoded and routed through the connection's `StreamAccumulator` (`read_until_done`, the
    loop every measured turn runs), then the turn's metrics (`fill_metrics`). The time is per
    turn; the socket itself is not in it (the bytes are handed over as the event loop would)."""
    events = read_stream(TEXT_STREAM)
    wire_bytes = b"".join(Frame(OP_TEXT, f.encode()).serialize(mask=False) for f in frames(events))
    reads = [wire_bytes[i : i + READ_BYTES] for i in range(0, len(wire_bytes), READ_BYTES)]
    benchmark.extra_info["events_per_call"] = len(events)

    async def measure() -> TurnResult:
        async with serve(_hello_then_wait, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]
            client = await WsClient.connect(f"ws://127.0.0.1:{port}/")
            try:
                await client.recv(10.0)
                assert client.connection.fast, "the client did not take its fast path"
                return _measure_turns(benchmark, client, reads)
            finally:
                await client.connection.close()

    result = asyncio.run(measure())
    assert result.ok and result.output_tokens > 0 and len(result.itl_gaps_ms) > 300


def _measure_turns(benchmark: Any, client: WsClient, reads: list[bytes]) -> TurnResult:
    connection = client.connection

    def turn() -> TurnResult:
        exchange = Exchange({}, 0)
        for data in reads:
            connection.data_received(data)
        run_now(read_until_done(client, exchange, StreamAccumulator(), timeout_s=60.0))
        result = TurnResult("bench", "ws", 0, ok=exchange.ok)
        fill_metrics(result, exchange, 0)
        return result

    result: TurnResult = benchmark.pedantic(turn, rounds=ROUNDS, warmup_rounds=5)
    return result
