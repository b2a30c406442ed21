"""The WebSocket client: frames cut and stamped at the socket, bounded waits, bad servers."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection
from websockets.asyncio.server import serve as ws_serve

from harness.protocol.stream import StreamAccumulator
from harness.transport import sockets, ws
from harness.transport.exchange import read_until_done, ws_exchange
from harness.transport.failures import FrameTooLarge, GarbageFrame, TargetClosed, TargetTimeout
from harness.transport.ws import WsClient
from tests.protocol.conftest import full_stream
from tests.transport.servers import (
    client_frames,
    frame,
    masked_frame,
    opened_connection,
    read_frame,
    response_frames,
    run,
    serve,
    text,
    until_closed,
    ws_accept,
    ws_server,
)

BODY = {"model": "m", "input": "hi"}


# -- cutting frames out of chunks (no socket) -----------------------------------------------------
def mixed_stream() -> tuple[bytes, list[bytes]]:
    """Frames of every length encoding, a ping, a fragmented message; and the messages in it."""
    messages = [b'{"n":1}', b'{"n":"' + b"x" * 300 + b'"}', b'{"n":"' + b"y" * 70_000 + b'"}']
    stream = frame(messages[0]) + frame(b"ping!", 0x9) + frame(messages[1])
    stream += frame(b'{"frag', 0x1, fin=False) + frame(b'mented":', 0x0, fin=False)
    stream += frame(b"true}", 0x0) + frame(messages[2]) + frame(b'{"last":1}')
    return stream, [*messages[:2], b'{"fragmented":true}', messages[2], b'{"last":1}']


def queued(connection: ws.StampedClientConnection) -> list[bytes]:
    return [bytes(data) for data in connection.inbox]


def test_frames_split_at_every_point_come_out_whole() -> None:
    async def main() -> None:
        stream, expected = mixed_stream()
        # every split point of the small frames, and a spread of points inside the large one
        points = [*range(0, 400), *range(400, len(stream), 997), len(stream) - 1]
        for split in points:
            connection, transport = opened_connection()
            connection.data_received(stream[:split])
            connection.data_received(stream[split:])
            assert queued(connection) == expected, split
            assert (0xA, b"ping!") in client_frames(transport)  # the ping was answered
            assert connection.fast, split

    run(main())


def test_frames_split_in_three_anywhere_in_the_small_frames() -> None:
    async def main() -> None:
        stream, expected = mixed_stream()
        small = stream.split(frame(expected[3]))[0]
        for first in range(0, len(small), 3):
            for second in range(first, len(small), 7):
                connection, _ = opened_connection()
                for chunk in (small[:first], small[first:second], small[second:]):
                    connection.data_received(chunk)
                assert queued(connection) == expected[:3]

    run(main())


def test_a_message_is_stamped_with_the_chunk_that_completed_it() -> None:
    async def main() -> None:
        connection, _ = opened_connection()
        first, second = text({"a": 1}), text({"b": 2})
        connection.data_received(first + second[:3])
        between = time.perf_counter_ns()
        connection.data_received(second[3:])
        stamp_a, stamp_b = connection.arrivals
        assert stamp_a <= between <= stamp_b

    run(main())


def test_handshake_and_frames_in_one_chunk() -> None:
    async def main() -> None:
        from websockets.client import ClientProtocol
        from websockets.uri import parse_uri

        from tests.transport.servers import FakeTransport, handshake_response

        protocol = ClientProtocol(parse_uri("ws://example.invalid/"))
        connection = ws.StampedClientConnection(protocol, ping_interval=None)
        connection.connection_made(FakeTransport())
        request = protocol.connect()
        protocol.send_request(request)
        key = request.headers["Sec-WebSocket-Key"].encode()
        stream, expected = mixed_stream()
        connection.data_received(handshake_response(key) + stream[:500])
        connection.data_received(stream[500:])
        assert queued(connection) == expected

    run(main())


@pytest.mark.parametrize(
    ("bad", "code"),
    [
        (masked_frame(b'{"a":1}'), 1002),  # servers must not mask
        (frame(b'{"a":1}', rsv=0x40), 1002),  # reserved bit, no extension
        (frame(b"x" * 2000), 1009),  # over max_size
        (frame(b"", 0x0), 1002),  # continuation without a start
    ],
)
def test_a_frame_websockets_must_refuse_is_refused(bad: bytes, code: int) -> None:
    async def main() -> None:
        connection, transport = opened_connection(max_size=1000)
        connection.data_received(text({"ok": 1}) + bad + text({"after": 1}))
        assert queued(connection) == [b'{"ok":1}']
        closes = [payload for opcode, payload in client_frames(transport) if opcode == 0x8]
        assert closes and int.from_bytes(closes[0][:2], "big") == code
        assert not connection.fast

    run(main())


def test_a_close_frame_goes_to_websockets() -> None:
    async def main() -> None:
        connection, transport = opened_connection()
        close = frame((1001).to_bytes(2, "big") + b"bye", 0x8)
        connection.data_received(text({"a": 1}) + close + text({"ignored": 1}))
        assert queued(connection) == [b'{"a":1}']
        assert connection.protocol.close_rcvd is not None
        assert connection.protocol.close_rcvd.code == 1001
        assert any(opcode == 0x8 for opcode, _ in client_frames(transport))

    run(main())


def test_reading_pauses_above_the_high_water_mark_and_resumes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ws, "HIGH_WATER_BYTES", 100)
    monkeypatch.setattr(ws, "LOW_WATER_BYTES", 40)

    async def main() -> None:
        connection, transport = opened_connection()
        connection.data_received(b"".join(text({"i": i}) for i in range(30)))
        assert transport.paused
        client = WsClient(connection)
        seen = []
        while (timed := client.recv_nowait()) is not None:
            seen.append(timed.event["i"])
            if connection.inbox_bytes <= 40:
                assert not transport.paused
        assert seen == list(range(30))

    run(main())


# -- against servers on 127.0.0.1 -----------------------------------------------------------------
def test_a_response_arrives_whole_and_stamped_in_order() -> None:
    async def on_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = response_frames()
        for start in range(0, len(data), 97):  # torn frames across many writes
            writer.write(data[start : start + 97])
            await writer.drain()
            await asyncio.sleep(0)
        await until_closed(reader, writer)

    async def main() -> None:
        async with ws_server(on_request) as port:
            client = await WsClient.connect(f"ws://127.0.0.1:{port}/")
            before = time.perf_counter_ns()
            exchange = await ws_exchange(client, BODY, timeout_s=5)
            after = time.perf_counter_ns()
            await client.close()
        assert exchange.ok, exchange.transport_error
        assert [t.event for t in exchange.events] == full_stream()
        assert exchange.response is not None
        # the canned stream is dated 2023: a live reader says so (SHOULD), and nothing else
        assert [v.rule_id for v in exchange.response.violations] == ["time.wall_clock"]
        stamps = [t.received_ns for t in exchange.events]
        assert stamps == sorted(stamps)
        assert before <= exchange.sent_ns <= stamps[0] <= stamps[-1] <= after
        payloads = sum(len(json.dumps(e, separators=(",", ":"))) for e in full_stream())
        assert exchange.bytes_received == client.bytes_received == payloads

    run(main())


def test_stamps_are_taken_at_the_socket_not_when_the_reader_gets_there() -> None:
    async def on_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(text({"type": "x"}))
        await writer.drain()
        await until_closed(reader, writer)

    async def main() -> None:
        async with ws_server(on_request) as port:
            client = await WsClient.connect(f"ws://127.0.0.1:{port}/")
            before_send = time.perf_counter_ns()
            await client.send_json({"type": "response.create"})
            after_send = time.perf_counter_ns()
            await asyncio.sleep(0.2)  # the event arrives while nobody reads
            before_recv = time.perf_counter_ns()
            timed = await client.recv(5)
            await client.close()
        assert before_send <= client.last_sent_ns <= after_send
        assert client.last_sent_ns < timed.received_ns < before_recv
        if sockets.SO_TIMESTAMPNS is not None:
            assert client.connection.sock is not None  # kernel stamps on this platform

    run(main())


def test_a_stalling_server_ends_in_target_timeout() -> None:
    async def on_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await until_closed(reader, writer)

    async def main() -> None:
        async with ws_server(on_request) as port:
            client = await WsClient.connect(f"ws://127.0.0.1:{port}/")
            exchange = await ws_exchange(client, BODY, timeout_s=0.2)
            with pytest.raises(TargetTimeout):
                await client.recv(0.05)
            await client.close()
        assert isinstance(exchange.transport_error, TargetTimeout)

    run(main())


def test_one_deadline_bounds_a_whole_exchange_however_often_events_come() -> None:
    async def on_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        events = full_stream()
        for event in events[:3]:
            writer.write(text(event))
        closed = asyncio.create_task(until_closed(reader, writer))
        while not closed.done():  # then a heartbeat of deltas that never ends the response
            await asyncio.sleep(0.02)
            writer.write(text(events[3] | {"sequence_number": 99}))

    async def main() -> None:
        async with ws_server(on_request) as port:
            client = await WsClient.connect(f"ws://127.0.0.1:{port}/")
            exchange = await ws_exchange(client, BODY, timeout_s=0.3)
            await client.close()
        assert isinstance(exchange.transport_error, TargetTimeout)
        assert len(exchange.events) > 3

    run(main())


def test_a_silent_handshake_ends_in_target_timeout() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await until_closed(reader, writer)

    async def main() -> None:
        async with serve(handler) as port:
            with pytest.raises(TargetTimeout):
                await WsClient.connect(f"ws://127.0.0.1:{port}/", timeout_s=0.2)

    run(main())


def test_a_server_that_closes_ends_in_target_closed_with_its_code() -> None:
    async def on_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(text(full_stream()[0]))
        writer.write(frame((1011).to_bytes(2, "big") + b"overloaded", 0x8))
        await writer.drain()
        await read_frame(reader)  # the client's close answer
        writer.close()

    async def main() -> None:
        async with ws_server(on_request) as port:
            client = await WsClient.connect(f"ws://127.0.0.1:{port}/")
            exchange = await ws_exchange(client, BODY, timeout_s=5)
            await client.close()
        error = exchange.transport_error
        assert isinstance(error, TargetClosed)
        assert (error.code, error.reason) == (1011, "overloaded")
        assert len(exchange.events) == 1

    run(main())


def test_a_dropped_tcp_connection_ends_in_target_closed() -> None:
    async def on_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(text(full_stream()[0]) + frame(b'{"torn":')[:5])
        await writer.drain()
        writer.transport.abort()

    async def main() -> None:
        async with ws_server(on_request) as port:
            client = await WsClient.connect(f"ws://127.0.0.1:{port}/")
            exchange = await ws_exchange(client, BODY, timeout_s=5)
            with pytest.raises(TargetClosed):
                await client.recv(1)
            await client.close()
        assert isinstance(exchange.transport_error, TargetClosed)
        assert exchange.transport_error.code is None

    run(main())


@pytest.mark.parametrize(
    "garbage",
    [
        frame(b"data: {}"),  # not JSON
        frame(b"[1, 2]"),  # not an object
        frame(b'{"type": "x"}', 0x2),  # binary
        frame(b'{"type": "\xff"}'),  # not UTF-8
        frame(b"[" * 100_000 + b"]" * 100_000),  # deeper than any parser's recursion
        frame(b'{"a":' * 10_000 + b"1" + b"}" * 10_000),
    ],
)
def test_garbage_ends_in_garbage_frame(garbage: bytes) -> None:
    closes: list[tuple[int, bytes]] = []

    async def on_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(garbage)
        await writer.drain()
        closes.append(await read_frame(reader))

    async def main() -> None:
        async with ws_server(on_request) as port:
            client = await WsClient.connect(f"ws://127.0.0.1:{port}/")
            exchange = await ws_exchange(client, BODY, timeout_s=5)
            await client.close()
        assert isinstance(exchange.transport_error, GarbageFrame)

    run(main())
    if b"\xff" in garbage:  # invalid UTF-8 fails the connection, as RFC 6455 says
        assert closes[0][0] == 0x8 and int.from_bytes(closes[0][1][:2], "big") == 1007


def test_read_until_done_reads_a_stream_of_requests_back_to_back() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await ws_accept(reader, writer)
        while True:
            opcode, payload = await read_frame(reader)
            if opcode == 0x8:
                writer.write(frame(payload, 0x8))
                return
            writer.write(response_frames())
            await writer.drain()

    async def main() -> None:
        async with serve(handler) as port:
            client = await WsClient.connect(f"ws://127.0.0.1:{port}/")
            stream = StreamAccumulator()
            for _ in range(3):
                exchange = await ws_exchange(client, BODY, timeout_s=5, stream=stream)
                assert exchange.ok
            await client.send_json({"type": "response.create"})
            again = await ws_exchange(client, BODY, timeout_s=5, stream=stream)
            await read_until_done(client, again, stream, timeout_s=5)
            await client.close()
        assert len(stream.finished) == 5
        # only the canned stream's 2023 created_at, once per exchange that judged it
        assert {v.rule_id for v in stream.all_violations()} == {"time.wall_clock"}

    run(main())


def test_ping_wait_closed_and_close_against_a_websockets_server() -> None:
    async def handler(connection: ServerConnection) -> None:
        async for message in connection:
            await connection.send(message)
            await connection.close(4000, "done")

    async def main() -> None:
        async with ws_serve(handler, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]
            client = await WsClient.connect(f"ws://127.0.0.1:{port}/")
            assert await client.ping(5) > 0
            await client.send_json({"echo": 1})
            code, reason = await client.wait_closed(5)
            assert (code, reason) == (4000, "done")
            assert not client.is_open
            await client.close()

    run(main())


def test_wait_closed_times_out_on_a_server_that_keeps_the_socket() -> None:
    async def on_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(text({"a": 1}))
        await until_closed(reader, writer)

    async def main() -> None:
        async with ws_server(on_request) as port:
            client = await WsClient.connect(f"ws://127.0.0.1:{port}/")
            await client.send_json({"type": "response.create"})
            with pytest.raises(TargetTimeout):
                await client.wait_closed(0.2)
            await client.close()

    run(main())


def test_close_gets_through_while_reading_is_paused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ws, "HIGH_WATER_BYTES", 1000)
    monkeypatch.setattr(ws, "LOW_WATER_BYTES", 100)

    async def on_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"".join(text({"i": i}) for i in range(2000)))
        await writer.drain()
        while True:
            opcode, payload = await read_frame(reader)
            if opcode == 0x8:
                writer.write(frame(payload, 0x8))
                await writer.drain()
                return

    async def main() -> None:
        async with ws_server(on_request) as port:
            client = await WsClient.connect(f"ws://127.0.0.1:{port}/")
            await client.send_json({"type": "response.create"})
            await asyncio.sleep(0.1)
            assert client.connection.reading_paused
            await client.close()
        # the server's close frame, queued behind 2000 unread messages, was read: the closing
        # handshake finished instead of timing out into an abort
        assert client.connection.protocol.close_rcvd is not None

    run(main())


def test_sent_frames_are_observed_with_their_send_stamp() -> None:
    seen: list[tuple[str, Any, int]] = []

    class Recording(WsClient):
        def observe(self, direction: str, data: str | bytes, at_ns: int) -> None:
            seen.append((direction, data, at_ns))

    async def on_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(text({"b": 1}) + frame(b"\x00", 0x2))
        await until_closed(reader, writer)

    async def main() -> None:
        async with ws_server(on_request) as port:
            client = await Recording.connect(f"ws://127.0.0.1:{port}/")
            await client.send_text('{"a":1}')
            first = await client.recv(5)
            with pytest.raises(GarbageFrame):
                await client.recv(5)
            await client.close()
        assert seen == [
            ("send", '{"a":1}', client.last_sent_ns),
            ("recv", '{"b":1}', first.received_ns),
            ("recv", b"\x00", seen[2][2]),
        ]

    run(main())


@pytest.mark.parametrize("frame_bytes", [5000, 70_000])  # the fast path's 16- and 64-bit lengths
def test_an_oversized_frame_is_reported_with_its_size(frame_bytes: int) -> None:
    async def oversized(connection: ServerConnection) -> None:
        async for _ in connection:
            await connection.send("x" * frame_bytes)

    async def main() -> None:
        async with ws_serve(oversized, "127.0.0.1", 0, max_size=None) as server:
            port = server.sockets[0].getsockname()[1]
            client = await WsClient.connect(f"ws://127.0.0.1:{port}/", max_size=1024)
            exchange = await ws_exchange(client, {"model": "m", "input": "hi"}, timeout_s=10)
            error = exchange.transport_error
            assert isinstance(error, FrameTooLarge)
            assert (error.size_bytes, error.limit_bytes, error.code) == (frame_bytes, 1024, 1009)
            assert f"{frame_bytes} bytes" in str(error)
            await client.close()

    asyncio.run(main())
