"""The reference server's listener: a burst of opens larger than asyncio's default accept queue
(100) waits in the kernel's queue while the server is busy, instead of being dropped."""

from __future__ import annotations

import errno
import select
import socket
import threading
import time

from harness.transport.sockets import LISTEN_BACKLOG
from reference_server.app import running_in_thread
from reference_server.config import ServerConfig

BURST = 400  # four times asyncio's default backlog, a tenth of ours


def test_a_burst_of_opens_waits_in_the_accept_queue_while_the_loop_is_busy(
    tmp_path: object,
) -> None:
    config = ServerConfig(port=0, profile="zero", data_dir=tmp_path)  # type: ignore[arg-type]
    with running_in_thread(config) as server:
        assert server.loop is not None
        busy = threading.Event()
        server.loop.call_soon_threadsafe(lambda: (busy.set(), time.sleep(3.0)))  # accepts nothing
        assert busy.wait(5)
        pending: list[socket.socket] = []
        try:
            for _ in range(BURST):
                sock = socket.socket()
                sock.setblocking(False)
                code = sock.connect_ex(("127.0.0.1", server.port))
                assert code in (0, errno.EINPROGRESS)
                pending.append(sock)
            # all complete in the kernel's queue; with a full queue the dropped SYNs and their
            # retry after 1 s are dropped again until the loop accepts, 3 s after it was stopped
            deadline = time.monotonic() + 2.5
            done: set[socket.socket] = set()
            while len(done) < BURST and time.monotonic() < deadline:
                _, writable, _ = select.select([], [s for s in pending if s not in done], [], 0.1)
                done.update(
                    s for s in writable if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0
                )
            assert len(done) == BURST, (
                f"{BURST - len(done)} of {BURST} opens dropped (backlog {LISTEN_BACKLOG})"
            )
        finally:
            for sock in pending:
                sock.close()
