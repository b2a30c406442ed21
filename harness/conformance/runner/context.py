"""What a case works with: the live target, recorded connections, and expectations.

A case is `async def test_x(ctx)`. It opens connections with `ctx.connect()`, sends requests
with `conn.create(ctx.body(...))`, and states expectations with `ctx.check(...)` (soft: recorded,
the case goes on) or `ctx.fail(...)` / the `expect_*` helpers (hard: the case stops). Stream
rules need no code in the case: every event any connection received went through the protocol
core's accumulator, and at the end the violations of the rules the case *judges* (`rules=` in its
declaration) become findings; violations of other rules are kept as notes, so one broken rule
fails the cases about it instead of every case.

Exceptions the target causes (stall, close, garbage, refused upgrade) become FAIL findings with
the wire log; any other exception is the harness's own bug and becomes ERROR.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, NoReturn

from harness.conformance.certificates.wirelog import DEFAULT_MAX_CHARS, WireLog
from harness.conformance.judges.case_exchange import CaseExchange, RecordingStream
from harness.conformance.judges.fifo import judge_fifo
from harness.conformance.judges.sdk_opinion import SdkReport, check_stream
from harness.conformance.model.rules import rule_level
from harness.conformance.model.verdict import CaseMeta, Finding, Outcome, unique
from harness.conformance.runner import bodies
from harness.conformance.runner.recording import RecordingHttp, RecordingWsClient, SseStream
from harness.conformance.targets.plan import LiveTarget
from harness.conformance.targets.profile import DEFAULT_RESPONSE_TIMEOUT_S
from harness.errors import TargetError, TransportError
from harness.protocol.accumulator import ResponseAccumulator, Violation
from harness.protocol.errors import ApiError
from harness.protocol.events import TERMINAL_TYPES, reached_output_cap
from harness.protocol.request_rules import judge_exchange
from harness.protocol.requests import create_event
from harness.protocol.stream import RequestError
from harness.results.schema import utc_now_iso
from harness.transport.failures import GarbageFrame, HttpStatusError, TargetClosed, TargetTimeout
from harness.transport.received import TimedEvent

Auth = Literal["key", "none", "wrong"]
WRONG_KEY = "sk-wsmode-wrong-key-0000"


def describe_error(error: ApiError) -> str:
    """An error event as a vendor reads it: `an error event (status 404, code
    model_not_found): The model 'x' does not exist`; absent members said so, never `0 None`."""
    status = f"status {error.status}" if error.status else "no status"
    code = f"code {error.code}" if error.code else "no code"
    message = error.message.strip() if error.message else "no message"
    return f"an error event ({status}, {code}): {message}"


class CaseFailed(TargetError):
    """A hard expectation failed; the finding is already recorded."""


class PreconditionNotMet(CaseFailed):
    """The target could not be brought into the state the case tests; already recorded."""


class SetupNotRun(PreconditionNotMet):
    """A setup this case needs already failed in another case: the case is not run."""


class NoTerminal(TargetTimeout):
    """A response that kept streaming (or dripping) past the response timeout, or past
    MAX_EVENTS_PER_RESPONSE events, without its terminal event: a target that never finishes."""


# A response of more events than this without a terminal is endless, however fast it streams:
# the harness's memory is not the bound (a real response of 32k output tokens stays below it).
MAX_EVENTS_PER_RESPONSE: Final = 100_000
CLOSE_BUDGET_S: Final = 5.0  # closing every connection of a case, all at once


class Unimplemented(TargetError):
    """The target does not declare what the case needs."""


class TargetStopped(TargetError):
    """An earlier case found the target no longer answering: this case is not run."""


class Conn:
    """One recorded WebSocket connection of a case."""

    def __init__(self, ctx: CaseContext, client: RecordingWsClient, label: str) -> None:
        self.ctx = ctx
        self.client = client
        self.label = label
        self.stream = RecordingStream()

    @property
    def is_open(self) -> bool:
        return self.client.is_open

    async def send(self, body: Mapping[str, Any]) -> CaseExchange:
        """Send one response.create without waiting; read it later with `read()`."""
        payload = create_event(**body)
        exchange = CaseExchange(dict(payload), time.perf_counter_ns())
        exchange.bytes_sent = await self.client.send_json(payload)
        return exchange

    async def read(self, exchange: CaseExchange, *, timeout_s: float | None = None) -> CaseExchange:
        """Read until this exchange's response ends or its request error arrives.

        A terminal event ends the exchange even when the accumulator refused it (a response
        without response.created never reaches the DONE phase): the violations are recorded,
        and the case goes on instead of waiting for a terminal that already came. A terminal
        that is the first event of its accumulator is a stray (a second terminal of the
        previous response) and does not end it.

        Each event is awaited at most the event timeout (silence: `transport.stall`); the whole
        response at most `timeout_s` (default: the response timeout), so a target that streams
        forever or drips a delta every few seconds ends the case (`transport.endless`) instead
        of holding it to the case timeout.
        """
        budget = timeout_s if timeout_s is not None else self.ctx.response_timeout_s
        deadline = time.monotonic() + budget
        while True:
            remaining = deadline - time.monotonic()
            if exchange.events and (
                remaining <= 0 or len(exchange.events) >= MAX_EVENTS_PER_RESPONSE
            ):
                raise NoTerminal(_no_terminal(exchange, budget))
            try:
                timed = await self.client.recv(max(min(remaining, self.ctx.event_timeout_s), 0.001))
            except TargetTimeout:
                if exchange.events and deadline - time.monotonic() <= 0:
                    raise NoTerminal(_no_terminal(exchange, budget)) from None
                raise
            exchange.events.append(timed)
            routed = self.stream.feed(timed.event)
            if isinstance(routed, RequestError):
                exchange.request_error = routed.error
                return self._judged(exchange)
            if isinstance(routed, ResponseAccumulator):
                stray = routed.event_count == 1 and timed.type in TERMINAL_TYPES
                if stray:
                    continue
                exchange.response = routed
                if routed.done or timed.type in TERMINAL_TYPES:
                    exchange.terminal = timed.event
                    return self._judged(exchange)

    def _judged(self, exchange: CaseExchange) -> CaseExchange:
        """The field rules that need the request (echo, lane, wall clock), filed once."""
        events = [t.event for t in exchange.events]
        judge_exchange(exchange.request, events, exchange.response, self.stream, now_s=time.time())
        return exchange

    async def create(
        self, body: Mapping[str, Any], *, timeout_s: float | None = None
    ) -> CaseExchange:
        return await self.read(await self.send(body), timeout_s=timeout_s)

    async def send_event(self, event: Mapping[str, Any]) -> None:
        """Send any client event as is (a steer, an inject: PROTOCOL.md §2.2)."""
        await self.client.send_json(event)

    async def next_event(self, *, timeout_s: float | None = None) -> TimedEvent:
        timed = await self.client.recv(timeout_s or self.ctx.event_timeout_s)
        self.stream.feed(timed.event)
        return timed

    def lanes(self) -> LaneTraffic:
        """Read this connection's lanes as they interleave (from now on)."""
        return LaneTraffic(self)

    async def send_text(self, text: str) -> None:
        await self.client.send_text(text)

    async def send_bytes(self, data: bytes) -> None:
        await self.client.send_bytes(data)

    async def wait_closed(self, *, timeout_s: float | None = None) -> tuple[int | None, str]:
        return await self.client.wait_closed(timeout_s or self.ctx.event_timeout_s)

    async def close(self) -> None:
        await self.client.close()


