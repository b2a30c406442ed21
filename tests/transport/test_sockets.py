"""Kernel arrival stamps: taken when the bytes arrived, not when they were read."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from harness.transport import sockets
from harness.transport.sockets import StampingSocket, arrival_ns

needs_kernel_stamps = pytest.mark.skipif(
    sockets.SO_TIMESTAMPNS is None, reason="no SO_TIMESTAMPNS on this platform"
)


def connected_pair() -> tuple[StampingSocket, socket.socket]:
    listener = socket.create_server(("127.0.0.1", 0))
    client = StampingSocket(socket.AF_INET, socket.SOCK_STREAM)
    client.enable_stamps()
    client.connect(listener.getsockname())
    server, _ = listener.accept()
    listener.close()
    return client, server


# A kernel stamp is CLOCK_REALTIME, converted to perf_counter with the offset at the read: a
# clock adjustment in between moves it (a full CI run once saw every stamp 0.5 ms early).
CLOCK_SKEW_NS = 5_000_000


@needs_kernel_stamps
@pytest.mark.parametrize("read", ["recv", "recv_into"])
def test_a_read_reports_when_its_bytes_arrived(read: str) -> None:
    client, server = connected_pair()
    try:
        for _ in range(3):
            before_send = time.perf_counter_ns()
            server.sendall(b"hello")
            time.sleep(0.05)  # the bytes wait in the kernel
            before_read = time.perf_counter_ns()
            if read == "recv":
                assert client.recv(100) == b"hello"
            else:
                buffer = bytearray(100)
                assert client.recv_into(buffer, 5) == 5 and buffer[:5] == b"hello"
            if client.rx_ns:  # the first packets after switching stamps on may have none
                # stamped on arrival, not at the read 50 ms later
                assert before_send - CLOCK_SKEW_NS <= client.rx_ns < before_read - 25_000_000
    finally:
        client.close()
        server.close()
    assert client.rx_ns, "no kernel stamp on any read"


def test_without_a_kernel_stamp_the_arrival_is_now_and_never_goes_back() -> None:
    before = time.perf_counter_ns()
    stamp = arrival_ns(None, 0)
    assert before <= stamp <= time.perf_counter_ns()
    assert arrival_ns(None, stamp + 10**9) == stamp + 10**9  # monotonic, whatever the clock says


def test_a_stamp_from_the_future_is_not_believed() -> None:
    client, server = connected_pair()
    try:
        client.rx_ns = time.perf_counter_ns() + 10**9
        assert arrival_ns(client, 0) <= time.perf_counter_ns()
    finally:
        client.close()
        server.close()


def test_without_the_socket_option_reads_are_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sockets, "_ANCILLARY_BYTES", 0)
    client, server = connected_pair()
    try:
        server.sendall(b"hi")
        assert client.recv(10) == b"hi" and client.rx_ns == 0
    finally:
        client.close()
        server.close()


@needs_kernel_stamps
def test_a_listeners_connections_are_stamped_when_the_bytes_arrived_not_when_read() -> None:
    async def main() -> tuple[object, int, int, int]:
        loop = asyncio.get_running_loop()
        listener = sockets.listen("127.0.0.1", 0)
        got: asyncio.Future[tuple[object, int, int]] = loop.create_future()

        class Reader(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                self.sock = listener.find_accepted(transport)

            def data_received(self, data: bytes) -> None:
                if not got.done():
                    stamp = arrival_ns(self.sock, 0)
                    got.set_result((self.sock, stamp, time.perf_counter_ns()))

        server = await loop.create_server(Reader, sock=listener)
        client = socket.create_connection(listener.getsockname()[:2])
        try:
            await asyncio.sleep(0.05)  # accepted: the protocol has its socket
            sent_ns = time.perf_counter_ns()
            client.sendall(b"hello")
            time.sleep(0.1)  # the event loop is busy: the bytes wait in the kernel
            sock, stamp_ns, read_ns = await asyncio.wait_for(got, 5)
            return sock, sent_ns, stamp_ns, read_ns
        finally:
            client.close()
            server.close()
            await server.wait_closed()

    sock, sent_ns, stamp_ns, read_ns = asyncio.run(main())
    assert isinstance(sock, StampingSocket)
    assert read_ns - sent_ns >= 100_000_000  # read after the loop was free again
    # stamped on arrival, not at the read
    assert sent_ns - CLOCK_SKEW_NS <= stamp_ns < read_ns - 50_000_000


def test_a_listeners_receive_buffer_is_what_its_connections_get() -> None:
    def accepted_buffer(receive_buffer_bytes: int) -> int:
        listener = sockets.listen("127.0.0.1", 0, receive_buffer_bytes=receive_buffer_bytes)
        listener.setblocking(True)
        client = socket.create_connection(listener.getsockname()[:2])
        try:
            server, _ = listener.accept()
            with server:
                assert isinstance(server, StampingSocket)
                return server.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        finally:
            client.close()
            listener.close()

    # the kernel caps the value (net.core.rmem_max) and reports it doubled; either way, larger
    assert accepted_buffer(4 * 1024 * 1024) > accepted_buffer(0)
