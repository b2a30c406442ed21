"""Seeded, deterministic simulated inference: what a response will say and how fast.

:meth:`Engine.plan` turns a request's shape into a :class:`GenerationPlan`: the output items with
their token pieces, usage counts, the time to first token and the decode rate. It reads no clock
and does no I/O; the server emits the plan's pieces on an `emission.TokenSchedule`. Random
streams are derived from ``(engine seed, the request's Seed)`` with SHA-256: one for content, one
for queue/prefill jitter and one for the decode rate, so the same request produces the same output
in every process and under every profile (only its timing changes with the profile), and gets
the same burst decision and jitter whatever its cached-token split.

Content (without a script):

- No function tools, or ``tool_choice: "none"``: one assistant message of coding-agent prose and
  code. Its length in tokens is lognormal with median :data:`MESSAGE_MEDIAN_TOKENS` (150) and
  sigma :data:`MESSAGE_SIGMA` (1.0), clipped to [1, :data:`MESSAGE_MAX_TOKENS`] (2048):
  p10 ≈ 42, p90 ≈ 540, p99 ≈ 1540 tokens.
- ``tool_choice: "auto"`` with function tools: function calls with probability
  :data:`AUTO_CALL_PROBABILITY`, else a message. ``"required"``: at least one call.
  ``{"type": "function", "name": X}``: exactly one call to X. ``{"type": "allowed_tools", "mode":
  "auto"|"required", "tools": [...]}``: the same, over the listed function tools. More than one
  call (up to :data:`MAX_PARALLEL_CALLS`) only with ``parallel_tool_calls``. Arguments come from
  :mod:`reference_server.engine.argsynth` and validate against the tool's ``parameters``.
- ``reasoning_effort`` (other than ``"none"``): a reasoning item first, with a short summary and
  hidden reasoning tokens (lognormal around the effort's median in :data:`REASONING_EFFORTS`).

Scripted mode (``script`` given; trace replay): the output is exactly the listed items; tools,
``tool_choice`` and ``reasoning_effort`` are not consulted. See
:func:`reference_server.engine.scripted_output.validate_script`.

The pieces live in one module each of this package: the plan's types (`generation_plan`),
``tool_choice`` (`tool_choice`), scripts (`scripted_output`) and the seeded text
(`filler_text`); this module draws the content and the timing.

Token accounting: pieces come from the tokenizer's ``split()``, so ``len(pieces)`` is the token
count of the text. Each item occupies ``item.token_count`` consecutive slots of the token
schedule, in item order; a reasoning item's slots are its hidden tokens (no events) followed by
its summary pieces. ``output_tokens`` is the sum over items and includes ``reasoning_tokens``
(hidden + summary), as in the API's usage. ``max_output_tokens`` cuts the plan after that many
slots: later pieces and items are dropped and ``truncated`` is set.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar

from reference_server.engine.argsynth import UnsatisfiableSchema, synthesize_arguments
from reference_server.engine.cost_profile import Profile
from reference_server.engine.filler_text import (
    exact_split,
    filler_pieces_checked,
    reasoning_summary,
    warm_filler_pool,
)
from reference_server.engine.generation_plan import (
    GenerationPlan,
    PlanError,
    PlannedItem,
    seeded_call_id,
    truncate_items,
)
from reference_server.engine.scripted_output import scripted_items
from reference_server.engine.tool_choice import function_tools, resolve_tool_choice

if TYPE_CHECKING:
    from harness.protocol.requests import CreateRequest

__all__ = [
    "AUTO_CALL_PROBABILITY",
    "MAX_PARALLEL_CALLS",
    "MESSAGE_MAX_TOKENS",
    "MESSAGE_MEDIAN_TOKENS",
    "MESSAGE_SIGMA",
    "REASONING_EFFORTS",
    "Engine",
    "Seed",
]

MESSAGE_MEDIAN_TOKENS: Final = 150
MESSAGE_SIGMA: Final = 1.0
MESSAGE_MAX_TOKENS: Final = 2048
AUTO_CALL_PROBABILITY: Final = 0.7
MAX_PARALLEL_CALLS: Final = 4
_PARALLEL_COUNT_WEIGHTS: Final = (0.6, 0.25, 0.1, 0.05)  # P(k = 1, 2, 3, 4)

#: effort -> median hidden reasoning tokens (None: no reasoning item). Lognormal, sigma 0.6,
#: clipped to [1, 8 * median].
REASONING_EFFORTS: Final[Mapping[str, int | None]] = {
    "none": None,
    "minimal": 24,
    "low": 96,
    "medium": 320,
    "high": 1024,
    "xhigh": 2048,
}
_REASONING_SIGMA: Final = 0.6

_SEED_DOMAIN: Final = "wsmode-engine/v1"
T = TypeVar("T")
# json.dumps(basis, sort_keys=True, default=str), the same text without building an encoder
# per call (half the cost of hashing a seed)
_SEED_JSON = json.JSONEncoder(sort_keys=True, default=str)


class Seed:
    """What a turn's random streams derive from, besides the engine's own seed: its request.

    `Seed.of(request)` is the request's `wsmode.seed`, its model and what identifies its output:
    its script, else its newest input item. Never the whole input, which differs between a
    WebSocket continuation (new items only) and its stateless HTTP twin (the full history), so
    paired replays get identical draws on every transport. The text is hashed the first time a
    stream is drawn: a turn of a jitter-free profile with fixed text draws none (hashing every
    turn moved the continuation bench beyond its noise, issue 20). `Seed(text)` is given outright.
    """

    __slots__ = ("_basis", "_text")

    def __init__(self, text: str) -> None:
        self._text: str | None = text
        self._basis: tuple[int, str, object] = (0, "", None)

    @classmethod
    def of(cls, request: CreateRequest) -> Seed:
        seed = cls.__new__(cls)
        seed._text = None
        basis = request.script if request.script is not None else request.input[-1:]
        seed._basis = (request.seed if request.seed is not None else 0, request.model, basis)
        return seed

    @property
    def text(self) -> str:
        if self._text is None:
            number, model, basis = self._basis
            digest = hashlib.sha256(_SEED_JSON.encode(basis).encode()).hexdigest()
            self._text = f"{number}:{model}:{digest}"
        return self._text


# -- the engine -------------------------------------------------------------------------------


def _once(make: Callable[[], T]) -> Callable[[], T]:
    """`make()`, called the first time the result is asked for and remembered (a stream a plan
    may not draw from). functools.cache is slower to set up than seeding is to skip."""
    made: list[T] = []

    def value() -> T:
        if not made:
            made.append(make())
        return made[0]

    return value


class Engine:
    """Plans responses for one server; ``seed`` makes every plan reproducible."""

    def __init__(self, profile: Profile, seed: int = 0) -> None:
        self.profile = profile
        self.seed = seed
        warm_filler_pool()  # once per process, at start-up rather than in a first reply

    def rng(self, seed: Seed, stream: str = "content") -> random.Random:
        """A random stream derived from (engine seed, stream, the request's seed) with SHA-256."""
        data = f"{_SEED_DOMAIN}\0{self.seed}\0{stream}\0{seed.text}"
        digest = hashlib.sha256(data.encode("utf-8", "surrogatepass")).digest()
        return random.Random(int.from_bytes(digest[:16], "big"))

    def plan(
        self,
        *,
        seed: Seed,
        input_tokens: int,
        cached_tokens: int = 0,
        tools: Sequence[Mapping[str, Any]] = (),
        tool_choice: str | Mapping[str, Any] | None = None,
        parallel_tool_calls: bool = True,
        max_output_tokens: int | None = None,
        reasoning_effort: str | None = None,
        script: Sequence[Mapping[str, Any]] | None = None,
        answer_after_calls: bool = False,
        text_format: Mapping[str, Any] | None = None,
    ) -> GenerationPlan:
        """Plan one response. Raises :class:`PlanError` subclasses for client errors.

        `answer_after_calls` (a multi-agent response, PROTOCOL.md §2.2): generated calls are
        followed by a message, which its agent says once their outputs are injected."""
        _check_counts(input_tokens, cached_tokens, max_output_tokens)
        # Seeding a stream costs ~5 us: a script that needs no draws (fixed text) never pays it.
        content = _once(lambda: self.rng(seed, "content"))
        if script is not None:
            items = scripted_items(script, content)
        else:
            items = self._generated_items(
                content(),
                tools=tools,
                tool_choice=tool_choice,
                parallel_tool_calls=parallel_tool_calls,
                reasoning_effort=reasoning_effort,
                text_format=text_format,
            )
            if answer_after_calls and items and items[-1].kind == "function_call":
                items = (*items, _message_item(content()))
        items, truncated = truncate_items(items, max_output_tokens)
        queue_s, prefill_s = self._queue_and_prefill_s(seed, input_tokens, cached_tokens)
        rate, burst = self._decode_rate(seed)
        return GenerationPlan(
            items=items,
            output_tokens=sum(item.token_count for item in items),
            reasoning_tokens=sum(item.token_count for item in items if item.kind == "reasoning"),
            truncated=truncated,
            decode_tokens_per_s=rate,
            ttft_s=queue_s + prefill_s,
            queue_s=queue_s,
            prefill_s=prefill_s,
            burst=burst,
        )

    # -- timing -----------------------------------------------------------------------------
    # Timing draws a fixed number of values from its own streams, so the same request gets the
    # same burst decision and jitter factors whatever its cached-token split (a WS turn and its
    # HTTP twin differ only in what they are charged for).

    def _queue_and_prefill_s(
        self, seed: Seed, input_tokens: int, cached_tokens: int
    ) -> tuple[float, float]:
        p = self.profile
        if p.is_zero:  # nothing costs anything: no stage to price
            return 0.0, 0.0
        # Without jitter every factor is 1.0: the stream would be seeded for nothing.
        timing = self.rng(seed, "timing") if p.jitter_fraction else None
        queue_s = p.stage_cost_s("queue", 1, rng=timing)
        prefill_s = p.stage_cost_s(
            "prefill_uncached", input_tokens - cached_tokens, rng=timing
        ) + p.stage_cost_s("prefill_cached", cached_tokens, rng=timing)
        return queue_s, prefill_s

    def _decode_rate(self, seed: Seed) -> tuple[float, bool]:
        """(tokens/s, burst): the profile's rate, or its burst rate on a burst draw, jittered."""
        p = self.profile
        may_burst = p.burst_tokens_per_s is not None and p.burst_probability > 0
        if not (may_burst or p.jitter_fraction):  # no draw could change the rate
            return p.decode_tokens_per_s, False
        decode = self.rng(seed, "decode")
        burst = p.burst_tokens_per_s is not None and decode.random() < p.burst_probability
        base_rate = p.decode_tokens_per_s
        if burst and p.burst_tokens_per_s is not None:
            base_rate = p.burst_tokens_per_s
        return base_rate * p.jitter(decode), burst

    # -- generated content ------------------------------------------------------------------

    def _generated_items(
        self,
        rng: random.Random,
        *,
        tools: Sequence[Mapping[str, Any]],
        tool_choice: str | Mapping[str, Any] | None,
        parallel_tool_calls: bool,
        reasoning_effort: str | None,
        text_format: Mapping[str, Any] | None = None,
    ) -> tuple[PlannedItem, ...]:
        functions = function_tools(tools)
        mode, allowed = resolve_tool_choice(tool_choice, functions)
        items: list[PlannedItem] = []
        if reasoning_effort is not None:
            if reasoning_effort not in REASONING_EFFORTS:
                raise PlanError(
                    f"unsupported reasoning effort {reasoning_effort!r}; "
                    f"supported: {', '.join(REASONING_EFFORTS)}"
                )
            median = REASONING_EFFORTS[reasoning_effort]
            if median is not None:
                items.append(_reasoning_item(rng, median))
        call = mode in ("required", "named") or (
            mode == "auto" and bool(allowed) and rng.random() < AUTO_CALL_PROBABILITY
        )
        if not call:
            items.append(_message_item(rng, text_format))
            return tuple(items)
        count = 1
        if parallel_tool_calls and mode != "named":
            count = rng.choices(range(1, MAX_PARALLEL_CALLS + 1), _PARALLEL_COUNT_WEIGHTS)[0]
        for _ in range(count):
            tool = allowed[0] if mode == "named" else rng.choice(allowed)
            items.append(_call_item(rng, tool))
        return tuple(items)


def _check_counts(input_tokens: int, cached_tokens: int, max_output_tokens: int | None) -> None:
    if input_tokens < 0 or not 0 <= cached_tokens <= input_tokens:
        raise ValueError(
            f"need 0 <= cached_tokens <= input_tokens, got {cached_tokens}/{input_tokens}"
        )
    if max_output_tokens is not None and (
        isinstance(max_output_tokens, bool)
        or not isinstance(max_output_tokens, int)
        or max_output_tokens < 1
    ):
        raise PlanError(f"max_output_tokens must be a positive integer, got {max_output_tokens!r}")


# -- items ------------------------------------------------------------------------------------


# json.dumps(args, separators=(",", ":"), ensure_ascii=False), built once instead of per call
_ARGUMENTS_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def _call_item(rng: random.Random, tool: Mapping[str, Any]) -> PlannedItem:
    name = str(tool["name"])
    params = tool.get("parameters")
    if params is not None and not isinstance(params, Mapping):
        raise PlanError(f"tool {name!r}: 'parameters' must be a JSON Schema object")
    try:
        args = synthesize_arguments(params, rng)
    except UnsatisfiableSchema as exc:
        raise PlanError(f"tool {name!r}: cannot generate arguments: {exc}") from None
    arguments = _ARGUMENTS_JSON.encode(args)
    return PlannedItem(
        kind="function_call",
        pieces=exact_split(arguments),
        name=name,
        call_id=seeded_call_id(rng),
        pieces_resplit=True,
    )


# What `json_object` asks for is any JSON object: one of this shape, seeded like arguments.
_JSON_OBJECT_SCHEMA: Final[Mapping[str, Any]] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "confidence": {"type": "number"}},
    "required": ["answer"],
}


