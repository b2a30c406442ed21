"""`wsmode record`: a WS + HTTP pass-through proxy that turns a live agent's traffic into a trace.

The agent is pointed at ``http://127.0.0.1:PORT/v1`` (or ``ws://127.0.0.1:PORT/v1/responses``);
every request is forwarded unchanged to the upstream origin (same path, same headers), every
event is relayed back as it arrives, and what passed is recorded:

- **Rollouts.** A WebSocket connection is one rollout; a `response.create` without
  `previous_response_id` on it starts a new one. Over HTTP, a request with
  `previous_response_id` joins the rollout holding that response; a request without one joins
  the rollout whose last request input it strictly extends (a stateless client resending the
  history; with several, the one last seen on the same connection, then the one whose pending
  call ids it answers), else starts a new one.
- **Turns.** One per completed response: its new input items (for a stateless request, the
  items after the last model-output item of the history), the output items it produced, and
  ``tool_wait_ms`` = time from the previous response's terminal event to this create. A
  `generate: false` warm-up has no output: its input is carried into the next turn. Failed or
  refused requests are left out (the agent resends what it needs).
- **Custom (freeform) tools** such as apply_patch: the trace has function calls only, so a
  ``custom_tool_call`` becomes a function call with ``arguments = {"input": <raw input>}`` (the
  Codex converter's mapping), its ``custom_tool_call_output`` a ``function_call_output``, and
  the tool an inferred function tool.
- **Observed timings** (at the proxy): ``ttft_ms`` (create received → first content token from
  upstream, ``harness.protocol.timing_marks``), ``ttfe_ms`` (→ first output event of any kind),
  ``e2e_ms`` (→ terminal), and the usage token counts.
- ``meta.stateless_http``: an HTTP rollout none of whose requests carried
  ``previous_response_id`` (the client resent the history each time).

Rollouts are written (atomically, validated) each time one ends and when the recorder stops;
a rollout that breaks the trace format's rules (e.g. an unanswered call) is skipped with a
warning on stderr. With nothing recorded no file is written (an empty trace would not load).
Listening is on 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from pathlib import Path
from typing import TextIO
from urllib.parse import urlsplit

import h11
import httpx
from websockets.asyncio.client import connect as ws_connect
from websockets.asyncio.server import Server, ServerConnection
from websockets.exceptions import InvalidStatus, WebSocketException
from websockets.server import ServerProtocol

from harness.progress import Progress
from harness.protocol.wire import loads_document
from harness.traces.record.event_log import EventLog
from harness.traces.record.trace_log import Observed, RolloutBuilder, TraceLog
from harness.transport.failures import GarbageFrame
from harness.transport.frontdoor import FrontDoor, WaitingDoors
from harness.transport.h11_loop import next_h11_event, read_within
from harness.transport.sockets import LISTEN_BACKLOG
from harness.transport.sse_wire import SseParser, parse_event
from harness.usage import usage_error

RECORD = "wsmode record"  # the command its usage errors name

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "host",
        "content-length",
        "proxy-connection",
    }
)

MAX_HEAD_BYTES = 64 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024
CLIENT_READ_TIMEOUT_S = 300.0  # an agent's connection idle longer than this is closed


# -- what one response looked like at the proxy ----------------------------------------------------
class Recorder:
    """Listen on 127.0.0.1:`port`; forward to `upstream`; record into `out` (and the relayed
    server events into `events`, when given)."""

    def __init__(
        self,
        upstream: str,
        out: str | Path,
        *,
        port: int = 0,
        err: TextIO = sys.stderr,
        events: str | Path | None = None,
    ) -> None:
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https", "ws", "wss") or not parts.netloc:
            raise ValueError(f"upstream must be an http(s):// or ws(s):// URL, got {upstream!r}")
        secure = parts.scheme in ("https", "wss")
        self.http_origin = f"{'https' if secure else 'http'}://{parts.netloc}"
        self.ws_origin = f"{'wss' if secure else 'ws'}://{parts.netloc}"
        self.log = TraceLog(Path(out), err)
        self.err = err
        self.port = port
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(600.0, connect=10.0))
        self._server: asyncio.Server | None = None
        self._ws_server: Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._waiting_doors = WaitingDoors()  # connections whose head is not in yet
        self.events = EventLog(events) if events is not None else None
        self._connections = 0

    def _connection_label(self, transport: str) -> str:
        self._connections += 1
        return f"{transport}-{self._connections}"

    @property
    def responses_seen(self) -> int:
        """Responses recorded so far (completed turns of every rollout)."""
        return sum(len(builder.turns) for builder in self.log.builders)

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/v1/responses"

    async def __aenter__(self) -> Recorder:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        self._ws_server = Server(self._relay_ws, server_header="wsmode-recorder")
        loop = asyncio.get_running_loop()
        try:
            self._server = await loop.create_server(
                lambda: FrontDoor(
                    self,
                    max_head_bytes=MAX_HEAD_BYTES,
                    answer_oversized=False,
                    waiting=self._waiting_doors,
                ),
                "127.0.0.1",
                self.port,
                backlog=LISTEN_BACKLOG,
                reuse_address=True,
            )
        except OSError:  # e.g. the port is in use: nothing else was started
            await self.http.aclose()
            raise
        self._ws_server.wrap(self._server)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> int:
        """Stop listening, end open connections, write the trace; returns rollouts written."""
        if self._server is not None:
            self._server.close()  # the listener now: websockets closes it from a task
        self._waiting_doors.shut()
        if self._ws_server is not None:
            self._ws_server.close()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(5):
                    await self._ws_server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.http.aclose()
        for builder in self.log.builders:
            builder.closed = True
        if self.events is not None:
            self.events.close()
        return self.log.write()

    # -- WebSocket ------------------------------------------------------------------------
    def accept_websocket(self, transport: asyncio.Transport, head: bytes) -> None:
        assert self._ws_server is not None
        protocol = ServerProtocol(max_size=MAX_BODY_BYTES)
        connection = ServerConnection(
            protocol, self._ws_server, ping_interval=None, close_timeout=5
        )
        transport.set_protocol(connection)
        connection.connection_made(transport)
        connection.data_received(head)

    async def _relay_ws(self, client: ServerConnection) -> None:
        request = client.request
        assert request is not None
        headers = {
            k: v
            for k, v in request.headers.raw_items()
            if k.lower()
            in ("authorization", "openai-beta", "openai-organization", "openai-project")
        }
        try:
            upstream = await ws_connect(
                self.ws_origin + request.path,
                additional_headers=headers,
                compression=None,
                max_size=MAX_BODY_BYTES,
                ping_interval=None,
                open_timeout=10,
            )
        except InvalidStatus as exc:
            self.err.write(f"wsmode record: upstream refused the upgrade: {exc}\n")
            await client.close(1011, "upstream refused")
            return
        except (OSError, WebSocketException, TimeoutError) as exc:
            self.err.write(f"wsmode record: cannot reach upstream: {exc}\n")
            await client.close(1011, "upstream unreachable")
            return
        pending: list[Observed] = []
        current: list[RolloutBuilder] = []
        label = self._connection_label("ws")

        async def client_to_upstream() -> None:
            async for message in client:
                now = time.perf_counter_ns()
                if isinstance(message, str):
                    with contextlib.suppress(ValueError):
                        event = loads_document(message)
                        if isinstance(event, dict) and event.get("type") == "response.create":
                            body = {k: v for k, v in event.items() if k != "type"}
                            pending.append(Observed(body, now))
                await upstream.send(message)

        async def upstream_to_client() -> None:
            async for message in upstream:
                now = time.perf_counter_ns()
                await client.send(message)
                if self.events is not None and isinstance(message, str):
                    self.events.write(label, message)
                if not isinstance(message, str) or not pending:
                    continue
                try:
                    event = loads_document(message)
                except ValueError:
                    continue
                if not isinstance(event, dict):
                    continue
                obs = pending[0]
                obs.feed(event, now)
                if obs.terminal_ns is not None:
                    pending.pop(0)
                    if not current or (
                        obs.request.get("previous_response_id") is None and current[-1].turns
                    ):
                        if current:
                            current[-1].closed = True
                        current.append(self.log.new(http=False))
                    current[-1].add(obs)

        tasks = [
            asyncio.create_task(client_to_upstream()),
            asyncio.create_task(upstream_to_client()),
        ]
        try:
            _, still = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in still:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            with contextlib.suppress(Exception):
                await upstream.close()
            with contextlib.suppress(Exception):
                await client.close()
            for builder in current:
                builder.closed = True
            self._write_quietly()

    def _write_quietly(self) -> None:
        try:
            self.log.write()
        except OSError as exc:
            self.err.write(f"wsmode record: cannot write {self.log.out}: {exc}\n")

    # -- HTTP -----------------------------------------------------------------------------
    def accept_http(self, transport: asyncio.Transport, head: bytes) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_HEAD_BYTES)
        protocol = asyncio.StreamReaderProtocol(reader)
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        reader.feed_data(head)
        writer = asyncio.StreamWriter(transport, protocol, reader, loop)
        task = loop.create_task(self._serve_http(reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve_http(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        read = read_within(reader, CLIENT_READ_TIMEOUT_S)
        try:
            while True:
                event = await next_h11_event(conn, read)
                if not isinstance(event, h11.Request):
                    return
                body = bytearray()
                while True:
                    part = await next_h11_event(conn, read)
                    if isinstance(part, h11.Data):
                        body += part.data
                        if len(body) > MAX_BODY_BYTES:
                            return
                    elif isinstance(part, h11.EndOfMessage):
                        break
                    else:
                        return
                await self._forward_http(conn, writer, event, bytes(body))
                if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    return
                conn.start_next_cycle()
        except (ConnectionError, TimeoutError, h11.ProtocolError, httpx.HTTPError) as exc:
            if not isinstance(exc, ConnectionError | TimeoutError):
                self.err.write(f"wsmode record: HTTP relay: {exc}\n")
        finally:
            writer.close()

    async def _forward_http(
        self, conn: h11.Connection, writer: asyncio.StreamWriter, request: h11.Request, body: bytes
    ) -> None:
        received_ns = time.perf_counter_ns()
        method = request.method.decode("ascii")
        target = request.target.decode("ascii", "replace")
        headers = [
            (k.decode("latin-1"), v.decode("latin-1"))
            for k, v in request.headers
            if k.decode("latin-1").lower() not in _HOP_BY_HOP
        ]
        obs: Observed | None = None
        if method == "POST" and target.split("?", 1)[0].rstrip("/").endswith("/responses"):
            with contextlib.suppress(ValueError):
                payload = loads_document(body)
                if isinstance(payload, dict):
                    obs = Observed(payload, received_ns, connection=id(writer))
        upstream_request = self.http.build_request(
            method, self.http_origin + target, headers=headers, content=body
        )
        response = await self.http.send(upstream_request, stream=True)
        try:
            out_headers = [
                (k, v) for k, v in response.headers.items() if k.lower() not in _HOP_BY_HOP
            ]
            out_headers = [(k, v) for k, v in out_headers if k.lower() != "content-encoding"]
            writer.write(
                conn.send(h11.Response(status_code=response.status_code, headers=out_headers))
            )
            is_sse = "text/event-stream" in response.headers.get("content-type", "")
            sse = SseParser()
            raw = bytearray()
            label = self._connection_label("http")
            async for chunk in response.aiter_bytes():
                now = time.perf_counter_ns()
                writer.write(conn.send(h11.Data(data=chunk)))
                await writer.drain()
                if obs is None:
                    continue
                if is_sse:
                    payloads = sse.feed(chunk)
                    if self.events is not None:
                        for payload, _ in payloads:
                            self.events.write(label, payload.decode("utf-8", "replace"))
                    _feed_sse(obs, payloads, now)
                elif len(raw) + len(chunk) > MAX_BODY_BYTES:
                    obs = None  # relayed whole, but too large to keep: not recorded
                else:
                    raw += chunk
            writer.write(conn.send(h11.EndOfMessage()))
            await writer.drain()
        finally:
            await response.aclose()
        if obs is None or response.status_code != 200:
            return
        if not is_sse:
            with contextlib.suppress(ValueError):
                final = loads_document(bytes(raw))
                if isinstance(final, dict):
                    obs.final = final
                    obs.terminal_ns = time.perf_counter_ns()
        builder = self.log.for_http(obs.request, obs.connection)
        builder.add(obs)


def _feed_sse(obs: Observed, payloads: list[tuple[bytes, int]], at_ns: int) -> None:
    """The events of SSE data payloads, to `obs`; a payload that is not one is relayed only."""
    for raw, _ in payloads:
        try:
            event = parse_event(raw)
        except GarbageFrame:
            continue
        obs.feed(event, at_ns)


# -- CLI -------------------------------------------------------------------------------------------
async def record(
    upstream: str,
    port: int,
    out: str,
    *,
    duration_s: float | None = None,
    err: TextIO = sys.stderr,
    events: str | None = None,
) -> int:
    recorder = Recorder(upstream, out, port=port, err=err, events=events)
    try:
        await recorder.start()
    except OSError as exc:
        if recorder.events is not None:
            recorder.events.close()
        # asyncio wraps the bind error's text; the errno's own text is the clear part
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        return usage_error(RECORD, f"cannot listen on 127.0.0.1:{port}: {reason}", err=err)
    err.write(
        f"wsmode record: listening on {recorder.http_url} and {recorder.ws_url}, forwarding to "
        f"{recorder.http_origin}; writing {out}; Ctrl-C to stop\n"
    )
    err.flush()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    progress = Progress(RECORD, unit="responses", duration_s=duration_s, stream=err)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(duration_s):
            while not stop.is_set():  # the line says what passed so far
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), min(progress.every_s, 1.0))
                progress.update(recorder.responses_seen)
    progress.close()
    try:
        written = await recorder.stop()
    except OSError as exc:
        return usage_error(RECORD, f"cannot write {out}: {exc.strerror or exc}", err=err)
    if written:
        err.write(f"wsmode record: {written} rollout(s) written to {out}\n")
    else:  # an empty trace would not load, so there is no file to write
        err.write("wsmode record: nothing recorded; no file written\n")
    return 0
