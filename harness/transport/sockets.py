"""TCP sockets that report when the kernel received what they read, and the shared TLS context.

A time stamp taken in user space when data reaches the client includes the time the client
process waited to be scheduled (milliseconds on a busy machine, more the longer it slept) and the
time its event loop spent on other callbacks first. The kernel stamps every packet as it
arrives (`SO_TIMESTAMPNS`); `StampingSocket` reads with `recvmsg` to get that stamp for each
read (for TCP: the arrival of the newest packet the read returned) and converts it to the
`time.perf_counter_ns()` scale, so receive stamps no longer depend on when the client got to run.
Where the kernel gives no stamp (another OS, or the first packets after the option was switched
on), `arrival_ns` falls back to the time of the read itself.

asyncio's socket transport reads through the socket object it was given (`recv`, or `recv_into`
under TLS), so a connection opened on a `StampingSocket` gets the stamps without any change to
the transport; the protocol asks `arrival_ns(sock)` in its `data_received`. Servers get the same
through `listen()`: its `StampingListener` hands asyncio's accept loop `StampingSocket`s, so a
server's clock for a request starts when the kernel had its bytes, not when a busy event loop
got around to reading them.
"""

from __future__ import annotations

import asyncio
import contextlib
import platform
import socket
import ssl
import struct
import sys
import time
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

# SO_TIMESTAMPNS (the "old" value, a native struct timespec), where its value is the generic one.
_GENERIC_ABI = {
    "x86_64", "amd64", "i386", "i686", "aarch64", "arm64", "armv7l", "armv8l", "riscv64",
    "ppc64le", "ppc64", "s390x",
}  # fmt: skip
SO_TIMESTAMPNS: int | None = (
    35 if sys.platform == "linux" and platform.machine().lower() in _GENERIC_ABI else None
)
# Set to False to stamp in user space only (benchmarks compare the two); read at connect time.
kernel_stamps = True
_TIMESPEC = struct.Struct("@ll")
_ANCILLARY_BYTES = socket.CMSG_SPACE(_TIMESPEC.size) if SO_TIMESTAMPNS is not None else 0


