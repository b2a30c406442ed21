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