def _message_item(rng: random.Random, text_format: Mapping[str, Any] | None = None) -> PlannedItem:
    """A message: filler prose, or with `text.format` `json_schema` / `json_object` a JSON
    document valid against the schema, drawn as a call's arguments are (PROTOCOL.md §3.4)."""
    kind = text_format.get("type") if text_format is not None else None
    if kind in ("json_schema", "json_object"):
        schema = text_format.get("schema") if text_format is not None else None
        if kind == "json_object" or not isinstance(schema, Mapping):
            schema = _JSON_OBJECT_SCHEMA
        try:
            document = synthesize_arguments(schema, rng)
        except UnsatisfiableSchema as exc:
            raise PlanError(f"text.format: cannot generate a document: {exc}") from None
        return PlannedItem(
            kind="message",
            pieces=exact_split(_ARGUMENTS_JSON.encode(document)),
            pieces_resplit=True,
        )
    n = _lognormal_tokens(rng, MESSAGE_MEDIAN_TOKENS, MESSAGE_SIGMA, MESSAGE_MAX_TOKENS)
    pieces, resplit = filler_pieces_checked(n, rng)
    return PlannedItem(kind="message", pieces=pieces, pieces_resplit=resplit, pool_text=True)


def _reasoning_item(rng: random.Random, median: int) -> PlannedItem:
    hidden = _lognormal_tokens(rng, median, _REASONING_SIGMA, 8 * median)
    summary = exact_split(reasoning_summary(rng))
    return PlannedItem(kind="reasoning", summary_pieces=summary, hidden_tokens=hidden)


def _lognormal_tokens(rng: random.Random, median: int, sigma: float, cap: int) -> int:
    value = rng.lognormvariate(math.log(median), sigma)
    return max(1, min(cap, round(value)))
