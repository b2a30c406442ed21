"""Minimal servers for the client benchmarks, each run in its own process.

``ws-blast``: a raw-socket WebSocket server. After the handshake it waits for one text frame
(the client's ``response.create``) and answers with one pre-encoded response of N output-text
deltas (valid events from the protocol emitter, sequence numbers and all), written to the socket
as one buffer. Writing a prepared buffer costs the server almost nothing, so the client is what
limits the event rate.

``sse``: a raw asyncio HTTP/1.1 server answering every ``POST /v1/responses`` with one
pre-encoded SSE response of T output-text deltas, after an optional fixed delay before the first
byte (the "server TTFT"). Keep-alive; one request at a time per connection.

    python bench/ratios/minimal_servers.py ws-blast --events 200000
    python bench/ratios/minimal_servers.py sse --tokens 128 --ttft-ms 50 [--announce-early]

Each prints ``port <N>`` on its first line, then serves until killed.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import struct
import time
from typing import Any

from harness.protocol import wire
from harness.protocol.emitter import ResponseEmitter
from harness.protocol.events import response_object
from harness.transport.sse_wire import encode_events

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def response_events(deltas: int, piece: str = "tok ") -> list[dict[str, Any]]:
    """created, in_progress, one message of `deltas` text deltas, completed."""
    emitter = ResponseEmitter(
        response_object("resp_bench", "bench", created_at=int(time.time())),
        obfuscate=False,
    )
    events: list[dict[str, Any]] = [emitter.created(), emitter.in_progress()]
    events += emitter.begin_message("msg_bench")
    events += [emitter.text_delta(piece) for _ in range(deltas)]
    events += emitter.end_message()
    usage = {
        "input_tokens": 1,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": deltas,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": deltas + 1,
    }
    events.append(emitter.completed(usage, completed_at=int(time.time())))
    return events


def ws_frame(payload: bytes) -> bytes:
    """One unmasked server text frame."""
    n = len(payload)
    if n < 126:
        header = struct.pack("!BB", 0x81, n)
    elif n < 65536:
        header = struct.pack("!BBH", 0x81, 126, n)
    else:
        header = struct.pack("!BBQ", 0x81, 127, n)
    return header + payload


async def _read_frame(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """Read one (masked) client frame: (opcode, payload)."""
    b1, b2 = await reader.readexactly(2)
    n = b2 & 0x7F
    if n == 126:
        (n,) = struct.unpack("!H", await reader.readexactly(2))
    elif n == 127:
        (n,) = struct.unpack("!Q", await reader.readexactly(8))
    mask = await reader.readexactly(4) if b2 & 0x80 else b"\0\0\0\0"
    data = await reader.readexactly(n)
    if b2 & 0x80:
        data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
    return b1 & 0x0F, data


async def serve_ws_blast(port: int, events: int) -> None:
    body = b"".join(ws_frame(wire.dumps(e).encode()) for e in response_events(events))

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        key = b""
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"sec-websocket-key:"):
                key = line.split(b":", 1)[1].strip()
        accept = base64.b64encode(hashlib.sha1(key + _GUID).digest())
        writer.write(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n"
        )
        try:
            while True:
                opcode, _ = await _read_frame(reader)
                if opcode == 0x8:  # close
                    writer.write(b"\x88\x00")
                    await writer.drain()
                    return
                writer.write(body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    await _serve(handle, port)


async def serve_sse(
    port: int, tokens: int, ttft_ms: float, *, announce_early: bool = False
) -> None:
    """The SSE mock. `announce_early`: created ... content_part.added go out at once and only the
    deltas wait `ttft_ms` (a server that announces its item before its first token). Either way
    the mock records, per request, request read → first delta written, and reports it at
    `GET /stats` (JSON; `GET /stats?reset` also clears it): what it actually sent, to check a
    client's TTFT against."""
    events = response_events(tokens)
    first_delta = next(i for i, e in enumerate(events) if e["type"].endswith(".delta"))
    split = first_delta if announce_early else 0
    early, late = encode_events(events[:split]), encode_events(events[split:])
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    sent_ttft_ms: list[float] = []

    def chunk(data: bytes) -> bytes:
        return f"{len(data):x}\r\n".encode() + data + b"\r\n"

    def stats(reset: bool) -> bytes:
        ordered = sorted(sent_ttft_ms)
        body = json.dumps(
            {
                "count": len(ordered),
                "ttft_ms_p50": ordered[len(ordered) // 2] if ordered else None,
                "ttft_ms_mean": sum(ordered) / len(ordered) if ordered else None,
            }
        ).encode()
        if reset:
            sent_ttft_ms.clear()
        return (
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            + f"content-length: {len(body)}\r\n\r\n".encode()
            + body
        )

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in request.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                await reader.readexactly(length)
                received = time.perf_counter()
                if request.startswith(b"GET /stats"):
                    writer.write(stats(request.startswith(b"GET /stats?reset")))
                    await writer.drain()
                    continue
                if early:
                    writer.write(head + chunk(early))
                if ttft_ms > 0:
                    await asyncio.sleep(ttft_ms / 1000)
                sent_ttft_ms.append((time.perf_counter() - received) * 1000)
                writer.write(b"" if early else head)
                writer.write(chunk(late) + b"0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    await _serve(handle, port)


async def _serve(handler: Any, port: int) -> None:
    server = await asyncio.start_server(handler, "127.0.0.1", port, limit=16 * 1024 * 1024)
    print(f"port {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="kind", required=True)
    blast = sub.add_parser("ws-blast")
    blast.add_argument("--port", type=int, default=0)
    blast.add_argument("--events", type=int, default=200_000)
    sse = sub.add_parser("sse")
    sse.add_argument("--port", type=int, default=0)
    sse.add_argument("--tokens", type=int, default=128)
    sse.add_argument("--ttft-ms", type=float, default=0.0)
    sse.add_argument(
        "--announce-early", action="store_true", help="the item before the ttft wait, not after"
    )
    args = parser.parse_args()
    if args.kind == "ws-blast":
        asyncio.run(serve_ws_blast(args.port, args.events))
    else:
        asyncio.run(
            serve_sse(args.port, args.tokens, args.ttft_ms, announce_early=args.announce_early)
        )


if __name__ == "__main__":
    main()
