"""The reference server: WebSocket and HTTP on one port.

The transport's `FrontDoor` reads each new connection's request head and hands the transport
over: a WebSocket upgrade goes to the `websockets` asyncio implementation (its keepalive, close
handshake, fragmentation, size limit and write backpressure are battle-tested), anything else to
the h11 HTTP handler. This is the documented `Server.wrap()` pattern of `websockets`.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import importlib.metadata
import itertools
import threading
import time
from collections.abc import Iterator

from websockets.asyncio.server import Server, ServerConnection
from websockets.datastructures import Headers
from websockets.extensions.permessage_deflate import ServerPerMessageDeflateFactory
from websockets.http11 import Request, Response
from websockets.server import ServerProtocol

from harness.protocol import errors, wire
from harness.protocol.errors import ApiError
from harness.transport import sockets
from harness.transport.frontdoor import FrontDoor, WaitingDoors
from reference_server.config import ServerConfig
from reference_server.front.api_headers import api_headers
from reference_server.front.auth import KeyRing
from reference_server.front.connection import StampedServerConnection, StampedStreamProtocol
from reference_server.front.connection_caps import ConnectionCaps
from reference_server.front.http_api import HttpConnection
from reference_server.front.ws_session import WebSocketSession
from reference_server.hooks.observer import ServerObserver, redacted_head
from reference_server.runtime.logs import handshake_logger
from reference_server.runtime.services import Services

_WS_PATHS = ("/v1/responses", "/responses")


def _server_header() -> str:
    """`wsmode-reference/<version>`: a client names the implementation and its version from it
    (harness.results.identity)."""
    try:
        return f"wsmode-reference/{importlib.metadata.version('wsmode')}"
    except importlib.metadata.PackageNotFoundError:
        return "wsmode-reference"


SERVER_HEADER = _server_header()


class ReferenceServer:
    """Start with `await server.start()` (or `async with`); `server.port` is the bound port."""

    def __init__(self, config: ServerConfig, observer: ServerObserver | None = None) -> None:
        self.config = config
        self.services = Services.build(config)
        self.hooks = self.services.hooks  # the faults, a client case's script, the observer
        self.hooks.observer = observer  # `wsmode certify-client` watches the wire
        self._labels = itertools.count(1)  # the observer's names for connections
        self._case_refusals: dict[str, ApiError] = {}  # label -> refusal (client cases)
        self.keyring = KeyRing(config.api_keys)
        self.port = config.port
        self.loop: asyncio.AbstractEventLoop | None = None  # the loop it serves on, once started
        self._asyncio_server: asyncio.Server | None = None
        self._listener: sockets.StampingListener | None = None
        self._ws_server: Server | None = None
        self._http_tasks: set[asyncio.Task[None]] = set()
        self._http_handlers: dict[asyncio.Task[None], HttpConnection] = {}
        self._sessions: set[WebSocketSession] = set()
        self._waiting_doors = WaitingDoors()  # connections whose head is not in yet
        self._stopped = False
        # the connection caps, counted across every worker of the port (front/connection_caps.py)
        self.caps = ConnectionCaps(
            config.limits, config.api_keys, config.connection_counts, config.worker_index
        )

    async def __aenter__(self) -> ReferenceServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def ws_url(self) -> str:
        return f"ws://{self.config.host}:{self.port}/v1/responses"

    @property
    def http_url(self) -> str:
        return f"http://{self.config.host}:{self.port}/v1"

    async def start(self) -> None:
        limits = self.config.limits
        self._ws_server = Server(
            self._serve_websocket,
            process_request=self._check_upgrade,
            process_response=_with_api_headers,  # the 101 names its request, as the API's does
            server_header=SERVER_HEADER,  # names the implementation and its version
            open_timeout=limits.handshake_timeout_s,
            logger=handshake_logger(),
        )
        loop = self.loop = asyncio.get_running_loop()
        # a listener whose connections read with kernel arrival stamps (sockets.py): a request's
        # clock starts when its bytes arrived, even when the event loop reads them late
        self._listener = sockets.listen(
            self.config.host,
            self.config.port,
            receive_buffer_bytes=limits.socket_receive_buffer_bytes,
            reuse_port=self.config.workers > 1,  # the workers share the port (front/workers.py)
        )
        self._asyncio_server = await loop.create_server(
            lambda: FrontDoor(
                self,
                max_head_bytes=limits.max_http_header_bytes,
                head_timeout_s=limits.handshake_timeout_s,
                admit_http=self._admit_http,
                waiting=self._waiting_doors,
            ),
            sock=self._listener,
            backlog=sockets.LISTEN_BACKLOG,  # else asyncio listens again with 100
        )
        self._ws_server.wrap(self._asyncio_server)
        self.port = self._asyncio_server.sockets[0].getsockname()[1]
        self.services.gc_policy.start()  # runtime/gc_policy.py: no collection walks the cache

    async def drain(self, timeout_s: float | None = None) -> None:
        """SIGTERM: stop accepting, refuse new creates (an error event; the socket stays open),
        let in-flight and queued responses finish for up to `timeout_s` (the config's
        `drain_timeout_s` by default), then `stop()`: close 1001, flush the store, close it.
        A method of the server so every worker process drains alike."""
        timeout_s = self.config.limits.drain_timeout_s if timeout_s is None else timeout_s
        self.services.draining = True
        if self._asyncio_server is not None:
            self._asyncio_server.close()  # the listener only: open connections stay
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not self.quiet() and loop.time() < deadline:
            await asyncio.sleep(0.02)
        await self.stop(drained_for_s=timeout_s)

    def quiet(self) -> bool:
        """No response in flight or queued on any connection."""
        return all(session.idle() for session in self._sessions) and not any(
            handler.busy for handler in self._http_handlers.values()
        )

    async def stop(self, drained_for_s: float = 0.0) -> None:
        """Stop now: a response still running gets the `server_shutting_down` error, every socket
        closes 1001 with a reason, pending store writes are flushed and the store closed."""
        if self._stopped:
            return
        self._stopped = True
        # the listener first, here and synchronously: websockets closes it from a task that may
        # never run when the loop ends right after, leaving a socket that accepts but never answers
        if self._asyncio_server is not None:
            self._asyncio_server.close()
        self._waiting_doors.shut()
        self.services.background.stop_all()  # background runs end with the server
        if self._ws_server is not None:
            sessions = [s.close_for_shutdown(drained_for_s) for s in list(self._sessions)]
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.config.limits.close_timeout_s):
                    await asyncio.gather(*sessions, return_exceptions=True)
            self._ws_server.close()  # what is left: connections still in their handshake
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.config.limits.drain_timeout_s):
                    await self._ws_server.wait_closed()
        for handler in list(self._http_handlers.values()):
            handler.close_for_shutdown(drained_for_s)  # written at once: cancelled right after
        for task in list(self._http_tasks):
            task.cancel()
        await asyncio.gather(*self._http_tasks, return_exceptions=True)
        await self.services.persistence.flush()
        self.services.persistence.close()
        self.services.gc_policy.stop()
        if self._listener is not None:
            self._listener.close_accepted()

    # -- connection hand-off (called by FrontDoor) ------------------------------------------
    def stamping_socket(self, transport: asyncio.BaseTransport) -> sockets.StampingSocket | None:
        return self._listener.find_accepted(transport) if self._listener is not None else None

    def accept_websocket(self, transport: asyncio.Transport, head: bytes) -> None:
        assert self._ws_server is not None
        limits = self.config.limits
        label = self._observe_upgrade(head)
        script = self.hooks.script
        action = script.next_upgrade() if script is not None else "accept"
        if action == "drop":  # a client case: the connection closes before any answer
            self.hooks.record(label, "meta", "dropped", "TCP connection closed before any answer")
            transport.close()
            return
        if not isinstance(action, str):
            self._case_refusals[label] = action  # answered by _check_upgrade
        # permessage-deflate only when enabled: it costs ~3x memory per idle connection.
        extensions = [ServerPerMessageDeflateFactory()] if self.config.compression else None
        protocol = ServerProtocol(max_size=limits.max_message_bytes, extensions=extensions)
        connection = StampedServerConnection(
            protocol,
            self._ws_server,
            ping_interval=limits.ping_interval_s,
            ping_timeout=limits.ping_timeout_s,
            close_timeout=limits.close_timeout_s,
            sock=self.stamping_socket(transport),
        )
        connection.label = label
        transport.set_protocol(connection)
        connection.connection_made(transport)
        connection.data_received(head)

    def _observe_upgrade(self, head: bytes) -> str:
        if self.hooks.observer is None and self.hooks.script is None:
            return ""
        label = f"ws{next(self._labels)}"
        self.hooks.record(label, "in", "upgrade", redacted_head(head))
        return label

    def _admit_http(self) -> bool:
        """Room for one more HTTP connection (and not draining)?"""
        return not self.services.draining and self.caps.admit_http()

    def accept_http(self, transport: asyncio.Transport, head: bytes) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=self.config.limits.max_message_bytes)
        protocol = StampedStreamProtocol(reader, self.stamping_socket(transport))
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        protocol.data_received(head)
        writer = asyncio.StreamWriter(transport, protocol, reader, loop)
        handler = HttpConnection(self.services, self.keyring, reader, writer, protocol)
        if self.hooks.observer is not None:
            handler.connection_id = f"http{next(self._labels)}"
            self.hooks.record(handler.connection_id, "in", "http", redacted_head(head))
        task = loop.create_task(handler.serve())
        self._http_tasks.add(task)
        self._http_handlers[task] = handler
        task.add_done_callback(self._http_tasks.discard)
        task.add_done_callback(lambda done: self._http_handlers.pop(done, None))
        task.add_done_callback(lambda done: self.caps.release_http())  # admitted by FrontDoor

    # -- WebSocket ------------------------------------------------------------------------
    def _check_upgrade(self, connection: ServerConnection, request: Request) -> Response | None:
        """Refuse before the upgrade (404, 401, 426 with WebSocket mode off, 429) with a JSON
        error body."""
        label = connection.label if isinstance(connection, StampedServerConnection) else ""
        refusal = self._case_refusals.pop(label, None)
        if refusal is not None:  # a client case's refusal (faults.CaseBehaviour)
            response = _json_response(refusal, self.config.case_behaviour.retry_after_s)
            shown = f"HTTP {refusal.status}\n{response.body.decode()}"
            self.hooks.record(label, "out", "refused", shown)
            return response
        if request.path.split("?", 1)[0] not in _WS_PATHS:
            return _json_response(
                ApiError(404, "invalid_request_error", "not_found", "Unknown path.")
            )
        tenant = self.keyring.authenticate(request.headers.get("Authorization"))
        if tenant is None:
            return _json_response(errors.unauthorized())
        if not self.config.websocket:
            return _json_response(errors.websocket_disabled())
        if not self.caps.admit_websocket(tenant):  # released when the connection is lost
            self.services.metrics.inc("wsmode_connections_refused_total", reason="limit")
            return _json_response(
                ApiError(
                    429, "rate_limit_error", "too_many_connections", "Too many open connections."
                ),
                retry_after_s=1,
            )
        connection.username = tenant  # websockets' slot for the authenticated identity
        if isinstance(connection, StampedServerConnection):
            connection.on_lost = lambda: self.caps.release_websocket(tenant)
        return None

    async def _serve_websocket(self, connection: ServerConnection) -> None:
        assert isinstance(connection, StampedServerConnection)  # accept_websocket builds only those
        tenant = connection.username
        self.hooks.record(connection.label, "out", "open", "HTTP 101 Switching Protocols")
        session = WebSocketSession(self.services, connection, tenant)
        self._sessions.add(session)
        try:
            await session.run()
        finally:
            self._sessions.discard(session)


def _with_api_headers(
    connection: ServerConnection, request: Request, response: Response
) -> Response:
    """Every upgrade answer (the 101 and the refusals) carries the API's headers; the upgrade
    is answered as its head is read, so its processing time is the hook's own."""
    for name, value in api_headers(time.perf_counter()):
        if name not in response.headers:
            response.headers[name] = value
    return response


