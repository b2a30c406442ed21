"""A minimal *standard* Responses API server for the load tests: WS mode and HTTP/SSE.

It knows only the documented create parameters (PROTOCOL.md §2.1) and refuses every other
field with a 400 `unknown_parameter`, as the real API does, so a client that sends a
project-only field (`wsmode`, ...) fails here. It honours `max_output_tokens` (stopping with
`response.incomplete`, reason `max_output_tokens`), `previous_response_id` (this connection's
last response over WS, the stored ones over HTTP, else `previous_response_not_found`) and
`store`. How it streams is set by `Behaviour`: a message or a function call only, with or
without deltas, and a delay between announcing the item and its first token. It records when
it wrote each response's first content-carrying event (`perf_counter_ns`, the clock the client
stamps with), so a test can check the client's TTFT mark against what was actually sent.

`usage.input_tokens` counts the words of the conversation the response answers: the chain
behind `previous_response_id` (its inputs and outputs) plus the new items, or the whole input
resent over stateless HTTP, so both ways of sending one conversation report the same count.
`Behaviour(drop_ws_context=True)` makes a target that drops context: its WebSocket
continuations answer the new items alone (as vLLM's WebSocket-mode pull request did), so they
report, and do, far less work than the same turn over HTTP.

Runs on its own event loop in a thread (`with StandardServer(...) as server:`), so client
processes and the test's own loop can use it alike.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.server import ServerConnection, serve

from harness.protocol.emitter import ResponseEmitter
from harness.protocol.errors import ApiError, invalid_request, previous_response_not_found
from harness.protocol.events import response_object
from harness.protocol.timing_marks import is_first_token_candidate
from harness.transport.sse_wire import encode_events

# the create parameters of the OpenAPI `CreateResponse` body (plus WS mode's `generate`)
CREATE_FIELDS = frozenset(
    {
        "model", "input", "instructions", "max_output_tokens", "previous_response_id",
        "store", "stream", "stream_options", "tools", "tool_choice", "temperature", "top_p",
        "metadata", "parallel_tool_calls", "reasoning", "text", "truncation", "user",
        "include", "background", "service_tier", "prompt_cache_key", "safety_identifier",
        "max_tool_calls", "top_logprobs", "conversation", "prompt", "generate",
    }
)  # fmt: skip
MESSAGE_FIELDS = frozenset({"type", "role", "content", "id", "status"})


def words(items: Any) -> int:
    """Words of the text in `items` (message contents, strings or parts): the token count."""
    count = 0
    for item in items if isinstance(items, list) else [{"content": items}]:
        content = item.get("content") if isinstance(item, dict) else None
        parts = content if isinstance(content, list) else [content]
        for part in parts:
            text = part.get("text") if isinstance(part, dict) else part
            count += len(text.split()) if isinstance(text, str) else 0
    return count


@dataclass(frozen=True)
class Behaviour:
    kind: str = "message"  # or "function_call"
    tokens: int = 16  # generated when max_output_tokens allows
    deltas: bool = True  # False: every item arrives whole in its *.done events
    announce_delay_s: float = 0.0  # output_item.added → first token
    drop_ws_context: bool = False  # WS continuations ignore the conversation behind them


@dataclass
class Record:
    requests: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    first_content_sent_ns: list[int] = field(default_factory=list)
    announced_ns: list[int] = field(default_factory=list)


class StandardServer:
    def __init__(self, behaviour: Behaviour | None = None) -> None:
        self.behaviour = behaviour or Behaviour()
        self.record = Record()
        self.stored: set[str] = set()
        self.context: dict[str, int] = {}  # response id -> words of its conversation so far
        self._ids = itertools.count(1)
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Future[None] | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.ws_port = self.http_port = 0

    # -- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> StandardServer:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("standard server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._finish)
        self._thread.join(10)

    def _finish(self) -> None:
        if self._stop is not None and not self._stop.done():
            self._stop.set_result(None)

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.ws_port}/v1/responses"

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}/v1"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main())

    async def _main(self) -> None:
        self._stop = self._loop.create_future()
        http = await asyncio.start_server(self._http_connection, "127.0.0.1", 0)
        async with serve(self._ws_connection, "127.0.0.1", 0) as ws:
            self.ws_port = next(iter(ws.sockets)).getsockname()[1]
            self.http_port = http.sockets[0].getsockname()[1]
            self._ready.set()
            await self._stop
        http.close()

    # -- one create, either transport -------------------------------------------------------
    def check(self, body: Any, known_previous: set[str]) -> ApiError | None:
        """The 400 a standard server answers to this body, or None."""
        if not isinstance(body, dict):
            return invalid_request("The request body must be a JSON object.")
        self.record.requests.append(body)
        for name in body:
            if name not in CREATE_FIELDS:
                return self._reject(name, f"Unknown parameter: '{name}'.")
        if not isinstance(body.get("model"), str):
            return self._reject("model", "Missing required parameter: 'model'.")
        for index, item in enumerate(body.get("input") or []):
            unknown = [k for k in item if k not in MESSAGE_FIELDS] if isinstance(item, dict) else []
            if unknown:
                return self._reject(f"input[{index}].{unknown[0]}", "Unknown parameter.")
        previous = body.get("previous_response_id")
        if previous is not None and previous not in known_previous:
            self.record.rejected.append("previous_response_id")
            return previous_response_not_found(str(previous))
        return None

    def _reject(self, param: str, message: str) -> ApiError:
        self.record.rejected.append(param)
        return invalid_request(message, param=param, code="unknown_parameter")

    def events(
        self, body: dict[str, Any], *, over_ws: bool = False
    ) -> Iterator[tuple[float, dict[str, Any]]]:
        """(delay before it in s, event) for one response to `body`."""
        b = self.behaviour
        previous = body.get("previous_response_id")
        dropped = over_ws and b.drop_ws_context
        context = 0 if dropped or previous is None else self.context.get(str(previous), 0)
        input_tokens = context + words(body.get("input"))
        limit = body.get("max_output_tokens")
        tokens = min(b.tokens, limit) if isinstance(limit, int) else b.tokens
        response = response_object(
            f"resp_{next(self._ids)}", body["model"], created_at=1_760_000_000
        )
        emitter = ResponseEmitter(response, obfuscate=False)
        yield 0.0, emitter.created()
        yield 0.0, emitter.in_progress()
        if b.kind == "function_call":
            begin = emitter.begin_function_call("fc_1", "call_1", "run")
            piece, delta, end = "x", emitter.arguments_delta, emitter.end_function_call
        else:
            begin, piece = emitter.begin_message("msg_1"), "tok "
            delta, end = emitter.text_delta, emitter.end_message
        for event in begin:
            yield 0.0, event
        pause = b.announce_delay_s
        for _ in range(tokens):
            event = delta(piece)  # built even when not sent: the done events carry the text
            if b.deltas:
                yield pause, event
                pause = 0.0
        for event in end():
            yield pause, event
            pause = 0.0
        usage = {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": tokens + input_tokens,
        }
        self.context[emitter.response_id] = input_tokens + tokens
        if tokens < b.tokens:
            for event in emitter.incomplete("max_output_tokens", usage):
                yield 0.0, event
        else:
            yield 0.0, emitter.completed(usage, completed_at=1_760_000_001)
        if body.get("store"):
            self.stored.add(emitter.response_id)

    async def _stream(self, body: dict[str, Any], send: Any, *, over_ws: bool = False) -> str:
        """Send the response's events through `send(event)`; returns the response id."""
        response_id = ""
        content_sent = False
        for delay_s, event in self.events(body, over_ws=over_ws):
            if delay_s:
                await asyncio.sleep(delay_s)
            if event["type"] == "response.output_item.added":
                self.record.announced_ns.append(time.perf_counter_ns())
            if not content_sent and is_first_token_candidate(event):
                content_sent = True
                self.record.first_content_sent_ns.append(time.perf_counter_ns())
            if event["type"] == "response.created":
                response_id = event["response"]["id"]
            await send(event)
        return response_id

    # -- WebSocket mode --------------------------------------------------------------------
    async def _ws_connection(self, connection: ServerConnection) -> None:
        last: set[str] = set()
        async for message in connection:
            payload = json.loads(message)
            body = {k: v for k, v in payload.items() if k != "type"}
            if payload.get("type") != "response.create":
                error: ApiError | None = invalid_request("Unsupported event type.")
            else:
                error = self.check(body, last | self.stored)
            if error is not None:
                await connection.send(json.dumps(error.to_event()))
                continue

            async def send(event: dict[str, Any]) -> None:
                await connection.send(json.dumps(event))

            last = {await self._stream(body, send, over_ws=True)}

    # -- HTTP/SSE --------------------------------------------------------------------------
    async def _http_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.decode("latin-1").split("\r\n")[1:]:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                body = json.loads(await reader.readexactly(length))
                await self._http_request(body, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def _http_request(self, body: Any, writer: asyncio.StreamWriter) -> None:
        error = self.check(body, self.stored)
        if error is not None:
            data = json.dumps(error.to_http_body()).encode()
            writer.write(
                f"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n"
                f"content-length: {len(data)}\r\n\r\n".encode()
                + data
            )
            await writer.drain()
            return
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n"
        )

        async def send(event: dict[str, Any]) -> None:
            block = encode_events([event])
            writer.write(f"{len(block):x}\r\n".encode() + block + b"\r\n")
            await writer.drain()

        await self._stream(body, send)
        writer.write(b"0\r\n\r\n")
        await writer.drain()
