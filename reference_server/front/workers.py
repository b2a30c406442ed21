"""`wsmode serve --workers N`: N server processes on one port, one store.

Each worker is a whole reference server (its own event loop, connections and caches) listening
with SO_REUSEPORT, so the kernel spreads new connections over them and one busy worker does not
hold up another's. What they share is the SQLite store (WAL mode, busy timeout: concurrent
writers wait, they do not fail), so a `previous_response_id` from one worker hydrates on another
(with several workers the store commit runs before the terminal event: post_inference.py).
API keys and tenant isolation are each worker's own copy of the same config. `/metrics` is per
worker: a scrape reports the worker that accepted it, named by `wsmode_worker_info{worker="i"}`.

The connection caps hold across the workers: the parent makes one shared table of counts that
every worker admits against (connection_caps.py), so one key gets its 64 connections in total,
whichever worker the kernel hands them to.

The parent only supervises: it forwards SIGTERM/SIGINT to every worker (each drains as
`ReferenceServer.drain` does), and when one worker dies it stops the others and exits 1, so the
port never stays half served (a supervisor such as systemd restarts the whole). Each worker
holds the read end of a pipe whose only write end is the parent's (its lifeline): when the
parent dies, however (SIGKILL included), the kernel closes that end, the worker reads EOF and
drains as on SIGTERM, so no orphan keeps serving the port.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from dataclasses import replace
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from types import FrameType

from harness.errors import TargetError
from reference_server.config import ServerConfig
from reference_server.front.shared_counts import SharedCounts
from reference_server.store.response_store import ResponseStore

WORKER_START_TIMEOUT_S = 60.0
# The platforms without SO_REUSEPORT (Windows) get a clear error instead of a half-bound port.
HAS_REUSE_PORT = hasattr(socket, "SO_REUSEPORT")


class WorkersError(TargetError, RuntimeError):
    """The workers could not be started."""


def reserve_port(host: str, port: int) -> socket.socket:
    """A bound, not listening, SO_REUSEPORT socket: fixes the port (0 picks one) for the workers;
    it accepts nothing (only listening sockets get connections)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    return sock


# How a worker serves: `commands.serve_until_signalled` (passed in: a CLI module is imported by
# nobody; the spawned child unpickles it by name).
Serve = Callable[[ServerConfig, Callable[[], None]], None]


def run_workers(config: ServerConfig, serve: Serve) -> int:
    """Start `config.workers` workers, print one listening line, supervise until all exit."""
    if not HAS_REUSE_PORT:
        raise WorkersError("--workers needs SO_REUSEPORT, which this platform lacks")
    reserved = reserve_port(config.host, config.port)
    port = reserved.getsockname()[1]
    # Create (or migrate) the store once, here: switching a new file to WAL takes a lock that
    # SQLite does not wait for, so workers opening a fresh store together could fail with
    # "database is locked". An existing WAL store opens without that lock.
    ResponseStore(
        config.store_path, retention_s=config.store_retention_s, max_bytes=config.store_max_bytes
    ).close()
    context = multiprocessing.get_context("spawn")  # no forked event loop or SQLite handle
    counts = SharedCounts.create(context, config.workers, config.api_keys)
    workers: list[BaseProcess] = []
    readies: list[Connection] = []
    lifelines: list[Connection] = []  # the write ends, held (never written) until we exit
    for index in range(config.workers):
        ready_read, ready_write = context.Pipe(duplex=False)
        lifeline_read, lifeline_write = context.Pipe(duplex=False)
        worker_config = replace(config, port=port, worker_index=index, connection_counts=counts)
        process = context.Process(
            target=_worker_main,
            args=(serve, worker_config, ready_write, lifeline_read),
            name=f"wsmode-worker-{index}",
        )
        process.start()
        ready_write.close()
        lifeline_read.close()
        workers.append(process)
        readies.append(ready_read)
        lifelines.append(lifeline_write)
    _forward_signals(workers)
    try:
        _await_ready(workers, readies)
    except WorkersError as exc:
        _stop(workers)
        print(f"wsmode serve: {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        reserved.close()
    host = config.host
    limits = config.limits
    print(
        f"wsmode reference server on ws://{host}:{port}/v1/responses (HTTP http://{host}:{port}/v1),"
        f" profile {config.profile}, {config.workers} workers "
        f"(pids {' '.join(str(w.pid) for w in workers)}); caps across all workers: "
        f"{limits.max_connections} WebSocket connections, "
        f"{limits.max_connections_per_key} per key, {limits.max_http_connections} HTTP connections",
        flush=True,
    )
    return _supervise(workers)


def _worker_main(
    serve: Serve, config: ServerConfig, ready: Connection, lifeline: Connection
) -> None:
    def listening() -> None:
        ready.send(True)
        ready.close()

    threading.Thread(
        target=_drain_when_orphaned, args=(lifeline,), name="wsmode-lifeline", daemon=True
    ).start()
    serve(config, listening)


def _drain_when_orphaned(lifeline: Connection) -> None:
    """Wait for EOF on the lifeline (the parent is gone), then SIGTERM ourselves: the worker
    stops accepting at once and drains (serve_until_signalled's handler)."""
    with contextlib.suppress(EOFError, OSError):
        lifeline.recv()  # the parent never writes: this returns only by EOFError
    os.kill(os.getpid(), signal.SIGTERM)


def _await_ready(workers: list[BaseProcess], readies: list[Connection]) -> None:
    for process, ready in zip(workers, readies, strict=True):
        try:
            if not ready.poll(WORKER_START_TIMEOUT_S):
                raise WorkersError(f"{process.name} did not start")
            ready.recv()
        except EOFError:
            raise WorkersError(f"{process.name} exited while starting") from None
        finally:
            ready.close()


def _forward_signals(workers: list[BaseProcess]) -> None:
    def forward(signum: int, frame: FrameType | None) -> None:
        _stop(workers)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, forward)


def _stop(workers: list[BaseProcess]) -> None:
    for process in workers:
        if process.is_alive() and process.pid is not None:
            process.terminate()  # SIGTERM: the worker drains and exits


def _supervise(workers: list[BaseProcess]) -> int:
    """Wait for every worker; the first to exit takes the others down. Returns the exit code."""
    pending = {process.sentinel: process for process in workers}
    code = 0
    while pending:
        for sentinel in wait(list(pending)):
            assert isinstance(sentinel, int)  # process sentinels are file descriptors
            process = pending.pop(sentinel)
            process.join()
            if process.exitcode not in (0, -signal.SIGTERM):
                code = code or 1
            _stop(list(pending.values()))
    return code