@dataclass(frozen=True, slots=True)
class LaneAnswer:
    """How one create on a lane ended: its terminal event, or its request-level error."""

    lane: str | None  # the event's stream_id; None: the default lane (or none echoed)
    position: int  # index of the answering event in `LaneTraffic.arrivals`
    event: dict[str, Any]
    error: ApiError | None = None

    @property
    def response(self) -> dict[str, Any]:
        response = self.event.get("response") if self.error is None else None
        return response if isinstance(response, dict) else {}

    @property
    def completed(self) -> bool:
        """Answered: response.completed, or response.incomplete cut by max_output_tokens (every
        request a lanes case sends asks for a short answer, capped: `CaseContext.body`)."""
        kind = self.event.get("type")
        if self.error is not None or kind not in ("response.completed", "response.incomplete"):
            return False
        return kind == "response.completed" or reached_output_cap(self.response)

    def describe(self) -> str:
        if self.error is not None:
            status = f"{self.error.status} " if self.error.status else ""
            return f"error {status}{self.error.code}"
        return str(self.event.get("type"))


class LaneTraffic:
    """One connection's lanes, read as they interleave (PROTOCOL.md §5.2).

    Responses of different lanes share the socket, so a case cannot read one exchange at a time.
    This reads every event in arrival order, each through the connection's stream accumulator
    (the stream rules are judged per lane), files it under its lane (the event's `stream_id`;
    None for the default lane) and counts *answers*: a terminal event or a request-level error
    ends one create. Positions are indices in `arrivals`, so a case compares the order of events
    across lanes without trusting timestamps. Only events read through this object count.
    """

    def __init__(self, conn: Conn) -> None:
        self.conn = conn
        self.arrivals: list[tuple[str | None, TimedEvent]] = []
        self.answers: list[LaneAnswer] = []

    async def send(self, body: Mapping[str, Any]) -> None:
        await self.conn.send(body)

    async def read_answers(self, count: int, *, timeout_s: float | None = None) -> None:
        """Read until `count` answers have arrived in all (whatever their lanes)."""
        await self.read_until(lambda: len(self.answers) >= count, timeout_s=timeout_s)

    async def read_until(self, done: Callable[[], bool], *, timeout_s: float | None = None) -> None:
        """Read events until `done()` holds; each wait is bounded by the event timeout."""
        ctx = self.conn.ctx
        deadline = time.monotonic() + (timeout_s if timeout_s is not None else ctx.case_timeout_s)
        while not done():
            remaining = min(deadline - time.monotonic(), ctx.event_timeout_s)
            self._file(await self.conn.client.recv(max(remaining, 0.001)))

    def _file(self, timed: TimedEvent) -> None:
        event = timed.event
        stream_id = event.get("stream_id")
        lane = stream_id if isinstance(stream_id, str) else None
        routed = self.conn.stream.feed(event)
        position = len(self.arrivals)
        self.arrivals.append((lane, timed))
        if isinstance(routed, RequestError):
            self.answers.append(LaneAnswer(lane, position, dict(event), routed.error))
        elif timed.type in TERMINAL_TYPES:
            stray = isinstance(routed, ResponseAccumulator) and routed.event_count == 1
            if not stray:  # a second terminal of a finished response answers nothing
                self.answers.append(LaneAnswer(lane, position, dict(event)))

    # -- what arrived ----------------------------------------------------------------------------
    def answers_of(self, lane: str | None) -> list[LaneAnswer]:
        return [a for a in self.answers if a.lane == lane]

    def positions(self, lane: str | None, event_type: str | None = None) -> list[int]:
        """Where the events of `event_type` (default: any) on `lane` arrived, in order."""
        return [
            i
            for i, (on, timed) in enumerate(self.arrivals)
            if on == lane and (event_type is None or timed.type == event_type)
        ]

    def events_of(self, lane: str | None) -> list[tuple[int, dict[str, Any]]]:
        """The events of `lane` with their arrival positions."""
        return [(i, timed.event) for i, (on, timed) in enumerate(self.arrivals) if on == lane]

    def judge_fifo(self, lane: str | None, sent_tags: list[str], rule_id: str) -> None:
        """Record FIFO findings for `lane` (see harness.conformance.judges.fifo) in the case."""
        where = "the socket" if lane is None else f"lane {lane}"
        verdict = judge_fifo(self.events_of(lane), sent_tags, rule_id=rule_id, where=where)
        for rule, message in verdict.findings:
            self.conn.ctx.check(False, rule, message)
        for note in verdict.notes:
            self.conn.ctx.note(note)

    def first(self, lane: str | None, event_type: str | None = None) -> int | None:
        found = self.positions(lane, event_type)
        return found[0] if found else None

    def summary(self) -> str:
        """What each lane answered, for findings: `a: response.completed; b: error 400 ...`."""
        lanes: dict[str | None, list[str]] = {}
        for answer in self.answers:
            lanes.setdefault(answer.lane, []).append(answer.describe())
        parts = [f"{lane or '(default)'}: {', '.join(got)}" for lane, got in lanes.items()]
        return "; ".join(parts) or "no answers"


