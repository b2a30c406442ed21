"""The HTTP/SSE client: keep-alive, bounded waits, error bodies, stamps."""

from __future__ import annotations

import asyncio
import gzip
import json
import shutil
import ssl
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from harness.errors import TransportError
from harness.transport import sockets
from harness.transport.exchange import sse_exchange
from harness.transport.failures import GarbageFrame, HttpStatusError, TargetClosed, TargetTimeout
from harness.transport.sse import SseClient
from tests.protocol.conftest import full_stream
from tests.transport.servers import (
    chunked,
    json_response,
    read_request,
    run,
    serve,
    sse_block,
    sse_response,
)

BODY = {"model": "m", "input": "hi"}


# -- against servers on 127.0.0.1 -----------------------------------------------------------------
class HttpServer:
    """Answers each request from a script of handlers; counts connections and requests."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.connections = 0
        self.requests: list[tuple[bytes, bytes]] = []

    async def handler(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        while self.answers:
            try:
                request = await read_request(reader)
            except asyncio.IncompleteReadError:
                return
            self.requests.append(request)
            answer = self.answers.pop(0)
            if callable(answer):
                if await answer(reader, writer) == "close":
                    return
            else:
                writer.write(answer)
                await writer.drain()


def url(port: int) -> str:
    return f"http://127.0.0.1:{port}/v1"


def test_a_stream_arrives_whole_stamped_and_on_one_connection() -> None:
    async def torn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = sse_response()
        for start in range(0, len(data), 7):
            writer.write(data[start : start + 7])
            await writer.drain()
            await asyncio.sleep(0)

    server = HttpServer(torn, sse_response(), sse_response())

    async def main() -> None:
        async with serve(server.handler) as port, SseClient(url(port), api_key="k") as client:
            exchanges = []
            for _ in range(3):
                before = time.perf_counter_ns()
                exchanges.append(await sse_exchange(client, BODY, timeout_s=5))
                after = time.perf_counter_ns()
                stamps = [t.received_ns for t in exchanges[-1].events]
                assert before <= exchanges[-1].sent_ns <= stamps[0]
                assert stamps == sorted(stamps) and stamps[-1] <= after
            assert client.connections_opened == 1
        for exchange in exchanges:
            assert exchange.ok, exchange.transport_error
            assert [t.event for t in exchange.events] == full_stream()
            assert exchange.response is not None and exchange.response.violations == []
        assert server.connections == 1
        head, body = server.requests[0]
        assert head.startswith(b"POST /v1/responses HTTP/1.1\r\n")
        assert b"authorization: Bearer k" in head.lower().replace(b"bearer", b"Bearer")
        assert json.loads(body) == {**BODY, "stream": True}

    run(main())


def test_the_stamp_is_the_arrival_not_the_time_the_reader_got_there() -> None:
    server = HttpServer(sse_response())

    async def main() -> None:
        async with serve(server.handler) as port, SseClient(url(port)) as client:
            sent: list[int] = []
            events = client.stream(BODY, on_sent=sent.append)
            first = await events.__anext__()
            await asyncio.sleep(0.2)  # the rest of the body waits unread
            before_next = time.perf_counter_ns()
            second = await events.__anext__()
            await events.aclose()
        assert sent[0] <= first.received_ns <= second.received_ns < before_next

    run(main())


def test_keep_alive_is_reused_for_json_requests_too() -> None:
    response = {"id": "resp_1", "object": "response", "output": []}
    server = HttpServer(json_response(200, response), json_response(200, response), sse_response())

    async def main() -> None:
        async with serve(server.handler) as port, SseClient(url(port)) as client:
            assert await client.create(BODY) == response
            assert await client.retrieve("resp_1") == response
            assert (await sse_exchange(client, BODY, timeout_s=5)).ok
            assert client.connections_opened == 1
            assert client.bytes_sent == len(server.requests[0][1]) + len(server.requests[2][1])
        assert server.connections == 1
        assert server.requests[1][0].startswith(b"GET /v1/responses/resp_1 HTTP/1.1")

    run(main())


def test_a_connection_the_server_dropped_while_idle_is_replaced() -> None:
    async def answer_then_drop(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> str:
        writer.write(sse_response())
        await writer.drain()
        return "close"  # no `connection: close` header: the client finds out by itself

    server = HttpServer(answer_then_drop, answer_then_drop, sse_response())

    async def main() -> None:
        async with serve(server.handler) as port, SseClient(url(port)) as client:
            assert (await sse_exchange(client, BODY, timeout_s=5)).ok
            await asyncio.sleep(0.05)  # the FIN has arrived: the idle connection is dead
            assert (await sse_exchange(client, BODY, timeout_s=5)).ok
            assert (await sse_exchange(client, BODY, timeout_s=5)).ok  # no wait: a race
            assert client.connections_opened == 3

    run(main())


def test_a_server_that_says_connection_close_is_not_reused() -> None:
    closing = json_response(200, {"id": "r"}, extra=b"connection: close\r\n")
    server = HttpServer(closing, json_response(200, {"id": "r"}))

    async def main() -> None:
        async with serve(server.handler) as port, SseClient(url(port)) as client:
            await client.create(BODY)
            await client.create(BODY)
            assert client.connections_opened == 2

    run(main())


def test_http_errors_carry_status_body_and_headers_and_keep_the_connection() -> None:
    error = {
        "error": {"type": "invalid_request_error", "code": "bad", "message": "no", "param": None}
    }
    server = HttpServer(
        json_response(400, error, extra=b"x-request-id: abc\r\n"),
        json_response(404, error),
        sse_response(),
    )

    async def main() -> None:
        async with serve(server.handler) as port, SseClient(url(port)) as client:
            exchange = await sse_exchange(client, BODY, timeout_s=5)
            assert exchange.request_error is not None
            assert (exchange.request_error.status, exchange.request_error.code) == (400, "bad")
            with pytest.raises(HttpStatusError) as raised:
                await client.retrieve("resp_x")
            assert raised.value.status == 404
            assert json.loads(raised.value.body) == error
            assert raised.value.headers["content-type"] == "application/json"
            assert (await sse_exchange(client, BODY, timeout_s=5)).ok
            assert client.connections_opened == 1

    run(main())


def test_a_stalling_server_ends_in_target_timeout() -> None:
    async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(10)

    async def stall_mid_body(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(sse_response()[:300])
        await asyncio.sleep(10)

    async def main() -> None:
        for answer in (stall, stall_mid_body):
            server = HttpServer(answer, answer)
            async with serve(server.handler) as port:
                client = SseClient(url(port), timeout_s=0.2)
                exchange = await sse_exchange(client, BODY, timeout_s=5)
                assert isinstance(exchange.transport_error, TargetTimeout)
                with pytest.raises(TargetTimeout):
                    await client.create(BODY)  # the server is stuck on the first connection
                await client.close()

    run(main())


def test_no_free_connection_within_the_timeout_is_a_target_timeout() -> None:
    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        response = sse_response()
        writer.write(response[:200])
        for start in range(200, len(response), 400):  # slow, but never silent for long
            await asyncio.sleep(0.05)
            writer.write(response[start : start + 400])

    server = HttpServer(trickle)

    async def main() -> None:
        async with serve(server.handler) as port:
            client = SseClient(url(port), timeout_s=0.3, max_connections=1)
            first = asyncio.create_task(sse_exchange(client, BODY, timeout_s=30))
            await asyncio.sleep(0.05)
            with pytest.raises(TargetTimeout, match="no free connection"):
                await client.create(BODY)
            assert (await first).ok
            await client.close()

    run(main())


def test_a_connection_limit_queues_requests_until_one_is_free() -> None:
    server = HttpServer(*(sse_response() for _ in range(4)))

    async def main() -> None:
        async with serve(server.handler) as port, SseClient(url(port), max_connections=1) as c:
            results = await asyncio.gather(*(sse_exchange(c, BODY, timeout_s=5) for _ in range(4)))
            assert all(r.ok for r in results)
            assert c.connections_opened == 1

    run(main())


def test_a_silent_port_ends_in_target_timeout_at_connect() -> None:
    async def main() -> None:
        async with serve(lambda r, w: asyncio.sleep(10)) as port:
            client = SseClient(f"https://127.0.0.1:{port}/v1", timeout_s=0.2)
            with pytest.raises(TargetTimeout):
                await client.create(BODY)  # the TLS handshake never completes
            await client.close()

    run(main())


def test_a_server_that_closes_ends_in_target_closed() -> None:
    async def close_mid_body(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> str:
        writer.write(sse_response()[:300])
        await writer.drain()
        return "close"

    async def close_at_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> str:
        return "close"

    async def main() -> None:
        for answer in (close_mid_body, close_at_once):
            async with serve(HttpServer(answer).handler) as port, SseClient(url(port)) as client:
                exchange = await sse_exchange(client, BODY, timeout_s=5)
                assert isinstance(exchange.transport_error, TargetClosed), answer

    run(main())


def test_nothing_listening_is_a_transport_error() -> None:
    async def main() -> None:
        async with serve(HttpServer().handler) as port:
            pass
        async with SseClient(url(port)) as client:
            with pytest.raises(TransportError, match="cannot connect"):
                await client.create(BODY)

    run(main())


@pytest.mark.parametrize(
    "answer",
    [
        sse_response()[:90] + chunked(b"data: {not json}\n\n") + b"0\r\n\r\n",
        sse_response()[:90] + chunked(b"data: [1]\n\n") + b"0\r\n\r\n",
        sse_response()[:90] + chunked(b'data: {"\xff": 1}\n\n') + b"0\r\n\r\n",
        # deeper than any parser's recursion: refused as garbage, never a RecursionError
        sse_response().split(b"\r\n\r\n")[0]
        + b"\r\n\r\n"
        + chunked(b"data: " + b"[" * 100_000 + b"]" * 100_000 + b"\n\n")
        + b"0\r\n\r\n",
    ],
)
def test_garbage_events_end_in_garbage_frame(answer: bytes) -> None:
    async def main() -> None:
        async with serve(HttpServer(answer).handler) as port, SseClient(url(port)) as client:
            exchange = await sse_exchange(client, BODY, timeout_s=5)
            assert isinstance(exchange.transport_error, GarbageFrame)

    run(main())


@pytest.mark.parametrize(
    "answer",
    [b"HTTQ/9 200 OK\r\n\r\n", b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n"],
)
def test_malformed_http_is_a_transport_error(answer: bytes) -> None:
    async def main() -> None:
        async with serve(HttpServer(answer).handler) as port, SseClient(url(port)) as client:
            exchange = await sse_exchange(client, BODY, timeout_s=5)
            assert type(exchange.transport_error) is TransportError

    run(main())


def test_json_bodies_garbage_and_gzip() -> None:
    payload = {"id": "resp_1"}
    packed = gzip.compress(json.dumps(payload).encode())
    gzipped = (
        b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: "
        + str(len(packed)).encode()
        + b"\r\n\r\n"
        + packed
    )
    not_json = b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nabc"
    server = HttpServer(gzipped, not_json, json_response(200, [1]))

    async def main() -> None:
        async with serve(server.handler) as port, SseClient(url(port)) as client:
            assert await client.create(BODY) == payload
            with pytest.raises(GarbageFrame):
                await client.create(BODY)
            with pytest.raises(GarbageFrame):
                await client.create(BODY)

    run(main())


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_https_with_one_shared_tls_context(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
         "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert, key)
    monkeypatch.setattr(sockets, "_ssl_context", ssl.create_default_context(cafile=str(cert)))
    server = HttpServer(sse_response(), sse_response())

    async def main() -> None:
        tls = await asyncio.start_server(server.handler, "127.0.0.1", 0, ssl=server_context)
        port = tls.sockets[0].getsockname()[1]
        async with tls, SseClient(f"https://127.0.0.1:{port}/v1") as client:
            for _ in range(2):
                exchange = await sse_exchange(client, BODY, timeout_s=5)
                assert exchange.ok, exchange.transport_error
                stamps = [t.received_ns for t in exchange.events]
                assert exchange.sent_ns <= stamps[0] and stamps == sorted(stamps)
            assert client.connections_opened == 1

    run(main())
    assert sockets.ssl_context() is sockets._ssl_context


def test_a_gzip_encoded_stream_is_decoded() -> None:
    packed = gzip.compress(b"".join(sse_block(e) for e in full_stream()))
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: gzip\r\n"
        b"transfer-encoding: chunked\r\n\r\n"
    )
    body = b"".join(chunked(packed[i : i + 50]) for i in range(0, len(packed), 50))
    server = HttpServer(head + body + b"0\r\n\r\n", head + chunked(b"not gzip") + b"0\r\n\r\n")

    async def main() -> None:
        async with serve(server.handler) as port, SseClient(url(port)) as client:
            exchange = await sse_exchange(client, BODY, timeout_s=5)
            assert exchange.ok and [t.event for t in exchange.events] == full_stream()
            broken = await sse_exchange(client, BODY, timeout_s=5)
            assert isinstance(broken.transport_error, GarbageFrame)

    run(main())
