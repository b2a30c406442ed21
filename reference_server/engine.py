"""Seeded, deterministic simulated inference: what a response will say and how fast.

:meth:`Engine.plan` turns a request's shape into a :class:`GenerationPlan`: the output items with
their token pieces, usage counts, the time to first token and the decode rate. It reads no clock
and does no I/O; the server emits the plan's pieces on a :class:`~reference_server.emission.
TokenSchedule`. Random streams are derived from ``(engine seed, seed_material)`` with SHA-256:
one for content, one for queue/prefill jitter and one for the decode rate, so the same request
produces the same output in every process and under every profile (only its timing changes with
the profile), and gets the same burst decision and jitter whatever its cached-token split.

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
  :mod:`reference_server.argsynth` and validate against the tool's ``parameters``.
- ``reasoning_effort`` (other than ``"none"``): a reasoning item first, with a short summary and
  hidden reasoning tokens (lognormal around the effort's median in :data:`REASONING_EFFORTS`).

Scripted mode (``script`` given; trace replay): the output is exactly the listed items; tools,
``tool_choice`` and ``reasoning_effort`` are not consulted. See :func:`validate_script`.

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
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from harness.errors import WsmodeError
from reference_server.argsynth import IDENTIFIERS, UnsatisfiableSchema, synthesize_arguments
from reference_server.cost_profiles import Profile
from reference_server.pipeline.tokenizer import count_tokens, split

__all__ = [
    "AUTO_CALL_PROBABILITY",
    "MAX_PARALLEL_CALLS",
    "MESSAGE_MAX_TOKENS",
    "MESSAGE_MEDIAN_TOKENS",
    "MESSAGE_SIGMA",
    "REASONING_EFFORTS",
    "Engine",
    "GenerationPlan",
    "InvalidScript",
    "InvalidToolChoice",
    "PlanError",
    "PlannedItem",
    "UnknownToolChoice",
    "filler_pieces",
    "validate_script",
]

ItemKind = Literal["message", "function_call", "reasoning"]

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


class PlanError(WsmodeError, ValueError):
    """The request cannot be planned; the server answers 400 with the message."""


class InvalidToolChoice(PlanError):
    """``tool_choice`` is malformed or cannot be honoured with the given tools."""


class UnknownToolChoice(InvalidToolChoice):
    """``tool_choice`` names a function that is not among the request's tools."""


class InvalidScript(PlanError):
    """A scripted output is malformed; the message names the offending index and field."""


@dataclass(frozen=True)
class PlannedItem:
    """One output item and the token pieces the server streams for it."""

    kind: ItemKind
    pieces: tuple[str, ...] = ()
    name: str | None = None
    call_id: str | None = None
    summary_pieces: tuple[str, ...] = ()
    hidden_tokens: int = 0
    refusal: bool = False  # a message whose one content part is a refusal

    @property
    def text(self) -> str:
        """The message text or the function call's arguments string."""
        return "".join(self.pieces)

    @property
    def summary_text(self) -> str:
        return "".join(self.summary_pieces)

    @property
    def token_count(self) -> int:
        """Schedule slots this item occupies (hidden reasoning tokens included)."""
        return self.hidden_tokens + len(self.summary_pieces) + len(self.pieces)


@dataclass(frozen=True)
class GenerationPlan:
    """What one response will emit, and its timing."""

    items: tuple[PlannedItem, ...]
    output_tokens: int
    reasoning_tokens: int
    truncated: bool
    decode_tokens_per_s: float
    ttft_s: float
    queue_s: float = 0.0
    prefill_s: float = 0.0
    burst: bool = False

    @property
    def item_offsets(self) -> tuple[int, ...]:
        """The schedule slot at which each item starts."""
        offsets: list[int] = []
        total = 0
        for item in self.items:
            offsets.append(total)
            total += item.token_count
        return tuple(offsets)


# -- the engine -------------------------------------------------------------------------------