class CaseContext:
    def __init__(
        self,
        meta: CaseMeta,
        target: LiveTarget,
        *,
        event_timeout_s: float,
        case_timeout_s: float,
        response_timeout_s: float = DEFAULT_RESPONSE_TIMEOUT_S,
        wire_max_chars: int = DEFAULT_MAX_CHARS,
    ) -> None:
        self.meta = meta
        self.target = target
        self.profile = target.profile
        self.event_timeout_s = event_timeout_s
        self.case_timeout_s = case_timeout_s
        self.response_timeout_s = min(response_timeout_s, case_timeout_s)
        self.log = WireLog(max_chars=wire_max_chars)
        self.outcome = Outcome()
        self.conns: list[Conn] = []
        self.https: list[RecordingHttp] = []
        self.sse_responses: list[ResponseAccumulator] = []
        self.started_ns = self.log.start_ns
        self.started_at = utc_now_iso()
        self.duration_ms: float | None = None
        self.rule_ids_seen: list[str] = []

    # -- capabilities ----------------------------------------------------------------------------
    def require(self, *requirements: str) -> None:
        for requirement in requirements:
            reason = self.profile.missing(requirement)
            if reason is not None:
                raise Unimplemented(reason)

    # -- requests --------------------------------------------------------------------------------
    @property
    def model(self) -> str:
        return self.profile.model

    def body(self, input: Any = bodies.SHORT_PROMPT, **fields: Any) -> dict[str, Any]:
        """A response.create body: the target's model, store=false unless given, and output
        capped at SHORT_ANSWER_MAX_TOKENS unless given (`max_output_tokens=None`: no cap), so a
        model that does not stop on its own answers a short question in bounded time."""
        fields.setdefault("max_output_tokens", bodies.SHORT_ANSWER_MAX_TOKENS)
        if fields["max_output_tokens"] is None:
            del fields["max_output_tokens"]
        return {"model": self.model, "input": input, "store": False, **fields}

    def tool_body(self, **fields: Any) -> dict[str, Any]:
        """A request that makes any model call get_weather (tool_choice names it)."""
        fields.setdefault("tool_choice", {"type": "function", "name": "get_weather"})
        return self.body(bodies.WEATHER_PROMPT, tools=[bodies.WEATHER_TOOL], **fields)

    # -- connections -----------------------------------------------------------------------------
    def _key(self, auth: Auth) -> str | None:
        if auth == "none":
            return None
        if auth == "wrong":
            return WRONG_KEY
        return self.target.api_key

    async def connect(
        self,
        *,
        url: str | None = None,
        auth: Auth = "key",
        beta_header: bool = False,
        extra_headers: Mapping[str, str] | None = None,
    ) -> Conn:
        label = f"ws{len(self.conns) + 1}"
        client = await RecordingWsClient.open(
            url or self.target.ws_url,
            log=self.log,
            label=label,
            api_key=self._key(auth),
            beta_header=beta_header,
            extra_headers=extra_headers,
            timeout_s=self.event_timeout_s,
        )
        conn = Conn(self, client, label)
        self.conns.append(conn)
        return conn

    def http(self, *, auth: Auth = "key") -> RecordingHttp:
        if not self.target.http_url:
            raise Unimplemented("no HTTP endpoint declared (http_url)")
        client = RecordingHttp(
            self.target.http_url,
            api_key=self._key(auth),
            log=self.log,
            label=f"http{len(self.https) + 1}",
            timeout_s=self.event_timeout_s,
        )
        self.https.append(client)
        return client

    async def sse(
        self, body: Mapping[str, Any], *, http: RecordingHttp | None = None
    ) -> tuple[SseStream, ResponseAccumulator]:
        """Stream one request over SSE; returns the raw stream and its checked accumulator."""
        client = http or self.http()
        stream = await client.stream(body, total_timeout_s=self.event_timeout_s * 3)
        accumulator = ResponseAccumulator()
        for timed in stream.events:
            accumulator.feed(timed.event)
        if stream.status == 200:
            self.sse_responses.append(accumulator)
        return stream, accumulator

    # -- expectations ----------------------------------------------------------------------------
    def check(
        self, condition: bool, rule_id: str, message: str, *, event: Mapping[str, Any] | None = None
    ) -> bool:
        """A soft expectation: when false, record a finding and go on."""
        self.rule_ids_seen.append(rule_id)
        if not condition:
            seq = event.get("sequence_number") if event is not None else None
            self.outcome.findings.append(
                Finding(
                    rule_id, rule_level(rule_id), message, seq if isinstance(seq, int) else None
                )
            )
        return condition

    def fail(self, rule_id: str, message: str) -> NoReturn:
        """A hard expectation failed: record it and stop the case."""
        self.check(False, rule_id, message)
        raise CaseFailed(message)

    def note(self, message: str) -> None:
        self.outcome.notes.append(message)

    def precondition(self, condition: bool, message: str, *, setup: str | None = None) -> bool:
        """A soft setup check: when false the verdict is PRECONDITION (unless a finding was
        made), never a finding of the case's own rules; the case about that setup judges it.
        `setup` names it (model.SETUPS): the cases that need it are then not run."""
        if not condition and self.outcome.precondition is None:
            self.outcome.precondition = message
            self.outcome.failed_setup = setup
        return condition

    def expect_calls(self, exchange: CaseExchange, what: str) -> list[dict[str, Any]]:
        """The function calls a tool_choice turn must yield to set up the case; none stops the
        case as "precondition not met" (2.1.function-call.named judges tool_choice itself)."""
        calls = exchange.calls()
        if not self.precondition(
            bool(calls), f"{what}: the target answered without a call", setup="tool_call"
        ):
            raise PreconditionNotMet(self.outcome.precondition or what)
        return calls

    def inform(self, message: str) -> None:
        """Report a behaviour without judging it (the verdict becomes INFORMATIONAL)."""
        self.outcome.notes.append(message)
        self.outcome.informational = True

    def expect_completed(
        self, exchange: CaseExchange, rule_id: str, what: str = "the response"
    ) -> dict[str, Any]:
        """The exchange ended in response.completed; returns the final Response object."""
        if exchange.request_error is not None:
            error = exchange.request_error
            self.fail(rule_id, f"{what}: refused with {describe_error(error)}")
        final = exchange.final_response
        terminal = exchange.terminal_type
        if final is not None and terminal == "response.incomplete" and _cut_by_cap(exchange):
            # the cap this harness set stopped a model that does not stop on its own: answered
            cap = exchange.request.get("max_output_tokens")
            self.note(f"{what}: cut by the max_output_tokens {cap} it asked for: counted answered")
            return final
        if final is None or terminal != "response.completed":
            self.fail(rule_id, f"{what}: ended with {terminal or 'no terminal event'}")
        return final

    def expect_request_error(
        self,
        exchange: CaseExchange,
        rule_id: str,
        *,
        code: str | None = None,
        status: int | None = None,
        what: str = "the request",
    ) -> ApiError:
        """The exchange was refused with a request-level `error` event."""
        error = exchange.request_error
        if error is None:
            terminal = exchange.terminal_type
            self.fail(rule_id, f"{what}: expected an error event, got {terminal or 'nothing'}")
        if code is not None:
            self.check(
                error.code == code, "error.code", f"{what}: error code {error.code!r}, not {code!r}"
            )
        if status is not None:
            self.check(
                error.status == status,
                "error.status",
                f"{what}: error status {error.status or 'missing'}, expected {status}",
            )
        return error

    async def expect_usable(
        self, conn: Conn, rule_id: str = "request.error_socket_open", what: str = "after the error"
    ) -> dict[str, Any]:
        """The socket still serves a fresh request."""
        if not conn.is_open:
            self.fail(rule_id, f"{what}: the target closed the socket")
        try:
            exchange = await conn.create(self.body())
        except TargetClosed as exc:
            self.fail(rule_id, f"{what}: the socket closed ({exc.code} {exc.reason!r})")
        return self.expect_completed(exchange, rule_id, f"a request {what}")

    def sdk_check(self, events: list[TimedEvent], *, beta: bool = False) -> SdkReport:
        """The openai SDK's opinion of one response's events (and any request-level error
        events among them, validated as models only); findings recorded. `beta`: against the
        SDK's beta event union (steer and inject replies, agent tags; PROTOCOL.md §2.2)."""
        report = check_stream([t.event for t in events], beta=beta)
        self.rule_ids_seen.extend(("sdk.accumulate", "sdk.event_model"))
        if not report.available:
            self.inform("openai-python is not installed: the SDK check did not run")
        owned = set(self.meta.rules)
        for finding in report.findings:
            if finding.rule_id in owned:  # a case fails on its own rules only
                self.outcome.findings.append(finding)
            else:
                self.note(f"SDK also observed [{finding.rule_id}] {finding.message}")
        for note in unique(report.notes):
            self.note(f"SDK: {note}")
        return report

    # -- finishing -------------------------------------------------------------------------------
    def all_violations(self) -> list[Violation]:
        found: list[Violation] = []
        for conn in self.conns:
            found.extend(conn.stream.every_violation())
        for response in self.sse_responses:
            found.extend(response.violations)
        return found

    def absorb(self, exc: BaseException | None) -> Outcome:
        """Grade the run: map the exception (if any) and the stream violations to findings."""
        outcome = self.outcome
        if exc is not None and not isinstance(exc, CaseFailed):
            self._absorb_exception(exc)
        owned = set(self.meta.rules)
        other: dict[str, int] = {}
        for violation in self.all_violations():
            if violation.rule_id in owned:
                outcome.findings.append(
                    Finding(
                        violation.rule_id,
                        rule_level(violation.rule_id),
                        violation.message,
                        violation.sequence_number,
                    )
                )
            else:
                other[violation.rule_id] = other.get(violation.rule_id, 0) + 1
        for rule_id, count in other.items():
            outcome.notes.append(f"also observed {rule_id} x{count} (judged by its own case)")
        return outcome

    def _absorb_exception(self, exc: BaseException) -> None:
        outcome = self.outcome
        if isinstance(exc, Unimplemented):
            outcome.unimplemented = str(exc)
            return
        rule, message = _transport_rule(exc)
        if rule is not None:
            self.check(False, rule, message)
        elif isinstance(exc, AssertionError):
            self.check(False, "case.expectation", str(exc) or "assertion failed")
        else:
            frames = traceback.format_exception(type(exc), exc, exc.__traceback__)
            outcome.harness_error = f"{type(exc).__name__}: {exc}"
            self.note("traceback: " + "".join(frames[-3:]).strip())

    async def aclose(self) -> None:
        """Close every connection of the case at once, within CLOSE_BUDGET_S in all (a target
        that never answers a close costs the run seconds, not a minute per socket)."""

        async def close_one(conn: Conn) -> None:
            try:
                await conn.close()
            except Exception as exc:  # closing a broken socket must never mask the verdict
                self.log.note(conn.label, f"close failed: {type(exc).__name__}: {exc}")

        closing = [close_one(c) for c in self.conns] + [h.aclose() for h in self.https]
        try:
            async with asyncio.timeout(CLOSE_BUDGET_S):
                await asyncio.gather(*closing, return_exceptions=True)
        except TimeoutError:
            for conn in self.conns:
                conn.client.connection.transport.abort()
            self.log.note("", f"closing the case's connections took over {CLOSE_BUDGET_S:g} s")

    def result_rule_ids(self, outcome: Outcome) -> list[str]:
        """The case's declared rules, then every rule it found broken."""
        return unique([*self.meta.rules, *(f.rule_id for f in outcome.findings)])


