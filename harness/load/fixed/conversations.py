"""What one `wsmode load` client process sends and measures: conversations of fixed-shape
requests (harness.load.fixed.load_spec) through the load engine's scheduler and sessions.

A *conversation* is `turns` requests, each turn carrying a fresh user message of the same
shape: on one connection (ws) or one chain (http-chained) each turn is chained to the previous
response with `previous_response_id`; over `http` each turn resends the whole conversation so
far (every earlier user message and answer, then the new message), as a stateless client does.
So the three modes do the same work turn by turn, and the table's input tokens per turn show
it. Two schedules (harness.load.core.schedule):

- closed loop (no rate): `concurrency` conversations in flight, a new one as soon as one ends;
- open loop (`rate_per_s`, Poisson arrivals of requests): each arrival takes an idle
  conversation (or starts one), at most `concurrency` in flight. A request that waits for a free
  slot is measured from its intended start, so a saturated client shows up as latency, never as
  a lower rate (no coordinated omission).

Stops at `requests` sent or after `duration_s` (requests then in flight finish and count), or
when a liveness probe finds the target dead: after a request that timed out or whose connection
was refused, reset or dropped (harness.load.core.target_watch.TargetWatch).
A request succeeds when it completes, or ends `incomplete` because it reached
`max_output_tokens` (what the limit asks for); anything else is a failure, counted apart by
reason. Measurement is the engine's (`fill_metrics`): TTFT to the first content token, TTFE,
ITL gaps, TPOT and e2e (`harness.protocol.timing_marks`). The process fan-out is in
`harness.load.fixed.processes`.
"""

from __future__ import annotations

import itertools
import math
import random
import resource
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.errors import TransportError
from harness.load.core.exchange_outcome import capped_exchange_error, fill_metrics
from harness.load.core.measurements import TurnResult
from harness.load.core.replay_options import ReplayOptions
from harness.load.core.results_document import record_turn
from harness.load.core.schedule import LoadPattern
from harness.load.core.session import Session
from harness.load.core.target_watch import TargetWatch
from harness.load.fixed.load_spec import LoadSpec, request_body
from harness.protocol.items import history_item
from harness.results.histograms import MetricSet
from harness.transport.liveness_probe import PROBE_TIMEOUT_S


