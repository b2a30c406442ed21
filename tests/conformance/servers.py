"""Tiny misbehaving WebSocket-mode servers on 127.0.0.1 for the harness's own tests.

`CannedServer(mode)` answers every `response.create` with one fixed text response, and in each
mode breaks something: it stalls, sends garbage, closes, sends a binary frame, or (mode "ok")
behaves. It runs its own event loop in a thread so a `pytest suites` subprocess can use it.

`GatewayProxy(upstream)` is a gateway in front of a real upstream (the reference server): it
relays every frame both ways and, as the released gateways do (PROTOCOL.md §2.1), answers a
warm-up (`generate: false`) with `response.created` then `response.completed`, no
`response.in_progress` between them.

The modes of a target that goes wrong mid-run (`endless`, `drip`, `dies`) answer their first
two creates as "ok" does (the pre-run check's and the first case's), then never finish a
response again (`dies`: the server stops listening and drops its connections, as a process that
exited).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from harness.protocol.events import TERMINAL_TYPES, response_object

MODES = (
    "ok",
    "stall",
    "garbage",
    "close",
    "binary",
    "usage-in-created",
    "no-answer",  # a black hole: accepts the upgrade, never answers
    "goes-silent",  # answers the first create it gets (the pre-run check's), then a black hole
    "gateway",  # behaves like the gateways certified in issue 11 (see `gateway_events`)
    "swallow-errors",  # answers good creates, stays silent where an error event is due
    "slow",  # conformant, but each event takes SLOW_EVENT_S
    "endless",  # after two creates: deltas every ENDLESS_DELTA_S, never a terminal event
    "drip",  # after two creates: one delta every DRIP_DELTA_S, never a terminal event
    "never-stops",  # a model that does not stop: runs to max_output_tokens (else NO_CAP_TOKENS)
    "dies",  # after two creates: stops listening and drops every connection
    "quirks",  # Response objects without metadata, a wrong not-found code, 1011 on binary
)
SLOW_EVENT_S = 0.3
ENDLESS_DELTA_S = 0.02
DRIP_DELTA_S = 0.5  # below the event timeout the tests give certify: only the response
NO_CAP_TOKENS = 2048  # the context a never-stopping model fills without max_output_tokens


def gateway_events(events: list[dict[str, Any]], frame: dict[str, Any]) -> list[dict[str, Any]]:
    """What the two gateways did that the cases must not call a FAIL: no `metadata` (nor
    `instructions`) echoed, a warm-up without response.in_progress, deltas without `logprobs`
    (an SDK event-model finding the SDK's accumulator does not mind)."""
    shaped: list[dict[str, Any]] = []
    for event in without_members(events, "metadata", "instructions"):
        event = dict(event)
        if event["type"] in ("response.output_text.delta", "response.output_text.done"):
            event.pop("logprobs", None)
        shaped.append(event)
    if frame.get("generate") is False:
        created, completed = shaped[0], shaped[-1]
        completed["response"] = {**completed["response"], "output": []}
        shaped = [created, completed]
    for seq, event in enumerate(shaped):
        event["sequence_number"] = seq
    return shaped


def without_members(events: list[dict[str, Any]], *names: str) -> list[dict[str, Any]]:
    """The events with these members absent from every Response object they carry."""
    shaped = []
    for event in events:
        response = event.get("response")
        if isinstance(response, dict):
            event = {**event, "response": {k: v for k, v in response.items() if k not in names}}
        shaped.append(event)
    return shaped


def canned_events(response_id: str, text: str = "Hello there.") -> list[dict[str, Any]]:
    base = response_object(response_id, "canned", created_at=1_700_000_000)
    item_id = "msg_canned"
    part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    done_part = {**part, "text": text}
    item = {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant"}
    done_item = {**item, "status": "completed", "content": [done_part]}
    usage = {
        "input_tokens": 5,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 3,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 8,
    }
    ids = {"item_id": item_id, "output_index": 0, "content_index": 0}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": base},
        {"type": "response.in_progress", "response": base},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "content": []}},
        {"type": "response.content_part.added", **ids, "part": part},
        {"type": "response.output_text.delta", **ids, "delta": text, "logprobs": []},
        {"type": "response.output_text.done", **ids, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **ids, "part": done_part},
        {"type": "response.output_item.done", "output_index": 0, "item": done_item},
        {
            "type": "response.completed",
            "response": {**base, "status": "completed", "output": [done_item], "usage": usage},
        },
    ]
    for seq, event in enumerate(events):
        event["sequence_number"] = seq
    return events