class Engine:
    """Plans responses for one server; ``seed`` makes every plan reproducible."""

    def __init__(self, profile: Profile, seed: int = 0) -> None:
        self.profile = profile
        self.seed = seed

    def rng(self, seed_material: str, stream: str = "content") -> random.Random:
        """A random stream derived from (engine seed, stream, seed material) with SHA-256."""
        data = f"{_SEED_DOMAIN}\0{self.seed}\0{stream}\0{seed_material}"
        digest = hashlib.sha256(data.encode("utf-8", "surrogatepass")).digest()
        return random.Random(int.from_bytes(digest[:16], "big"))

    def plan(
        self,
        *,
        seed_material: str,
        input_tokens: int,
        cached_tokens: int = 0,
        tools: Sequence[Mapping[str, Any]] = (),
        tool_choice: str | Mapping[str, Any] | None = None,
        parallel_tool_calls: bool = True,
        max_output_tokens: int | None = None,
        reasoning_effort: str | None = None,
        script: Sequence[Mapping[str, Any]] | None = None,
    ) -> GenerationPlan:
        """Plan one response. Raises :class:`PlanError` subclasses for client errors."""
        if input_tokens < 0 or not 0 <= cached_tokens <= input_tokens:
            raise ValueError(
                f"need 0 <= cached_tokens <= input_tokens, got {cached_tokens}/{input_tokens}"
            )
        if max_output_tokens is not None and (
            isinstance(max_output_tokens, bool)
            or not isinstance(max_output_tokens, int)
            or max_output_tokens < 1
        ):
            raise PlanError(
                f"max_output_tokens must be a positive integer, got {max_output_tokens!r}"
            )
        content = self.rng(seed_material, "content")
        if script is not None:
            items = _scripted_items(script, content)
        else:
            items = self._generated_items(
                content,
                tools=tools,
                tool_choice=tool_choice,
                parallel_tool_calls=parallel_tool_calls,
                reasoning_effort=reasoning_effort,
            )
        items, truncated = _truncate(items, max_output_tokens)

        # Timing draws a fixed number of values from its own streams, so the same request gets
        # the same burst decision and jitter factors whatever its cached-token split (a WS turn
        # and its HTTP twin differ only in what they are charged for).
        p = self.profile
        timing = self.rng(seed_material, "timing")
        queue_s = p.stage_cost_s("queue", 1, rng=timing)
        prefill_s = p.stage_cost_s(
            "prefill_uncached", input_tokens - cached_tokens, rng=timing
        ) + p.stage_cost_s("prefill_cached", cached_tokens, rng=timing)
        decode = self.rng(seed_material, "decode")
        burst = p.burst_tokens_per_s is not None and decode.random() < p.burst_probability
        base_rate = p.decode_tokens_per_s
        if burst and p.burst_tokens_per_s is not None:
            base_rate = p.burst_tokens_per_s
        rate = base_rate * p.jitter(decode)

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

    # -- generated content ------------------------------------------------------------------

    def _generated_items(
        self,
        rng: random.Random,
        *,
        tools: Sequence[Mapping[str, Any]],
        tool_choice: str | Mapping[str, Any] | None,
        parallel_tool_calls: bool,
        reasoning_effort: str | None,
    ) -> tuple[PlannedItem, ...]:
        functions = _function_tools(tools)
        mode, allowed = _resolve_tool_choice(tool_choice, functions)
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
            n = _lognormal_tokens(rng, MESSAGE_MEDIAN_TOKENS, MESSAGE_SIGMA, MESSAGE_MAX_TOKENS)
            items.append(PlannedItem(kind="message", pieces=filler_pieces(n, rng)))
            return tuple(items)
        count = 1
        if parallel_tool_calls and mode != "named":
            count = rng.choices(range(1, MAX_PARALLEL_CALLS + 1), _PARALLEL_COUNT_WEIGHTS)[0]
        for _ in range(count):
            tool = allowed[0] if mode == "named" else rng.choice(allowed)
            items.append(_call_item(rng, tool))
        return tuple(items)


# -- tools ------------------------------------------------------------------------------------