def _json_response(error: ApiError, retry_after_s: int | None = None) -> Response:
    body = wire.dumps(error.to_http_body()).encode()
    headers = Headers([("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    if retry_after_s is not None:
        headers["Retry-After"] = str(retry_after_s)
    return Response(error.status, http.HTTPStatus(error.status).phrase, headers, body)


@contextlib.contextmanager
def running_in_thread(config: ServerConfig) -> Iterator[ReferenceServer]:
    """Run a server on its own event loop in a thread (for sync clients such as the SDK)."""
    ready = threading.Event()
    holder: dict[str, object] = {}
    stop_event: asyncio.Event | None = None
    loop_holder: dict[str, asyncio.AbstractEventLoop] = {}

    async def main() -> None:
        nonlocal stop_event
        stop_event = asyncio.Event()
        loop_holder["loop"] = asyncio.get_running_loop()
        try:
            async with ReferenceServer(config) as server:
                holder["server"] = server
                ready.set()
                await stop_event.wait()
        except BaseException as exc:
            holder["error"] = exc
            ready.set()

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True, name="wsmode-server")
    thread.start()
    if not ready.wait(30) or "error" in holder:
        raise RuntimeError(f"reference server did not start: {holder.get('error')}")
    try:
        server = holder["server"]
        assert isinstance(server, ReferenceServer)
        yield server
    finally:
        loop = loop_holder["loop"]
        assert stop_event is not None
        loop.call_soon_threadsafe(stop_event.set)
        thread.join(30)