class CannedServer:
    def __init__(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(mode)
        self.mode = mode
        self.port = 0
        self.counter = 0
        self.listening: Any = None  # the websockets server, once started (`dies` stops it)

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/v1/responses"

    async def handler(self, ws: ServerConnection) -> None:
        silent = self.mode == "swallow-errors"
        async for message in ws:
            if self.mode == "quirks" and isinstance(message, bytes):
                await ws.close(1011, "binary frames are not supported")  # a clean close frame
                return
            try:
                frame = json.loads(message)
            except ValueError:
                if not silent:
                    error = {"type": "error", "status": 400, "error": _err("bad")}
                    await ws.send(json.dumps(error))
                continue
            if frame.get("type") != "response.create":
                if not silent:
                    error = {"type": "error", "status": 400, "error": _err("type")}
                    await ws.send(json.dumps(error))
                continue
            if silent and frame.get("previous_response_id"):
                continue  # the upstream's previous_response_not_found, swallowed
            if self.mode == "quirks" and frame.get("previous_response_id"):
                error = {"type": "error", "status": 400, "error": _err("not_found")}
                await ws.send(json.dumps(error))  # a code of its own; the socket stays open
                continue
            self.counter += 1
            events = canned_events(f"resp_canned{self.counter}")
            if self.mode in ("endless", "drip") and self.counter > 2:
                await self.never_finish(ws, events)
                return
            if self.mode == "dies" and self.counter > 2:
                self.listening.close(close_connections=False)  # no new connection is accepted
                for connection in list(self.listening.connections):
                    connection.transport.abort()  # the process is gone: no close frame
                return
            if self.mode == "never-stops":
                events = never_stopping_events(events, frame.get("max_output_tokens"))
            if self.mode == "gateway":
                events = gateway_events(events, frame)
            if self.mode == "quirks":
                events = without_members(events, "metadata")
            if self.mode == "usage-in-created":
                events[0]["response"] = {**events[0]["response"], "usage": {"total_tokens": 0}}
            if self.mode == "no-answer" or (self.mode == "goes-silent" and self.counter > 1):
                continue
            for index, event in enumerate(events):
                if self.mode == "slow":
                    await asyncio.sleep(SLOW_EVENT_S)
                if index == 2 and self.mode == "stall":
                    await asyncio.sleep(3600)
                if index == 2 and self.mode == "garbage":
                    await ws.send("this is {not json")
                    break
                if index == 2 and self.mode == "close":
                    await ws.close(1011, "canned close")
                    return
                if index == 2 and self.mode == "binary":
                    await ws.send(b"\x00\x01binary")
                    break
                await ws.send(json.dumps(event))

    async def never_finish(self, ws: ServerConnection, events: list[dict[str, Any]]) -> None:
        """The events up to the first delta, then more deltas forever (no terminal)."""
        head = events[:4]
        delta = dict(events[4])
        for event in head:
            await ws.send(json.dumps(event))
        pause = ENDLESS_DELTA_S if self.mode == "endless" else DRIP_DELTA_S
        with contextlib.suppress(ConnectionClosed):  # until the client gives up
            for seq in itertools.count(len(head)):
                await ws.send(json.dumps({**delta, "delta": "and ", "sequence_number": seq}))
                await asyncio.sleep(pause)


def never_stopping_events(events: list[dict[str, Any]], cap: Any) -> list[dict[str, Any]]:
    """A text response that runs to `cap` one-token deltas (NO_CAP_TOKENS without a cap) and
    ends response.incomplete, reason max_output_tokens: a model that never stops on its own."""
    tokens = cap if isinstance(cap, int) and cap > 0 else NO_CAP_TOKENS
    text = "and " * tokens
    head, delta = events[:4], events[4]
    deltas = [{**delta, "delta": "and "} for _ in range(tokens)]
    tail = [dict(e) for e in events[5:]]
    tail[0]["text"] = text
    tail[1]["part"] = {**tail[1]["part"], "text": text}
    item = tail[2]["item"]
    done_item = {**item, "status": "incomplete", "content": [tail[1]["part"]]}
    tail[2] = {**tail[2], "item": done_item}
    response = tail[3]["response"]
    usage = {**response["usage"], "output_tokens": tokens, "total_tokens": 5 + tokens}
    tail[3] = {
        "type": "response.incomplete",
        "response": {
            **response,
            "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
            "output": [done_item],
            "usage": usage,
        },
    }
    shaped = [*head, *deltas, *tail]
    for seq, event in enumerate(shaped):
        event["sequence_number"] = seq
    return shaped


def _err(code: str) -> dict[str, Any]:
    return {"type": "invalid_request_error", "code": code, "message": code, "param": None}


class GatewayProxy:
    """A gateway that warms up without response.in_progress (module docstring)."""

    def __init__(self, upstream_ws_url: str) -> None:
        self.upstream = upstream_ws_url
        self.port = 0
        self.warmups = 0  # warm-ups answered without in_progress

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/v1/responses"

    async def handler(self, ws: ServerConnection) -> None:
        key = ws.request.headers.get("Authorization") if ws.request is not None else None
        headers = {"Authorization": key} if key else None
        async with connect(self.upstream, additional_headers=headers, max_size=None) as upstream:
            warm_ups: list[bool] = []  # one per create sent, in order (the lane is FIFO)

            async def to_upstream() -> None:
                async for message in ws:
                    try:
                        frame = json.loads(message)
                    except ValueError:
                        frame = None
                    if isinstance(frame, dict) and frame.get("type") == "response.create":
                        warm_ups.append(frame.get("generate") is False)
                    await upstream.send(message)
                await upstream.close()

            async def to_client() -> None:
                dropped = 0
                async for message in upstream:
                    event = json.loads(message)
                    kind = event.get("type")
                    warm = bool(warm_ups) and warm_ups[0]
                    if kind == "response.created":
                        dropped = 0
                    if warm and kind == "response.in_progress":
                        dropped += 1
                        continue
                    if isinstance(event.get("sequence_number"), int):
                        event["sequence_number"] -= dropped
                    refused = kind == "error" and "sequence_number" not in event
                    if warm_ups and (kind in TERMINAL_TYPES or refused):
                        self.warmups += warm_ups.pop(0)
                    await ws.send(json.dumps(event))

            tasks = [asyncio.create_task(to_upstream()), asyncio.create_task(to_client())]
            try:
                await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in tasks:
                    task.cancel()


@contextmanager
def running_gateway(upstream_ws_url: str) -> Iterator[GatewayProxy]:
    """Start a GatewayProxy in front of `upstream_ws_url` in a thread; stop it afterwards."""
    with _serving(GatewayProxy(upstream_ws_url)) as gateway:
        yield gateway


@contextmanager
def running(mode: str) -> Iterator[CannedServer]:
    """Start a CannedServer on a free loopback port in a thread; stop it afterwards."""
    with _serving(CannedServer(mode)) as server:
        yield server


Served = TypeVar("Served", CannedServer, GatewayProxy)


@contextmanager
def _serving(server: Served) -> Iterator[Served]:
    ready = threading.Event()
    stop: dict[str, Any] = {}

    async def main() -> None:
        async with serve(server.handler, "127.0.0.1", 0, compression=None) as ws_server:
            server.port = next(iter(ws_server.sockets)).getsockname()[1]
            if isinstance(server, CannedServer):
                server.listening = ws_server
            stop["event"] = asyncio.Event()
            stop["loop"] = asyncio.get_running_loop()
            ready.set()
            await stop["event"].wait()
            ws_server.close(close_connections=False)
            for connection in list(ws_server.connections):
                connection.transport.abort()

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    if not ready.wait(10):
        raise RuntimeError("test server did not start")
    try:
        yield server
    finally:
        stop["loop"].call_soon_threadsafe(stop["event"].set)
        thread.join(10)