def _function_tools(tools: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Function tools with a usable name; other tool types are not simulated."""
    return [
        t
        for t in tools
        if isinstance(t, Mapping)
        and t.get("type") == "function"
        and isinstance(t.get("name"), str)
        and t.get("name")
    ]


def _resolve_tool_choice(
    tool_choice: str | Mapping[str, Any] | None, functions: list[Mapping[str, Any]]
) -> tuple[Literal["none", "auto", "required", "named"], list[Mapping[str, Any]]]:
    """(mode, callable tools). Raises InvalidToolChoice / UnknownToolChoice."""
    names = [str(t["name"]) for t in functions]
    if tool_choice is None or tool_choice == "auto":
        return "auto", functions
    if tool_choice == "none":
        return "none", []
    if tool_choice == "required":
        if not functions:
            raise InvalidToolChoice(
                "tool_choice 'required' needs at least one function tool in 'tools'"
            )
        return "required", functions
    if isinstance(tool_choice, str):
        raise InvalidToolChoice(
            f"invalid tool_choice {tool_choice!r}: expected 'none', 'auto', 'required' or an object"
        )
    if not isinstance(tool_choice, Mapping):
        raise InvalidToolChoice("tool_choice must be a string or an object")
    kind = tool_choice.get("type")
    if kind == "function":
        name = tool_choice.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidToolChoice("tool_choice of type 'function' needs a 'name'")
        if name not in names:
            known = ", ".join(repr(n) for n in names) or "none"
            raise UnknownToolChoice(
                f"tool_choice names function {name!r}, which is not in 'tools' "
                f"(function tools: {known})"
            )
        return "named", [functions[names.index(name)]]
    if kind == "allowed_tools":
        mode = tool_choice.get("mode", "auto")
        if mode not in ("auto", "required"):
            raise InvalidToolChoice(
                f"tool_choice allowed_tools mode must be 'auto' or 'required', got {mode!r}"
            )
        listed = tool_choice.get("tools")
        if not isinstance(listed, Sequence) or isinstance(listed, str):
            raise InvalidToolChoice("tool_choice allowed_tools needs a 'tools' list")
        allowed: list[Mapping[str, Any]] = []
        for i, ref in enumerate(listed):
            if not isinstance(ref, Mapping) or ref.get("type") != "function":
                continue  # hosted tools are not simulated
            name = ref.get("name")
            if name not in names:
                raise UnknownToolChoice(
                    f"tool_choice.tools[{i}] names function {name!r}, which is not in 'tools'"
                )
            allowed.append(functions[names.index(str(name))])
        if mode == "required" and not allowed:
            raise InvalidToolChoice(
                "tool_choice allowed_tools with mode 'required' lists no function tool"
            )
        return ("required" if mode == "required" else "auto"), allowed
    raise InvalidToolChoice(
        f"tool_choice of type {kind!r} is not supported by the reference server "
        "(supported: 'function', 'allowed_tools')"
    )


def _call_item(rng: random.Random, tool: Mapping[str, Any]) -> PlannedItem:
    name = str(tool["name"])
    params = tool.get("parameters")
    if params is not None and not isinstance(params, Mapping):
        raise PlanError(f"tool {name!r}: 'parameters' must be a JSON Schema object")
    try:
        args = synthesize_arguments(params, rng)
    except UnsatisfiableSchema as exc:
        raise PlanError(f"tool {name!r}: cannot generate arguments: {exc}") from None
    arguments = json.dumps(args, separators=(",", ":"), ensure_ascii=False)
    return PlannedItem(
        kind="function_call",
        pieces=_exact_split(arguments),
        name=name,
        call_id=_call_id(rng),
    )


def _call_id(rng: random.Random) -> str:
    return f"call_{rng.getrandbits(96):024x}"


# -- reasoning --------------------------------------------------------------------------------

_SUMMARY_TITLES: Final = (
    "Inspecting the failing test",
    "Planning the refactor",
    "Tracing the error path",
    "Checking the configuration",
    "Reviewing the request handler",
    "Deciding on the fix",
    "Reading the test output",
)


def _reasoning_item(rng: random.Random, median: int) -> PlannedItem:
    hidden = _lognormal_tokens(rng, median, _REASONING_SIGMA, 8 * median)
    title = rng.choice(_SUMMARY_TITLES)
    body = " ".join(_fill(rng.choice(_PROSE), rng) for _ in range(rng.randint(1, 2)))
    summary = f"**{title}**\n\n{body}"
    return PlannedItem(kind="reasoning", summary_pieces=_exact_split(summary), hidden_tokens=hidden)


def _lognormal_tokens(rng: random.Random, median: int, sigma: float, cap: int) -> int:
    value = rng.lognormvariate(math.log(median), sigma)
    return max(1, min(cap, round(value)))


# -- scripted mode ----------------------------------------------------------------------------

_SCRIPT_FIELDS: Final[Mapping[str, frozenset[str]]] = {
    "message": frozenset({"type", "text", "tokens", "refusal"}),
    "function_call": frozenset({"type", "name", "arguments", "call_id"}),
    "reasoning": frozenset({"type", "summary", "tokens"}),
}


def validate_script(script: object) -> None:
    """Check a scripted output; raise :class:`InvalidScript` naming the index and field.

    Item specs:

    - ``{"type": "message", "text": str}``, ``{"type": "message", "tokens": int >= 0}``
      (that many tokens of filler text) or ``{"type": "message", "refusal": str}`` (a
      refusal content part), exactly one of the three;
    - ``{"type": "function_call", "name": str, "arguments": str, "call_id"?: str}`` (a seeded
      ``call_...`` id when omitted; ``arguments`` is emitted verbatim, not parsed);
    - ``{"type": "reasoning", "summary"?: str, "tokens"?: int >= 0}`` (``tokens``: hidden
      reasoning tokens, decoded without events before the summary).

    Unknown fields are rejected, so a misspelt field cannot silently change the output.
    """
    if isinstance(script, str | bytes) or not isinstance(script, Sequence):
        raise InvalidScript("script must be a list of output item specs")
    for i, spec in enumerate(script):
        where = f"script[{i}]"
        if not isinstance(spec, Mapping):
            raise InvalidScript(f"{where}: must be an object")
        kind = spec.get("type")
        if not isinstance(kind, str) or kind not in _SCRIPT_FIELDS:
            raise InvalidScript(
                f"{where}.type: must be one of {', '.join(map(repr, _SCRIPT_FIELDS))}, got {kind!r}"
            )
        unknown = sorted(str(k) for k in set(spec) - _SCRIPT_FIELDS[kind])
        if unknown:
            raise InvalidScript(f"{where}: unknown field(s) {', '.join(unknown)} for {kind!r}")
        if kind == "message":
            given = [key for key in ("text", "tokens", "refusal") if key in spec]
            if len(given) != 1:
                raise InvalidScript(
                    f"{where}: a message needs exactly one of 'text', 'tokens' or 'refusal'"
                )
            if "tokens" in spec:
                _require_count(spec, "tokens", where)
            else:
                _require_str(spec, given[0], where)
        elif kind == "function_call":
            _require_str(spec, "name", where, non_empty=True)
            _require_str(spec, "arguments", where)
            if "call_id" in spec:
                _require_str(spec, "call_id", where, non_empty=True)
        else:
            if "summary" in spec:
                _require_str(spec, "summary", where)
            if "tokens" in spec:
                _require_count(spec, "tokens", where)


def _require_str(spec: Mapping[str, Any], key: str, where: str, *, non_empty: bool = False) -> None:
    if key not in spec:
        raise InvalidScript(f"{where}.{key}: required")
    value = spec[key]
    if not isinstance(value, str):
        raise InvalidScript(f"{where}.{key}: must be a string, got {type(value).__name__}")
    if non_empty and not value:
        raise InvalidScript(f"{where}.{key}: must not be empty")


def _require_count(spec: Mapping[str, Any], key: str, where: str) -> None:
    value = spec[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidScript(f"{where}.{key}: must be an integer >= 0, got {value!r}")


def _scripted_items(
    script: Sequence[Mapping[str, Any]], rng: random.Random
) -> tuple[PlannedItem, ...]:
    validate_script(script)
    items: list[PlannedItem] = []
    for spec in script:
        kind = spec["type"]
        if kind == "message":
            if "tokens" in spec:
                pieces = filler_pieces(spec["tokens"], rng)
            else:
                pieces = _exact_split(spec.get("text", spec.get("refusal", "")))
            items.append(PlannedItem(kind="message", pieces=pieces, refusal="refusal" in spec))
        elif kind == "function_call":
            call_id = spec["call_id"] if "call_id" in spec else _call_id(rng)
            items.append(
                PlannedItem(
                    kind="function_call",
                    pieces=_exact_split(spec["arguments"]),
                    name=spec["name"],
                    call_id=call_id,
                )
            )
        else:
            items.append(
                PlannedItem(
                    kind="reasoning",
                    summary_pieces=_exact_split(spec.get("summary", "")),
                    hidden_tokens=int(spec.get("tokens", 0)),
                )
            )
    return tuple(items)


# -- truncation -------------------------------------------------------------------------------


def _truncate(
    items: tuple[PlannedItem, ...], max_output_tokens: int | None
) -> tuple[tuple[PlannedItem, ...], bool]:
    """Keep the first ``max_output_tokens`` schedule slots; drop items left with no tokens."""
    if max_output_tokens is None:
        return items, False
    budget = max_output_tokens
    kept: list[PlannedItem] = []
    for item in items:
        if item.token_count <= budget:
            kept.append(item)
            budget -= item.token_count
            continue
        if budget > 0:
            hidden = min(item.hidden_tokens, budget)
            rest = budget - hidden
            summary = item.summary_pieces[:rest]
            rest -= len(summary)
            kept.append(
                PlannedItem(
                    kind=item.kind,
                    pieces=item.pieces[:rest],
                    name=item.name,
                    call_id=item.call_id,
                    summary_pieces=summary,
                    hidden_tokens=hidden,
                )
            )
        return tuple(kept), True
    return tuple(kept), False


# -- text -------------------------------------------------------------------------------------


def _exact_split(text: str) -> tuple[str, ...]:
    pieces = tuple(split(text))
    if "".join(pieces) != text:  # the tokenizer promises lossless pieces; never stream others
        raise RuntimeError("tokenizer split() is not lossless")
    return pieces


_SLOTS: Final[Mapping[str, tuple[str, ...]]] = {
    "verb": (
        "update",
        "refactor",
        "inspect",
        "check",
        "fix",
        "add",
        "remove",
        "rename",
        "run",
        "read",
        "patch",
        "review",
        "simplify",
        "extract",
        "move",
        "test",
        "trace",
        "document",
    ),
    "noun": (
        "parser",
        "session cache",
        "config loader",
        "retry loop",
        "request handler",
        "test suite",
        "error path",
        "tokenizer",
        "router",
        "schema",
        "CLI entry point",
        "build script",
        "migration",
        "fixture",
        "logger",
        "serializer",
        "connection pool",
        "rate limiter",
        "event loop",
        "lock file",
    ),
    "file": (
        "src/parser.py",
        "src/session.rs",
        "lib/config.ts",
        "tests/test_api.py",
        "cmd/main.go",
        "app/handlers.py",
        "src/router.tsx",
        "pkg/cache/store.go",
        "scripts/build.sh",
        "pyproject.toml",
        "Cargo.toml",
        "package.json",
        "src/utils/retry.ts",
        "README.md",
    ),
    "ident": (
        *IDENTIFIERS,
        "fetchUser",
        "useEffect",
        "HttpClient",
        "on_close",
    ),
    "attr": ("timeout", "headers", "body", "user_id", "retries", "path", "payload", "status"),
    "cmd": (
        "pytest -q",
        "cargo test",
        "npm test",
        "go test ./...",
        "ruff check .",
        "mypy src",
        "git diff --stat",
        "make build",
    ),
    "num": ("2", "3", "4", "7", "12", "42", "128", "404", "500"),
    "reason": (
        "the cache entry is evicted too early",
        "the timeout is never propagated",
        "the fixture still uses the old schema",
        "the error is swallowed in the retry loop",
        "the handler returns before the write completes",
        "the config key was renamed",
        "two tests share a temporary directory",
    ),
}

_PROSE: Final = (
    "I'll {verb} the {noun} in `{file}` first.",
    "The {noun} fails because {reason}.",
    "Next, I'll {verb} `{ident}` and {verb} the {noun}.",
    "Running `{cmd}` shows {num} failing tests in `{file}`.",
    "This keeps the {noun} unchanged while we {verb} the {noun}.",
    "`{ident}` is called from `{file}`, so the change stays local.",
    "I checked `{file}`: {reason}.",
    "With that fixed, `{cmd}` passes and the {noun} behaves as before.",
    "Let me {verb} `{ident}` so that the {noun} handles `{attr}` correctly.",
)
_BULLETS: Final = (
    "- {verb} `{ident}` in `{file}`\n",
    "- the {noun} now checks `{attr}`\n",
    "- `{cmd}` passes ({num} tests)\n",
)
_CODE: Final = (
    "```python\ndef {ident}(request):\n    if not request.{attr}:\n"
    '        raise ValueError("missing {attr}")\n    return handle(request)\n```\n',
    "```python\nfor item in items:\n    if item.{attr} is None:\n        continue\n"
    "    results.append({ident}(item))\n```\n",
    "```ts\nexport async function {ident}(req: Request): Promise<Response> {\n"
    "  const {attr} = req.{attr} ?? {num};\n  return fetch(req.url, { {attr} });\n}\n```\n",
    "```rust\nfn {ident}(input: &str) -> Result<Config, Error> {\n"
    "    let cfg = parse(input)?;\n    Ok(cfg)\n}\n```\n",
    '```go\nif err := {ident}(ctx); err != nil {\n\treturn fmt.Errorf("{noun}: %w", err)\n}\n```\n',
    "```bash\n{cmd}\n```\n",
)
_SLOT_RE: Final = re.compile(r"\{(verb|noun|file|ident|attr|cmd|num|reason)\}")


def _fill(template: str, rng: random.Random) -> str:
    return _SLOT_RE.sub(lambda m: rng.choice(_SLOTS[m.group(1)]), template)


def _chunk(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.7:
        sentences = " ".join(_fill(rng.choice(_PROSE), rng) for _ in range(rng.randint(1, 3)))
        return sentences + "\n\n"
    if roll < 0.85:
        return "".join(_fill(rng.choice(_BULLETS), rng) for _ in range(rng.randint(2, 4))) + "\n"
    return _fill(rng.choice(_CODE), rng) + "\n"


def filler_pieces(n: int, rng: random.Random) -> tuple[str, ...]:
    """Exactly ``n`` token pieces of coding-agent prose and code (seeded).

    The text is cut at a token boundary; when possible the cut is chosen so that re-tokenizing
    the joined text gives back the same pieces (the usual case with this tokenizer).
    """
    if n <= 0:
        return ()
    chunks = [_chunk(rng)]
    cut: list[str] = []
    for _attempt in range(4):
        # Grow by chunk token counts (linear); boundaries can merge pieces, so check at the end.
        estimate = sum(map(count_tokens, chunks))
        while estimate <= n + 16:
            chunks.append(_chunk(rng))
            estimate += count_tokens(chunks[-1])
        pieces = split("".join(chunks))
        while len(pieces) <= n:
            chunks.append(_chunk(rng))
            pieces = split("".join(chunks))
        cut = pieces[:n]
        if split("".join(cut)) == cut:
            break
        chunks = [*chunks[1:], _chunk(rng)]  # move the cut: start one paragraph later
    return tuple(cut)
