"""The one-port front door: the head decides, split anywhere; oversized and slow heads refused."""

from __future__ import annotations

import asyncio

import pytest

from harness.transport import frontdoor
from harness.transport.frontdoor import FrontDoor, is_websocket_upgrade

UPGRADE = (
    b"GET /v1/responses HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: WebSocket\r\n"
    b"Sec-WebSocket-Version: 13\r\n\r\n"
)
POST = b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = b""
        self.closed = False
        self.aborted = False
        self.eof_written = False

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        self.eof_written = True

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += bytes(data)

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True


class Acceptor:
    def __init__(self) -> None:
        self.accepted: list[tuple[str, bytes]] = []

    def accept_websocket(self, transport: asyncio.Transport, head: bytes) -> None:
        self.accepted.append(("websocket", head))

    def accept_http(self, transport: asyncio.Transport, head: bytes) -> None:
        self.accepted.append(("http", head))


def door(**options: object) -> tuple[FrontDoor, Acceptor, FakeTransport]:
    acceptor, transport = Acceptor(), FakeTransport()
    front = FrontDoor(acceptor, max_head_bytes=1024, **options)  # type: ignore[arg-type]
    front.connection_made(transport)
    return front, acceptor, transport


@pytest.mark.parametrize(("request_bytes", "kind"), [(UPGRADE, "websocket"), (POST, "http")])
def test_the_head_goes_whole_to_its_side_wherever_it_is_split(
    request_bytes: bytes, kind: str
) -> None:
    head_bytes = request_bytes.index(b"\r\n\r\n") + 4
    for split in range(1, head_bytes):
        front, acceptor, _ = door()
        front.data_received(request_bytes[:split])
        assert acceptor.accepted == []
        front.data_received(request_bytes[split:])  # what came with the head goes along
        assert acceptor.accepted == [(kind, request_bytes)], split


def test_upgrade_is_read_from_the_upgrade_header_only() -> None:
    assert is_websocket_upgrade(b"GET / HTTP/1.1\r\nupgrade:  websocket")
    assert not is_websocket_upgrade(b"GET /websocket HTTP/1.1\r\nHost: websocket")
    assert not is_websocket_upgrade(b"GET / HTTP/1.1\r\nUpgrade: h2c")
    assert not is_websocket_upgrade(b"GET / HTTP/1.1\r\nX-Upgrade-To: websocket")


@pytest.mark.parametrize(
    "head",
    [
        b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 300,
        b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 300 + b"\r\n",
    ],
    ids=["unfinished", "finished-in-one-write"],
)
def test_an_oversized_head_is_answered_431_then_closed_after_a_linger(
    head: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(frontdoor, "LINGER_S", 0.01)

    async def main() -> None:
        front, acceptor, transport = door()
        front.data_received(head)
        assert transport.written.startswith(b"HTTP/1.1 431 ") and transport.eof_written
        assert b'"code":"headers_too_large"' in transport.written and not acceptor.accepted
        front.data_received(b"more of it")  # dropped while lingering
        await asyncio.sleep(0.05)
        assert transport.closed

    asyncio.run(main())


def test_an_http_request_not_admitted_is_answered_503() -> None:
    async def main() -> None:
        front, acceptor, transport = door(admit_http=lambda: False)
        front.data_received(POST)
        assert transport.written.startswith(b"HTTP/1.1 503 ") and not acceptor.accepted
        assert b"Retry-After: 1\r\n" in transport.written

    asyncio.run(main())


def test_an_oversized_head_is_just_closed_when_asked() -> None:
    front, acceptor, transport = door(answer_oversized=False)
    front.data_received(b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 300)
    assert transport.written == b"" and transport.closed and not acceptor.accepted


def test_a_head_that_does_not_come_in_time_is_aborted() -> None:
    async def main() -> None:
        slow, _, slow_transport = door(head_timeout_s=0.01)
        slow.data_received(b"GET / HTTP/1.1\r\n")
        quick, _, quick_transport = door(head_timeout_s=0.01)
        quick.data_received(POST)
        await asyncio.sleep(0.05)
        assert slow_transport.aborted and not quick_transport.aborted

    asyncio.run(main())