@dataclass
class ShardResult:
    """One process's measurements; `to_json`/`from_json` carry it across the process boundary."""

    metrics: MetricSet = field(default_factory=MetricSet)
    ok: int = 0
    failed: Counter[str] = field(default_factory=Counter)
    output_tokens: int = 0
    input_tokens: int = 0
    cached_tokens: int = 0  # as the target reported them (0 when it reports none)
    started_ns: int = 0  # time.monotonic_ns(): one clock for every process on the machine
    ended_ns: int = 0
    sent: int = 0  # requests whose body reached the socket
    sending_s: float = 0.0  # first intended start -> last actual send (open loop: the rate)
    cpu_s: float = 0.0  # user + system CPU of this process over the run
    samples: list[dict[str, Any]] = field(default_factory=list)
    stopped: str = ""  # why the run ended early: a probe found the target dead mid-run
    tally: Any = field(default=None, repr=False, compare=False)  # live [ok, failed] (run_shard)
    # --metrics-port: each request's start and end (harness.load.live_metrics ModeFeed/QueueFeed)
    live: Any = field(default=None, repr=False, compare=False)

    def add(self, turn: TurnResult, keep_samples: int, *, open_loop: bool = False) -> None:
        """An ended request; open loop: its wait for a free slot goes into `queue_ms` (0 too)."""
        if turn.ok:
            self.ok += 1
            if open_loop:
                self.metrics.record_ms("queue_ms", turn.start_lag_ms)
            self.output_tokens += turn.output_tokens
            self.input_tokens += turn.context_tokens
            self.cached_tokens += turn.cached_tokens or 0
            record_turn(self.metrics, turn)
        else:
            self.failed[_reason(turn.error)] += 1
        if len(self.samples) < keep_samples:
            self.samples.append(turn.to_sample())
        if self.tally is not None:  # the live progress line reads these (processes)
            self.tally[0] = self.ok
            self.tally[1] = sum(self.failed.values())

    def note_sent(self, sent_ns: int, start_ns: int) -> None:
        """A request reached the socket at `sent_ns` (perf_counter), `start_ns` the loop's
        start: counts it and widens the sending window."""
        if sent_ns:
            self.sent += 1
            self.sending_s = max(self.sending_s, (sent_ns - start_ns) / 1e9)

    def merge(self, other: ShardResult) -> None:
        """Add `other` in: histograms merged without loss, counts summed, window widened."""
        self.metrics.merge(other.metrics)
        self.ok += other.ok
        self.failed.update(other.failed)
        self.output_tokens += other.output_tokens
        self.input_tokens += other.input_tokens
        self.cached_tokens += other.cached_tokens
        self.sent += other.sent
        self.sending_s = max(self.sending_s, other.sending_s)
        starts = [n for n in (self.started_ns, other.started_ns) if n]
        self.started_ns = min(starts) if starts else 0
        self.ended_ns = max(self.ended_ns, other.ended_ns)
        self.cpu_s += other.cpu_s
        self.samples.extend(other.samples)
        self.stopped = self.stopped or other.stopped

    def to_json(self) -> dict[str, Any]:
        return {
            "metrics": self.metrics.to_dict(),
            "ok": self.ok,
            "failed": dict(self.failed),
            "output_tokens": self.output_tokens,
            "input_tokens": self.input_tokens,
            "cached_tokens": self.cached_tokens,
            "sent": self.sent,
            "sending_s": self.sending_s,
            "started_ns": self.started_ns,
            "ended_ns": self.ended_ns,
            "cpu_s": self.cpu_s,
            "samples": self.samples,
            "stopped": self.stopped,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ShardResult:
        return cls(
            MetricSet.from_dict(data["metrics"]),
            int(data["ok"]),
            Counter({str(k): int(v) for k, v in data["failed"].items()}),
            int(data["output_tokens"]),
            int(data["input_tokens"]),
            int(data["cached_tokens"]),
            int(data["started_ns"]),
            int(data["ended_ns"]),
            int(data["sent"]),
            float(data["sending_s"]),
            float(data["cpu_s"]),
            list(data["samples"]),
            str(data.get("stopped", "")),
        )


def _reason(error: str | None) -> str:
    """The failure's kind without its details (`transport: ...`, `request error 400 ...`)."""
    text = error or "failed"
    return text.split(":", 1)[0] if text.startswith("transport") else text[:80]


class _Conversation:
    """A connection (ws) or chain (http-chained) serving `turns` requests, one at a time."""

    def __init__(self, spec: LoadSpec, number: int, watch: TargetWatch) -> None:
        self.spec = spec
        self.number = number
        self.watch = watch  # shared by the shard: a probe after a timeout, dead ends the run
        self.options = ReplayOptions(mode=spec.mode, turn_timeout_s=spec.timeout_s)
        self.session = Session(spec.endpoint, self.options)
        self.previous_id: str | None = None
        self.history: list[dict[str, Any]] = []  # http: the conversation so far, resent whole
        self.turns_done = 0
        self.opened = False
        self.broken = False
        self.last_sent_ns = 0  # perf_counter_ns when the last request's body was sent

    @property
    def finished(self) -> bool:
        return self.broken or self.turns_done >= self.spec.turns

    async def request(self, rng: random.Random, shard: int, intended_ns: int) -> TurnResult:
        turn = TurnResult(f"p{shard}-c{self.number}", self.spec.mode, self.turns_done, ok=False)
        self.turns_done += 1
        self.last_sent_ns = 0
        try:
            if not self.opened:
                self.opened = True
                await self.session.open()
            body = request_body(self.spec, rng, self.previous_id if self.spec.chained else None)
            if self.spec.resends_history:
                body["input"] = [*self.history, *body["input"]]
            done = await self.watch.race(self.session.exchange(body))
            if done is None:  # a probe found the target dead while this one was in flight
                return _failed(turn, f"given up: {self.watch.dead_reason}", self)
            exchange, turn.bytes_sent, turn.bytes_received = done
            self.last_sent_ns = exchange.sent_ns
        except (TransportError, OSError) as exc:  # refused, reset, no handshake
            await self.ask_watch()  # a target that died refuses every request: one probe decides
            return _failed(turn, f"transport: {exc}", self)
        if exchange.transport_error is not None:  # silence, an endless stream, a dropped socket
            await self.ask_watch()
        # completed, or stopped at the max_output_tokens asked for: both succeed
        error = capped_exchange_error(exchange)
        if error is not None:
            return _failed(turn, error, self)
        fill_metrics(turn, exchange, 0)
        lag_ms = max(0.0, (exchange.sent_ns - intended_ns) / 1e6) if intended_ns else 0.0
        _add_lag(turn, lag_ms)
        turn.ok = True
        self.previous_id = exchange.response_id
        if self.spec.resends_history and exchange.response is not None:
            answers = (
                history_item(i, include_reasoning=False) for i in exchange.response.output_items()
            )
            self.history = [*body["input"], *(a for a in answers if a is not None)]
        return turn

    async def ask_watch(self) -> None:
        """Does the target still answer? (one probe at a time decides, for the whole shard)"""
        spec = self.spec
        url = spec.endpoint.for_mode(spec.mode)
        await self.watch.after_failure(url, spec.mode, spec.model, spec.endpoint.api_key)

    async def close(self) -> None:
        if self.opened:
            await self.session.close()


def _failed(turn: TurnResult, error: str, conversation: _Conversation) -> TurnResult:
    turn.error = error
    conversation.broken = True  # a broken chain or socket is not reused
    return turn


def _add_lag(turn: TurnResult, lag_ms: float) -> None:
    """An open-loop request waiting for a slot: measured from when it was due."""
    if not lag_ms:
        return
    turn.start_lag_ms = lag_ms
    for name in ("ttft_ms", "ttfe_ms", "turn_e2e_ms"):
        value = getattr(turn, name)
        if value is not None:
            setattr(turn, name, value + lag_ms)


class _Budget:
    """Who may send the next request: the count and the deadline, shared by the workers."""

    def __init__(self, spec: LoadSpec, watch: TargetWatch) -> None:
        self.watch = watch  # once a probe found the target dead, no request is taken
        self.remaining = spec.requests if spec.requests is not None else math.inf
        self.deadline = (
            time.monotonic() + spec.duration_s if spec.duration_s is not None else math.inf
        )

    def take(self) -> bool:
        if self.watch.dead_reason is not None:
            return False
        if self.remaining <= 0 or time.monotonic() >= self.deadline:
            return False
        self.remaining -= 1
        return True


class Tally(Protocol):
    """Where a shard keeps its running counts for a live progress line: [ok, failed]."""

    def __setitem__(self, index: int, value: int, /) -> None: ...


class _Conversations:
    """The shard's conversations, the engine's runner: a request takes an idle conversation (or
    starts one) and gives it back, unless that was its last turn. A closed-loop worker takes back
    the conversation it just gave (nothing runs in between), so each worker keeps its own."""

    def __init__(
        self, spec: LoadSpec, shard: int, rng: random.Random, watch: TargetWatch, out: ShardResult
    ) -> None:
        self.spec, self.shard, self.rng, self.watch, self.out = spec, shard, rng, watch, out
        self.idle: list[_Conversation] = []
        self.open: set[_Conversation] = set()
        self.numbers = itertools.count()
        self.start_ns = time.perf_counter_ns()

    async def request(self, _: bool, intended_ns: int | None) -> None:
        """One request; `intended_ns` (open loop) is when it was due."""
        if self.idle:
            conversation = self.idle.pop()
        else:
            conversation = _Conversation(self.spec, next(self.numbers), self.watch)
            self.open.add(conversation)
        live = self.out.live
        if live is not None:
            live.started()
        turn = await conversation.request(self.rng, self.shard, intended_ns or 0)
        if live is not None:
            live.ended(turn)
        self.out.add(turn, self.spec.keep_samples, open_loop=intended_ns is not None)
        self.out.note_sent(conversation.last_sent_ns, self.start_ns)
        if conversation.finished:
            self.open.discard(conversation)
            await conversation.close()
        else:
            self.idle.append(conversation)

    async def close(self) -> None:
        for conversation in list(self.open):
            await conversation.close()
        self.open.clear()
        self.idle.clear()


async def run_shard(
    spec: LoadSpec, shard: int = 0, tally: Tally | None = None, live: Any = None
) -> ShardResult:
    """Run this process's share of the load; never raises for the target's misbehaviour.

    The requests go through the engine's scheduler (harness.load.core.schedule): the closed
    loop, or with a rate the open loop, its arrivals drawn from the same seeded source as the
    prompts. `tally` (a list, or a shared array across processes) gets the counts as requests
    end; `live` (--metrics-port) each request's start and end."""
    out = ShardResult(tally=tally, live=live)
    rng = random.Random(spec.seed)
    # the probe after a timed-out request: at most the request timeout (a short one tests fast)
    budget = _Budget(spec, TargetWatch(probe_timeout_s=min(PROBE_TIMEOUT_S, spec.timeout_s)))
    pattern = LoadPattern(concurrency=spec.concurrency, rate_per_s=spec.rate_per_s)
    cpu0 = _cpu_s()
    out.started_ns = time.monotonic_ns()
    conversations = _Conversations(spec, shard, rng, budget.watch, out)
    try:  # the budget ends the requests: in flight then, they finish and count
        await pattern.run(iter(budget.take, False), conversations.request, rng=rng)
    finally:
        await conversations.close()
        if live is not None:
            live.flush()
    out.ended_ns = time.monotonic_ns()
    out.cpu_s = _cpu_s() - cpu0
    watch = budget.watch  # why the run ended early: classified like the pre-run check, if it can
    out.stopped = (watch.problem.line() if watch.problem else watch.dead_reason) or ""
    return out


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
