"""Is the target still answering? One bounded probe on a fresh connection.

A case that stalled (certify, harness.conformance.runner.plugin) or a turn that timed out (the load
harness, harness.load.core) may mean a slow target or one that stopped answering: a black hole
that accepts the upgrade and never answers, or one that swallows error events. Either would make
every remaining case or turn wait out its own timeout, saying nothing new. The probe decides: on
a fresh connection a tiny `store: false` create must be answered (its terminal event, or an error
event: an error is an answer), each event within the event timeout, so a slow but live target
passes. With `check_errors`, a create naming an unknown `previous_response_id` must then get its
error event (a target that swallows errors does not pass). The budget bounds the whole probe.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from harness.errors import TransportError
from harness.protocol.errors import ApiError
from harness.protocol.events import TERMINAL_TYPES
from harness.protocol.requests import create_event
from harness.transport.exchange import Exchange, sse_exchange
from harness.transport.failures import TargetTimeout
from harness.transport.sse import SseClient
from harness.transport.ws import WsClient

PROBE_TIMEOUT_S: Final = 10.0  # certify's default event timeout
PROBE_PREVIOUS_ID: Final = "resp_wsmode_liveness_probe"
_PROBE_BODY: Final[dict[str, Any]] = {"input": "ping", "store": False, "max_output_tokens": 16}
# events that answer the plain create (an error is an answer too), and the invalid one
_ANSWER_TYPES: Final = TERMINAL_TYPES | {"error"}
_ERROR_TYPES: Final = frozenset({"error", "response.failed"})


class OpenWs(Protocol):
    """Opens the probe's fresh WebSocket (certify's opener records its frames in a wire log)."""

    def __call__(
        self, url: str, *, api_key: str | None, timeout_s: float
    ) -> Awaitable[WsClient]: ...


@dataclass(frozen=True, slots=True)
class ProbeOutcome:
    """What one probe saw. `failure` is None when the target answered; else why not, in words,
    with the transport error behind it (if any) and the stage it failed at: "connect" (the
    socket or the upgrade), "answer" (the plain create), "errors" (the error check), "budget"."""

    failure: str | None
    stage: str = ""
    error: TransportError | None = None
    answer_error: ApiError | None = None  # the plain create was answered with this error


async def probe(
    url: str,
    *,
    model: str,
    api_key: str | None = None,
    mode: str = "ws",
    event_timeout_s: float = PROBE_TIMEOUT_S,
    budget_s: float | None = None,
    check_errors: bool = False,
    open_ws: OpenWs = WsClient.connect,
) -> str | None:
    """None when the target answered; else why it is considered stopped.

    `mode` "ws" probes over a WebSocket opened by `open_ws`; any other mode (an HTTP one) with
    streaming POSTs to `url`. `budget_s` (default: `event_timeout_s`) bounds the whole probe but
    the closing of its connection, which is bounded on its own.
    """
    outcome = await probe_outcome(
        url,
        model=model,
        api_key=api_key,
        mode=mode,
        event_timeout_s=event_timeout_s,
        budget_s=budget_s,
        check_errors=check_errors,
        open_ws=open_ws,
    )
    return outcome.failure


async def probe_outcome(
    url: str,
    *,
    model: str,
    api_key: str | None = None,
    mode: str = "ws",
    event_timeout_s: float = PROBE_TIMEOUT_S,
    budget_s: float | None = None,
    check_errors: bool = False,
    open_ws: OpenWs = WsClient.connect,
    first_event: bool = False,
) -> ProbeOutcome:
    """`probe`, with what it saw (see `ProbeOutcome`). With `first_event` the plain create
    counts as answered by its first event (the pre-run check: is anyone there?)."""
    budget = event_timeout_s if budget_s is None else budget_s
    deadline = asyncio.get_running_loop().time() + budget
    one = _Probe(model, api_key, event_timeout_s, deadline, first_event)
    try:
        if mode == "ws":
            failure = await one.over_ws(url, open_ws, check_errors)
        else:
            failure = await one.over_http(url, check_errors)
    except TimeoutError:
        failure = f"the probe got no answer within {budget:g} s"
        one.seen.stage = one.seen.stage or "budget"
    seen = one.seen
    if failure is None:
        return ProbeOutcome(None, answer_error=seen.answer_error)
    return ProbeOutcome(failure, seen.stage, seen.error, seen.answer_error)


@dataclass(slots=True)
class _Seen:
    """What a probe saw on its way (filled as it goes, read by `probe_outcome`)."""

    stage: str = ""
    error: TransportError | None = None
    answer_error: ApiError | None = None


@dataclass(frozen=True, slots=True)
class _Probe:
    """One probe's creates, read and judged over either transport."""

    model: str
    api_key: str | None
    event_timeout_s: float
    deadline: float  # event loop time
    first_event: bool = False  # any event answers the plain create
    seen: _Seen = field(default_factory=_Seen)

    def body(self, *, invalid: bool) -> dict[str, Any]:
        extra = {"previous_response_id": PROBE_PREVIOUS_ID} if invalid else {}
        return {"model": self.model, **_PROBE_BODY, **extra}

    def no_terminal(self) -> str:
        return (
            f"a plain create got no terminal event (each event awaited {self.event_timeout_s:g} s)"
        )

    def no_error(self) -> str:
        return (
            f"an invalid create got no error event within {self.event_timeout_s:g} s "
            "(errors swallowed)"
        )

    async def over_ws(self, url: str, open_ws: OpenWs, check_errors: bool) -> str | None:
        seen = self.seen
        seen.stage = "connect"
        try:
            async with asyncio.timeout_at(self.deadline):
                client = await open_ws(url, api_key=self.api_key, timeout_s=self.event_timeout_s)
        except TransportError as exc:
            seen.error = exc
            return f"a fresh connection failed ({exc})"
        try:
            async with asyncio.timeout_at(self.deadline):
                seen.stage = "answer"
                await client.send_json(create_event(**self.body(invalid=False)))
                if not await self._answered(client, _ANSWER_TYPES):
                    return self.no_terminal()
                if check_errors:
                    seen.stage = "errors"
                    await client.send_json(create_event(**self.body(invalid=True)))
                    if not await self._answered(client, _ERROR_TYPES):
                        return self.no_error()
            return None
        except TransportError as exc:
            seen.error = exc
            return f"the probe's socket failed ({exc})"
        finally:  # outside the budget: a probe that got its answer is not undone by a slow close
            await client.close()

    async def _answered(self, client: WsClient, answers: frozenset[str]) -> bool:
        """Read until an event of `answers` (True), another terminal event or silence (False)."""
        while True:
            try:
                timed = await client.recv(self.event_timeout_s)
            except TargetTimeout:
                return False
            if timed.type == "error" and self.seen.stage == "answer":
                self.seen.answer_error = ApiError.from_event(timed.event)
            if timed.type in answers or (self.first_event and self.seen.stage == "answer"):
                return True
            if timed.type in TERMINAL_TYPES:
                return False

    async def over_http(self, url: str, check_errors: bool) -> str | None:
        sse = SseClient(
            url, api_key=self.api_key, timeout_s=self.event_timeout_s, max_connections=1
        )
        seen = self.seen
        try:
            async with asyncio.timeout_at(self.deadline):
                seen.stage = "answer"
                plain = await self._post(sse, invalid=False)
                seen.answer_error = plain.request_error
                if self.first_event and (plain.events or plain.request_error is not None):
                    return None
                if plain.transport_error is not None:
                    return self._http_failure(plain)
                if plain.request_error is None and plain.final_response is None:
                    return self.no_terminal()
                if check_errors:
                    seen.stage = "errors"
                    invalid = await self._post(sse, invalid=True)
                    if invalid.transport_error is not None:
                        return self._http_failure(invalid)
                    failed = invalid.response is not None and (
                        invalid.response.terminal_type == "response.failed"
                    )
                    if invalid.request_error is None and not failed:
                        return self.no_error()
            return None
        finally:
            await sse.close()

    async def _post(self, sse: SseClient, *, invalid: bool) -> Exchange:
        remaining_s = max(self.deadline - asyncio.get_running_loop().time(), 0.001)
        return await sse_exchange(sse, self.body(invalid=invalid), timeout_s=remaining_s)

    def _http_failure(self, exchange: Exchange) -> str:
        self.seen.error = exchange.transport_error
        if isinstance(exchange.transport_error, TargetTimeout):
            return self.no_terminal()
        return f"the probe's request failed ({exchange.transport_error})"
