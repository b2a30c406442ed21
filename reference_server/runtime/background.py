"""Background responses over HTTP (PROTOCOL.md §5.5): a create with `background: true` runs
on its own task, apart from the request that started it.

The create is answered as soon as the response exists (`queued`, `background: true`), as JSON or
as the head of an SSE stream; the turn runs on. `GET /v1/responses/{id}` answers its latest
state, `?stream=true&starting_after=N` replays its events after sequence number N and follows it
to its end, and `POST /v1/responses/{id}/cancel` stops it (`cancelled`). The run's events are
those of any turn with the API's background start: `response.created` with status `queued`,
then `response.queued`, then the turn's own from `response.in_progress` on, renumbered.
Runs are kept per tenant, the newest `MAX_RUNS`, so a stream can be resumed after its end.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final

from harness.protocol import errors
from harness.protocol.events import Event
from harness.protocol.requests import CreateRequest
from reference_server.pipeline.outbox import Send
from reference_server.pipeline.refusals import RequestRefused

log = logging.getLogger(__name__)

MAX_RUNS: Final = 1024  # runs remembered for polling and resuming [I]
TERMINAL_STATUSES: Final = frozenset({"completed", "failed", "incomplete", "cancelled"})


class BackgroundRun:
    """One background response: its events so far, its latest Response, its task."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.response: dict[str, Any] = {}
        self.task: asyncio.Task[None] | None = None
        self.done = False
        self._changed = asyncio.Event()
        self.started = asyncio.get_running_loop().create_future()  # set by the first event

    @property
    def response_id(self) -> str:
        return str(self.response.get("id", ""))

    async def send(self, *events: Event) -> None:
        """The turn's `send`: its events, renumbered after the queued start."""
        for event in events:
            event = dict(event)
            if not self.events and event.get("type") == "response.created":
                queued = copy.deepcopy(event["response"])
                queued["status"] = "queued"
                event["response"] = queued
                self._append(event)
                queued_event = {"type": "response.queued", "sequence_number": 0}
                self._append(queued_event | {"response": copy.deepcopy(queued)})
                if not self.started.done():
                    self.started.set_result(None)
                continue
            self._append(event)

    def _append(self, event: dict[str, Any]) -> None:
        if "sequence_number" in event:
            event["sequence_number"] = len(self.events)
        self.events.append(event)
        response = event.get("response")
        if isinstance(response, dict):
            self.response = response
        self._changed.set()

    def finish(self, status: str | None = None) -> None:
        """The run is over; `status` overrides the last one (a cancel)."""
        if status is not None:
            self.response = {**self.response, "status": status}
        self.done = True
        self._changed.set()

    async def follow(self, after: int) -> AsyncIterator[list[Event]]:
        """The events after sequence number `after` as they come, until the run is over."""
        sent = max(after + 1, 0)
        while True:
            if sent < len(self.events):
                batch, sent = self.events[sent:], len(self.events)
                yield batch
                continue
            if self.done:
                return
            self._changed.clear()
            await self._changed.wait()


class BackgroundRuns:
    """Every background run of a server, by tenant and response id."""

    def __init__(self) -> None:
        self._runs: OrderedDict[tuple[str, str], BackgroundRun] = OrderedDict()

    def get(self, tenant: str, response_id: str) -> BackgroundRun | None:
        return self._runs.get((tenant, response_id))

    async def start(
        self, tenant: str, request: CreateRequest, run_turn: Callable[[Send], Awaitable[object]]
    ) -> BackgroundRun:
        """Start `run_turn(send)` (the turn of `request`) on its own task; return once its
        response exists. Raises RequestRefused as a create does (nothing is started then)."""
        if not request.store:  # it must outlive the request, to be polled
            raise RequestRefused(
                errors.invalid_request(
                    "Background mode requires 'store' to be true.", param="store"
                )
            )
        run = BackgroundRun()

        async def work() -> None:
            try:
                await run_turn(run.send)
            except RequestRefused as refused:
                if not run.started.done():
                    run.started.set_exception(refused)
            except asyncio.CancelledError:
                pass  # cancelled: `cancel` says how it ended
            except Exception:  # a bug costs this response, never the server
                log.exception("background response failed inside the server")
                run.finish("failed")
            finally:
                if not run.started.done():
                    run.started.set_exception(RequestRefused(errors.server_error()))
                run.done = True
                run.finish()

        run.task = asyncio.get_running_loop().create_task(work())
        await run.started  # raises the refusal
        self._runs[(tenant, run.response_id)] = run
        while len(self._runs) > MAX_RUNS:
            _, oldest = self._runs.popitem(last=False)
            if oldest.task is not None and not oldest.done:
                oldest.task.cancel()
        return run

    async def cancel(self, tenant: str, response_id: str) -> dict[str, Any] | None:
        """Stop a run (a finished one stays as it ended); its Response, or None if unknown."""
        run = self.get(tenant, response_id)
        if run is None:
            return None
        if not run.done and run.task is not None:
            run.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await run.task
            run.finish("cancelled")
        return run.response

    def stop_all(self) -> None:
        for run in self._runs.values():
            if run.task is not None and not run.done:
                run.task.cancel()