def _cut_by_cap(exchange: CaseExchange) -> bool:
    """The response ended incomplete because it reached the max_output_tokens it was sent."""
    capped = exchange.request.get("max_output_tokens") is not None
    return capped and reached_output_cap(exchange.final_response)


def _transport_rule(exc: BaseException) -> tuple[str | None, str]:
    if isinstance(exc, TargetStopped):
        return "transport.stopped", str(exc)
    if isinstance(exc, NoTerminal):
        return "transport.endless", f"the target never finished a response: {exc}"
    if isinstance(exc, TimeoutError) and not isinstance(exc, TransportError):
        return "case.timeout", "the case did not finish within its time budget"
    if isinstance(exc, TargetTimeout):
        return "transport.stall", f"the target stalled: {exc}"
    if isinstance(exc, TargetClosed):
        return "transport.closed", f"the target closed the connection: {exc}"
    if isinstance(exc, GarbageFrame):
        return "transport.garbage", f"the target sent garbage: {exc}"
    if isinstance(exc, HttpStatusError):
        return "transport.refused", f"the target refused the request: HTTP {exc.status}"
    if isinstance(exc, TransportError):
        return "transport.error", str(exc)
    return None, ""


def _no_terminal(exchange: CaseExchange, budget_s: float) -> str:
    """Why a response that kept streaming was given up: its events, and since when."""
    count = len(exchange.events)
    if count >= MAX_EVENTS_PER_RESPONSE:
        return f"{count} events and no terminal event (the response never ends)"
    last = exchange.events[-1].type if exchange.events else "nothing"
    return (
        f"no terminal event within {budget_s:g} s: {count} events arrived (the last a "
        f"{last}), the response never ended"
    )
