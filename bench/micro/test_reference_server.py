"""reference_server: a continuation turn's CPU path, and the unscripted reply's planning.

The turn runs in process, with no socket and no event-loop wait: the server's `TurnRunner` on a
zero-cost profile with a scripted "ok", as the continuation bench
(`bench/ratios/reference_server_bench.py --only continuation`) drives it over a socket. Where that
bench's TTFT moves, these show whether the turn did. "First write" is the time from the frame's text
to the server's first write (the created, in_progress, item-start and first-delta events,
serialised); the client leaves at that write, so the turn stops there, as a server's does when its
client goes away, and each round runs the same next turn of an unchanged chain. "Whole turn" runs
every turn to its end and the chain grows by one per round.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.micro.inputs import corpus_bodies, in_loop, run_now
from harness.protocol import wire
from harness.protocol.cache import ResponseCache
from harness.protocol.events import Event
from harness.protocol.requests import CLIENT_EVENT_TYPES, CreateRequest
from reference_server.config import ServerConfig
from reference_server.cost_profiles import load_cost_profile
from reference_server.engine.engine import Engine, Seed
from reference_server.front.ws_session import read_frame
from reference_server.pipeline.admission import TurnAdmission
from reference_server.runtime.services import Services
from reference_server.runtime.turn import TurnContext, TurnOutcome, TurnRunner
from reference_server.state.conversation import Conversation

SCRIPT = {"script": [{"type": "message", "text": "ok"}]}
WARM_CHAIN, LONG_CHAIN = 300, 3000
WHOLE_TURN_ROUNDS = 300
# read between rounds of the cold-cache benchmark: what a server that waited for its client's
# next request finds in its CPU caches after the idle wake-up
_CACHE_SPOILER = bytearray(16 * 1024 * 1024)


class _ClientLeft(ConnectionError):
    """Raised by the first write: the server's turn ends as when its client goes away."""


def frame(turn: int, previous: str | None, scripted: bool = True) -> str:
    """The continuation frame the bench's client sends: one short user message (unscripted: no
    `wsmode` script, the server generates the reply, as for an SDK user)."""
    body: dict[str, Any] = {
        "type": "response.create",
        "model": "m",
        "input": [
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": f"turn {turn}"}],
            }
        ],
        "store": False,
        **({"wsmode": SCRIPT} if scripted else {}),
    }
    if previous is not None:
        body["previous_response_id"] = previous
    return wire.dumps(body)


async def _serialise(*events: Event) -> None:
    for event in events:
        wire.dumps_bytes(event)


async def _serialise_then_leave(*events: Event) -> None:
    for event in events:
        wire.dumps_bytes(event)
    raise _ClientLeft


class Chain:
    """One connection's cache holding a chain of continuation turns, and its next turn."""

    def __init__(self, services: Services, turns: int, scripted: bool = True) -> None:
        self.scripted = scripted
        self.runner = TurnRunner(services)
        self.cache: ResponseCache[Conversation] = ResponseCache(services.config.cache)
        self.previous: str | None = None
        self.length = 0
        for _ in range(turns):
            self.whole_turn()

    def _run(self, send: Any) -> TurnOutcome:
        # Each turn finds the admission gate open, as a server's turn does when the loop has
        # turned since the last one began (pipeline/admission.py): here every turn runs in one
        # loop iteration, so the gate of the turn before would make this one wait.
        self.runner.services.admission = TurnAdmission()
        message = frame(self.length, self.previous, self.scripted)
        started = time.perf_counter()
        request = read_frame(message, CLIENT_EVENT_TYPES, "ws")  # as the session reads it
        assert isinstance(request, CreateRequest)
        context = TurnContext("ws", "bench", self.cache, started, len(message), (), "bench")
        outcome: TurnOutcome = run_now(self.runner.run(request, context, send))
        return outcome

    def whole_turn(self) -> None:
        outcome = self._run(_serialise)
        self.previous = str(outcome.response["id"])
        self.length += 1

    def to_first_write(self) -> None:
        try:
            self._run(_serialise_then_leave)
        except _ClientLeft:
            return
        raise AssertionError("the turn ended without writing")