class StampingSocket(socket.socket):
    """A socket whose reads record the kernel's arrival stamp (`rx_ns`, perf_counter scale)."""

    __slots__ = ("rx_ns",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rx_ns = 0  # 0: no kernel stamp for the last read

    def enable_stamps(self) -> bool:
        if SO_TIMESTAMPNS is None or not kernel_stamps:
            return False
        try:
            self.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        except OSError:
            return False
        return True

    def recv(self, bufsize: int, flags: int = 0, /) -> bytes:
        if not _ANCILLARY_BYTES:
            return super().recv(bufsize, flags)
        data, ancillary, _, _ = self.recvmsg(bufsize, _ANCILLARY_BYTES, flags)
        self.rx_ns = _kernel_stamp(ancillary)
        return data

    def recv_into(self, buffer: WriteableBuffer, nbytes: int = 0, flags: int = 0, /) -> int:
        if not _ANCILLARY_BYTES:
            return super().recv_into(buffer, nbytes, flags)
        view = memoryview(buffer)
        if nbytes:
            view = view[:nbytes]
        size, ancillary, _, _ = self.recvmsg_into([view], _ANCILLARY_BYTES, flags)
        self.rx_ns = _kernel_stamp(ancillary)
        return size


def _kernel_stamp(ancillary: list[tuple[int, int, bytes]]) -> int:
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= _TIMESPEC.size:
            seconds, nanoseconds = _TIMESPEC.unpack_from(data)
            realtime_ns: int = seconds * 1_000_000_000 + nanoseconds
            # CLOCK_REALTIME -> perf_counter (CLOCK_MONOTONIC), with the offset of this moment
            return realtime_ns - (time.time_ns() - time.perf_counter_ns())
    return 0


# Diagnostics: while this is a list, each read with a kernel stamp appends how much later the
# event loop handed its bytes over (ns), i.e. what a user-space stamp would have added.
read_lags: list[int] | None = None


def arrival_ns(sock: StampingSocket | None, previous_ns: int) -> int:
    """When the data just read arrived: the kernel's stamp, else now; never before `previous_ns`.

    Call it from `data_received`, which the transport calls right after the read.
    """
    now = time.perf_counter_ns()
    stamp = sock.rx_ns if sock is not None else 0
    if not 0 < stamp <= now:
        stamp = now
    elif read_lags is not None:
        read_lags.append(now - stamp)
    return stamp if stamp > previous_ns else previous_ns


class StampingListener(socket.socket):
    """A listening socket whose accepted connections are `StampingSocket`s, stamps on.

    asyncio's accept loop calls `accept()` on the socket it serves; `accepted` finds the
    `StampingSocket` behind a transport by its file descriptor (`find_accepted`).
    """

    __slots__ = ("accepted",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.accepted: weakref.WeakValueDictionary[int, StampingSocket] = (
            weakref.WeakValueDictionary()
        )

    def accept(self) -> tuple[StampingSocket, Any]:
        fd, address = self._accept()  # type: ignore[attr-defined]
        sock = StampingSocket(self.family, self.type, self.proto, fileno=fd)
        sock.enable_stamps()  # usually inherited from the listener; packets before it: no stamp
        if socket.getdefaulttimeout() is None and self.gettimeout():
            sock.setblocking(True)  # as socket.accept() does
        self.accepted[fd] = sock
        return sock, address

    def close_accepted(self) -> None:
        """Close every accepted connection still open: a stopped server's last step. asyncio
        drops a connection accepted just before its server closed (its transport is never
        made) without closing it, and the client would wait out its handshake timeout."""
        for sock in list(self.accepted.values()):
            sock.close()

    def find_accepted(self, transport: asyncio.BaseTransport) -> StampingSocket | None:
        """The `StampingSocket` a transport of this listener reads from (None if not ours)."""
        wrapper = transport.get_extra_info("socket")
        if wrapper is None:
            return None
        sock = self.accepted.get(wrapper.fileno())
        return sock if sock is not None and sock.fileno() == wrapper.fileno() else None


# The accept queue: a burst of opens beyond it is dropped by the kernel and retried by the
# clients after 1, 3, 7 s (a handshake deadline missed). The kernel caps it at
# net.core.somaxconn (4,096 by default since Linux 5.4). asyncio's `create_server` sets it again
# when it starts serving (its own default: 100), so pass it there too.
LISTEN_BACKLOG = 4096


def listen(
    host: str,
    port: int,
    *,
    backlog: int = LISTEN_BACKLOG,
    receive_buffer_bytes: int = 0,
    reuse_port: bool = False,
) -> StampingListener:
    """A bound, listening, non-blocking `StampingListener` for `loop.create_server(sock=...)`.

    Binds one address of those `host` resolves to, IPv4 first (`localhost` gets 127.0.0.1).
    `receive_buffer_bytes` > 0 sets SO_RCVBUF, which accepted sockets inherit (set before
    `listen`, so that the window scale offered in the handshake fits it). `reuse_port` sets
    SO_REUSEPORT: several processes listen on one port and the kernel spreads connections.
    """
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    if not infos:
        raise OSError(f"cannot resolve {host}")
    family, kind, proto, _, address = min(infos, key=lambda info: info[0] != socket.AF_INET)
    sock = StampingListener(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        if SO_TIMESTAMPNS is not None and kernel_stamps:
            with contextlib.suppress(OSError):  # accepted sockets inherit it (and set it again)
                sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        if receive_buffer_bytes > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer_bytes)
        sock.bind(address)
        sock.listen(backlog)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


async def open_socket(host: str, port: int) -> StampingSocket:
    """A connected, non-blocking `StampingSocket` (stamps on before any byte can arrive).

    Unbounded by itself: callers wrap it in their connect timeout.
    """
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    if not infos:
        raise OSError(f"cannot resolve {host}")
    error: OSError | None = None
    for family, kind, proto, _, address in infos:
        sock = StampingSocket(family, kind, proto)
        try:
            sock.setblocking(False)
            sock.enable_stamps()
            await loop.sock_connect(sock, address)
        except OSError as exc:
            sock.close()
            error = exc
            continue
        except BaseException:
            sock.close()
            raise
        return sock
    assert error is not None
    raise error


_ssl_context: ssl.SSLContext | None = None


def ssl_context() -> ssl.SSLContext:
    """The process's one client TLS context, built on first use (loading CAs costs ~20 ms)."""
    global _ssl_context
    if _ssl_context is None:
        _ssl_context = ssl.create_default_context()
    return _ssl_context
