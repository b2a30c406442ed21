"""HTTP edges: header size across reads, request deadline, connection cap, malformed, versions."""

from __future__ import annotations

import json
import socket
import time
from typing import Any

import pytest

from reference_server.config import Limits

from .conftest import exchange, status_of

POST_HEAD = b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"


def _error_body(raw: bytes) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(raw.split(b"\r\n\r\n", 1)[1])
    return body["error"]


@pytest.mark.parametrize("header_kib", [20, 100, 250])
def test_an_oversized_head_is_431_in_one_write_or_many(thread_server: Any, header_kib: int) -> None:
    head = POST_HEAD + b"X-Pad: " + b"a" * (header_kib * 1024) + b"\r\nContent-Length: 2\r\n\r\n{}"
    with thread_server() as server:
        in_one = exchange(server.port, head)
        in_pieces = exchange(server.port, *[head[i : i + 4096] for i in range(0, len(head), 4096)])
    for raw in (in_one, in_pieces):
        assert status_of(raw) == 431
        assert _error_body(raw)["code"] == "headers_too_large"


def test_an_unsupported_http_version_is_505(thread_server: Any) -> None:
    with thread_server() as server:
        raw = exchange(server.port, b"GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n")
    assert status_of(raw) == 505


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GARBAGE\r\n\r\n",
        b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n",
        b"GET / HTTP/1.1\r\nBad Header Line\r\n\r\n",
    ],
)
def test_a_malformed_request_is_answered_400(thread_server: Any, request_bytes: bytes) -> None:
    with thread_server() as server:
        raw = exchange(server.port, request_bytes)
    assert status_of(raw) == 400
    assert _error_body(raw)["code"] == "malformed_request"


def test_a_trickling_body_is_cut_at_the_request_deadline(thread_server: Any) -> None:
    limits = Limits(http_request_deadline_s=0.5)
    head = POST_HEAD + b"Content-Length: 1000\r\n\r\n"
    with thread_server(limits=limits) as server:
        # a byte every 0.1 s: no single read times out, only the overall deadline can cut it
        raw = exchange(server.port, head, *[b" "] * 40, pause_s=0.1)
    assert status_of(raw) == 408
    assert _error_body(raw)["code"] == "request_timeout"


def test_over_the_http_connection_cap_the_answer_is_503_before_reading(
    thread_server: Any,
) -> None:
    limits = Limits(max_http_connections=2)
    head = POST_HEAD + b"Content-Length: 1000\r\n\r\n"
    with thread_server(limits=limits) as server:
        held = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(2)]
        try:
            for sock in held:
                sock.sendall(head)  # heads in, bodies never come: both stay open
            time.sleep(0.2)
            raw = exchange(server.port, head)
        finally:
            for sock in held:
                sock.close()
    assert status_of(raw) == 503
    assert b"Retry-After: 1" in raw


def _send_all_then_read(port: int, request: bytes) -> bytes:
    """Send the whole request, then read to the end: a reset on either side fails the test."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        received = b""
        while data := sock.recv(65536):
            received += data
    return received


@pytest.mark.parametrize("times_the_limit", [1, 4, 16, 64])
@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_an_oversized_body_is_413_never_a_reset(
    thread_server: Any, times_the_limit: int, framing: str
) -> None:
    limit = 16 * 1024
    body = b"x" * (limit * times_the_limit + 1)
    if framing == "chunked":
        chunks = b"".join(
            b"%x\r\n%s\r\n" % (len(body[i : i + 8192]), body[i : i + 8192])
            for i in range(0, len(body), 8192)
        )
        request = POST_HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n"
    else:
        request = POST_HEAD + b"Content-Length: %d\r\n\r\n" % len(body) + body
    with thread_server(limits=Limits(max_message_bytes=limit)) as server:
        raw = _send_all_then_read(server.port, request)
    assert status_of(raw) == 413
    assert _error_body(raw)["code"] == "request_too_large"


UPGRADE_HEAD = (
    b"GET /v1/responses HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
)


@pytest.mark.parametrize("line_kib", [9, 12, 15])
def test_an_upgrade_with_a_header_line_over_8_kib_is_431(thread_server: Any, line_kib: int) -> None:
    # under the 16 KiB head limit, over the 8 KiB line limit of the WebSocket parser
    request = UPGRADE_HEAD + b"X-Pad: " + b"a" * (line_kib * 1024) + b"\r\n\r\n"
    with thread_server() as server:
        raw = _send_all_then_read(server.port, request)
    assert status_of(raw) == 431
    assert _error_body(raw)["code"] == "headers_too_large"


@pytest.mark.parametrize(
    "request_bytes",
    [
        UPGRADE_HEAD.replace(b"GET", b"POST") + b"Content-Length: 2\r\n\r\n{}",
        UPGRADE_HEAD.replace(b"HTTP/1.1", b"HTTP/1.0") + b"\r\n",
    ],
    ids=["post-with-upgrade-headers", "http-1.0-upgrade"],
)
def test_an_upgrade_websockets_cannot_parse_is_400(
    thread_server: Any, request_bytes: bytes
) -> None:
    with thread_server() as server:
        raw = _send_all_then_read(server.port, request_bytes)
    assert status_of(raw) == 400
    assert _error_body(raw)["code"] == "invalid_upgrade"


def test_a_good_upgrade_still_opens(thread_server: Any) -> None:
    with thread_server() as server, socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.settimeout(30)
        sock.sendall(UPGRADE_HEAD + b"\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 101 ")