@pytest.fixture(scope="module")
def services() -> Iterator[Services]:
    with tempfile.TemporaryDirectory() as tmp:
        yield Services.build(ServerConfig(profile="zero", data_dir=Path(tmp), log_level="warning"))


@pytest.fixture(scope="module")
def long_chain(services: Services) -> Chain:
    return in_loop(lambda: Chain(services, LONG_CHAIN))


def test_turn_first_write_warm(benchmark: Any, services: Services) -> None:
    """Frame → first write of a continuation turn on a 300-turn chain, caches warm: the server's
    share of a WebSocket continuation's TTFT on a busy server."""

    def measure() -> None:
        chain = Chain(services, WARM_CHAIN)
        benchmark(chain.to_first_write)

    in_loop(measure)


def test_unscripted_turn_first_write_warm(benchmark: Any, services: Services) -> None:
    """As the warm one, the reply generated (no script): what an SDK or codex user's
    continuation costs the server to its first delta (bench/ratios/reference_server_bench.py's
    target row)."""

    def measure() -> None:
        chain = Chain(services, WARM_CHAIN, scripted=False)
        benchmark(chain.to_first_write)

    in_loop(measure)


def test_turn_first_write_cold(benchmark: Any, services: Services) -> None:
    """As the warm one, with a 16 MiB read between rounds (not timed): an agent's next request
    after its tool ran finds the server's CPU caches cold, so this is closer to the TTFT a real
    rollout sees than the warm figure."""

    def measure() -> None:
        chain = Chain(services, WARM_CHAIN)
        spoil = lambda: sum(_CACHE_SPOILER[::64])  # noqa: E731
        benchmark.pedantic(chain.to_first_write, setup=spoil, rounds=200, warmup_rounds=5)

    in_loop(measure)


def test_turn_first_write_long_chain(benchmark: Any, long_chain: Chain) -> None:
    """Frame → first write at turn 3,001 of a chain: what a long rollout's continuation costs
    (a chain's items and rendering grow in O(new items), so this should match the warm one)."""
    in_loop(lambda: benchmark(long_chain.to_first_write))


def test_turn_whole_warm(benchmark: Any, services: Services) -> None:
    """Frame → end of a continuation turn (terminal event written, post-inference work done),
    turns 301-600 of a chain: the server CPU one agent turn costs, what bounds turns/s."""

    def measure() -> None:
        chain = Chain(services, WARM_CHAIN)
        benchmark.pedantic(chain.whole_turn, rounds=WHOLE_TURN_ROUNDS, warmup_rounds=5)

    in_loop(measure)


def test_unscripted_turn_whole_warm(benchmark: Any, services: Services) -> None:
    """As the whole warm one, the reply generated (no script, ~150 tokens at the median): the
    back-to-back path of an SDK or codex user, the reply's rendering for the next turn
    included."""

    def measure() -> None:
        chain = Chain(services, WARM_CHAIN, scripted=False)
        benchmark.pedantic(chain.whole_turn, rounds=WHOLE_TURN_ROUNDS, warmup_rounds=5)

    in_loop(measure)


def test_turn_whole_long_chain(benchmark: Any, long_chain: Chain) -> None:
    """Frame → end of a continuation turn, turns 3,001-3,300 of one chain."""
    in_loop(lambda: benchmark.pedantic(long_chain.whole_turn, rounds=WHOLE_TURN_ROUNDS))
    assert long_chain.length >= LONG_CHAIN + 1


def test_unscripted_plan(benchmark: Any) -> None:
    """`Engine.plan` of an unscripted reply under the `production-like` profile (the bench's
    default): the tools and input size of the bundled corpus's longest rollout, tool choice
    auto, reasoning on: the model-free part of every generated turn (tool-call or message
    choice, synthesized arguments from the tools' JSON schemas, filler text, timing draws)."""
    continuation, _ = corpus_bodies()
    engine = Engine(load_cost_profile("production-like"), seed=1)
    turn = iter(range(10**9))

    def plan() -> Any:
        return engine.plan(
            seed=Seed(f"rollout-0 turn {next(turn)}"),  # a fresh draw each round
            input_tokens=40_000,
            cached_tokens=38_000,
            tools=continuation["tools"],
            tool_choice="auto",
            reasoning_effort="low",
        )

    result = benchmark(plan)
    assert result.items and result.output_tokens > 0
