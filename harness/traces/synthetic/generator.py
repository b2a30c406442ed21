"""Seeded generator of realistic coding-agent rollouts in the ``wsmode-trace`` format.

Each rollout imitates a Codex-style agent working in a Python repository: a long system prompt,
a large first user message (environment, AGENTS.md, file tree, task), then tool-calling turns
(list_dir, search, read_file, apply_patch, write_file, run_shell, run_tests) and a final summary
message.

This module owns how a rollout goes: the distributions (the module constants below, documented
with measured corpus statistics in ``traces/README.md``), the tool definitions, the planning of
turns and calls (phases per kind, parallel read-only batches, sizes, waits, the context bounds),
``generate_rollout`` and ``generate_corpus``. What the text says (the invented repository, code,
prose, tracebacks, test reports, patches, tool outputs) comes from
``harness.traces.synthetic.text``; the bundled corpus made of these rollouts is
``harness.traces.synthetic.corpus``.

Everything is deterministic per seed: one ``random.Random(seed)`` drives a rollout (files get
sub-seeds drawn from it) and nothing reads global randomness, hash order or the clock.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Sequence
from typing import Any, Final

from harness.traces.format import (
    JSONObject,
    OutputSpec,
    Rollout,
    Turn,
    estimate_item_tokens,
    estimate_tokens,
    input_message,
)
from harness.traces.synthetic.text import (
    FileSizes,
    Repo,
    ToolCall,
    execute_call,
    final_message_text,
    first_message,
    followup_text,
    instructions_text,
    lognormal,
    module_text,
    new_module_path,
    patch_text,
    patched_paths,
    pick,
    preamble_text,
    reasoning_summary,
    search_pattern,
    shell_command,
)

__all__ = [
    "CONTEXT_BOUNDS",
    "DEFAULT_MODEL",
    "KINDS",
    "TOOLS",
    "derive_seed",
    "generate_corpus",
    "generate_rollout",
]

# ---------------------------------------------------------------------------------------------
# Distributions (documented in traces/README.md). Token counts are chars / 4.

KINDS: Final = ("bug_fix", "refactor", "test_fix")
DEFAULT_MODEL: Final = "gpt-5-codex"
GENERATOR_VERSION: Final = 1

#: Turns per rollout, uniform per kind (overall 20-80).
TURNS_RANGE: Final = {"bug_fix": (20, 50), "refactor": (35, 80), "test_fix": (25, 60)}
#: System prompt (``instructions``) size, uniform.
INSTRUCTIONS_TOKENS: Final = (2000, 6000)
#: First user message (environment + AGENTS.md + file tree + task), uniform.
FIRST_MESSAGE_TOKENS: Final = (1500, 6000)
#: Tool outputs: lognormal(median, sigma) times a per-tool factor, capped.
TOOL_OUTPUT_MEDIAN_TOKENS: Final = 600
TOOL_OUTPUT_SIGMA: Final = 1.1
TOOL_OUTPUT_MAX_TOKENS: Final = 8000
TOOL_OUTPUT_FACTOR: Final = {
    "read_file": 1.6,  # file sizes; a file reads the same every time
    "run_tests": 2.2,  # failing runs; a passing run is a quarter of that
    "search": 1.0,
    "list_dir": 0.5,  # a listing of the (small) repository tree
    "run_shell": 1.0,
}
#: Client-side tool time: lognormal, median 1 s and p90 4 s; test runs median 6 s, p90 ~19 s.
TOOL_WAIT_MEDIAN_MS: Final = 1000.0
TOOL_WAIT_SIGMA: Final = math.log(4.0) / 1.2816
TEST_WAIT_MEDIAN_MS: Final = 6000.0
TEST_WAIT_SIGMA: Final = 0.9
TOOL_WAIT_MAX_MS: Final = 120_000.0
#: Share of turns that issue 2-4 parallel tool calls (waits overlap: the turn waits the max).
#: Batches are read-only calls, so a turn whose first call is read-only fans out with
#: ``PARALLEL_GIVEN_READ_ONLY``, which gives the target share overall (checked by a test).
PARALLEL_CALL_PROB: Final = 0.15
PARALLEL_GIVEN_READ_ONLY: Final = 0.33
PARALLEL_CALLS: Final = (2, 4)
#: Model output per turn: hidden reasoning (with a short summary) on some turns, an optional
#: one-line preamble message, then the call(s); patches are the long arguments.
REASONING_PROB: Final = 0.6
REASONING_MEDIAN_TOKENS: Final = 120
REASONING_SIGMA: Final = 0.9
REASONING_MAX_TOKENS: Final = 1800
PREAMBLE_PROB: Final = 0.2
PATCH_MEDIAN_TOKENS: Final = 220
PATCH_SIGMA: Final = 0.8
PATCH_MAX_TOKENS: Final = 2000
FINAL_MESSAGE_TOKENS: Final = (120, 600)
#: Occasional user steering message sent with the tool outputs.
USER_FOLLOWUP_PROB: Final = 0.02
#: Context at the end of a rollout (estimate after the last output) is kept in these bounds:
#: tool outputs are truncated near the top, sizes scaled up and regenerated below the bottom.
CONTEXT_BOUNDS: Final = (30_000, 150_000)


# ---------------------------------------------------------------------------------------------
# Tools


def _obj(properties: dict[str, Any]) -> JSONObject:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _tool(name: str, description: str, properties: dict[str, Any]) -> JSONObject:
    return {
        "type": "function",
        "name": name,
        "description": description,
        "parameters": _obj(properties),
        "strict": True,
    }


_STR: Final = {"type": "string"}
_OPT_STR: Final = {"type": ["string", "null"]}
_OPT_INT: Final = {"type": ["integer", "null"]}

#: The tools every generated rollout declares (Responses API function tools, strict schemas).
TOOLS: Final[tuple[JSONObject, ...]] = (
    _tool(
        "read_file",
        "Read a text file from the workspace. Returns the lines with 1-based line numbers.",
        {
            "path": {**_STR, "description": "Path relative to the repository root."},
            "start_line": {**_OPT_INT, "description": "First line to return (default 1)."},
            "end_line": {**_OPT_INT, "description": "Last line to return (default: end)."},
        },
    ),
    _tool(
        "apply_patch",
        "Edit files with a patch in the apply_patch format (*** Begin Patch / *** End Patch).",
        {"patch": {**_STR, "description": "The full patch text."}},
    ),
    _tool(
        "write_file",
        "Create or overwrite a file with the given content.",
        {"path": _STR, "content": _STR},
    ),
    _tool(
        "run_shell",
        "Run a shell command in the repository and return its exit code and output.",
        {
            "command": {**_STR, "description": "Command line, run with bash -lc."},
            "workdir": {**_OPT_STR, "description": "Working directory (default: repo root)."},
            "timeout_ms": {**_OPT_INT, "description": "Kill the command after this long."},
        },
    ),
    _tool(
        "run_tests",
        "Run the test suite (pytest) or a subset of it and return the report.",
        {
            "target": {**_OPT_STR, "description": "Test file or node id; null runs all."},
            "keyword": {**_OPT_STR, "description": "pytest -k expression."},
            "fail_fast": {"type": "boolean", "description": "Stop at the first failure."},
        },
    ),
    _tool(
        "search",
        "Search file contents with a regular expression (ripgrep).",
        {
            "pattern": _STR,
            "path": {**_OPT_STR, "description": "Directory or file to search (default: .)."},
            "glob": {**_OPT_STR, "description": "Only search files matching this glob."},
        },
    ),
    _tool(
        "list_dir",
        "List a directory tree.",
        {"path": _STR, "depth": {**_OPT_INT, "description": "Maximum depth (default 2)."}},
    ),
)

# ---------------------------------------------------------------------------------------------
# Turn planning


_PHASES: Final = {
    "bug_fix": (
        (0.30, {"list_dir": 1, "search": 3, "read_file": 4, "run_tests": 1, "run_shell": 1}),
        (0.75, {"read_file": 3, "search": 1, "apply_patch": 3, "run_tests": 2, "run_shell": 1}),
        (1.01, {"read_file": 2, "apply_patch": 2, "run_tests": 3, "run_shell": 1}),
    ),
    "refactor": (
        (0.25, {"list_dir": 2, "search": 4, "read_file": 4, "run_shell": 1}),
        (0.80, {"read_file": 3, "search": 2, "apply_patch": 4, "write_file": 1, "run_tests": 1}),
        (1.01, {"run_tests": 3, "apply_patch": 2, "read_file": 1, "run_shell": 2}),
    ),
    "test_fix": (
        (0.10, {"run_tests": 3, "list_dir": 1, "read_file": 1}),
        (0.85, {"run_tests": 3, "read_file": 4, "search": 1, "apply_patch": 3, "run_shell": 1}),
        (1.01, {"run_tests": 4, "apply_patch": 2, "read_file": 1}),
    ),
}
_PARALLEL_OK: Final = ("read_file", "search", "list_dir")
#: Repository files are sized like their read_file outputs (twice the output cap).
_FILE_SIZES: Final = FileSizes(
    median_tokens=TOOL_OUTPUT_MEDIAN_TOKENS,
    sigma=TOOL_OUTPUT_SIGMA,
    max_tokens=TOOL_OUTPUT_MAX_TOKENS * 2,
    source_factor=TOOL_OUTPUT_FACTOR["read_file"],
)


def _weighted(rng: random.Random, weights: dict[str, int]) -> str:
    names = list(weights)
    return rng.choices(names, weights=[weights[n] for n in names])[0]


def _output_size(rng: random.Random, repo: Repo, tool: str) -> int:
    median = TOOL_OUTPUT_MEDIAN_TOKENS * TOOL_OUTPUT_FACTOR[tool] * repo.scale
    return max(20, int(lognormal(rng, median, TOOL_OUTPUT_SIGMA, TOOL_OUTPUT_MAX_TOKENS)))


def _make_call(rng: random.Random, repo: Repo, tool: str, call_id: str) -> ToolCall:
    src, tests = repo.source_paths(), repo.test_paths()
    args: JSONObject
    if tool == "read_file":
        path = pick(rng, src if rng.random() < 0.65 else tests)
        args = {"path": path, "start_line": None, "end_line": None}
    elif tool == "search":
        pattern = search_pattern(rng, repo)
        args = {"pattern": pattern, "path": pick(rng, ("src", "tests", ".")), "glob": "*.py"}
    elif tool == "list_dir":
        args = {"path": pick(rng, (".", "src", "tests")), "depth": rng.choice((None, 2, 3))}
    elif tool == "run_tests":
        target = None if rng.random() < 0.5 else pick(rng, tests)
        args = {"target": target, "keyword": None, "fail_fast": rng.random() < 0.2}
    elif tool == "run_shell":
        command = shell_command(rng, repo)
        args = {"command": command, "workdir": None, "timeout_ms": 60000}
    elif tool == "apply_patch":
        n_files = 1 if rng.random() < 0.8 else rng.randint(2, 3)
        paths = rng.sample(src + tests, min(n_files, len(src + tests)))
        tokens = int(lognormal(rng, PATCH_MEDIAN_TOKENS, PATCH_SIGMA, PATCH_MAX_TOKENS))
        args = {"patch": patch_text(rng, repo, paths, max(30, tokens))}
    else:  # write_file
        path = new_module_path(rng, repo)
        tokens = int(lognormal(rng, PATCH_MEDIAN_TOKENS * 1.5, PATCH_SIGMA, PATCH_MAX_TOKENS))
        args = {"path": path, "content": module_text(rng, repo, path, max(60, tokens))}
    call = ToolCall(tool, args, call_id)
    if tool in TOOL_OUTPUT_FACTOR:
        call.output_tokens = _output_size(rng, repo, tool)
    return call


def _tool_wait(rng: random.Random, tool: str) -> float:
    if tool == "run_tests":
        return lognormal(rng, TEST_WAIT_MEDIAN_MS, TEST_WAIT_SIGMA, TOOL_WAIT_MAX_MS)
    return lognormal(rng, TOOL_WAIT_MEDIAN_MS, TOOL_WAIT_SIGMA, TOOL_WAIT_MAX_MS)


def _reasoning(rng: random.Random, repo: Repo) -> OutputSpec:
    summary = reasoning_summary(rng, repo)
    tokens = int(lognormal(rng, REASONING_MEDIAN_TOKENS, REASONING_SIGMA, REASONING_MAX_TOKENS))
    return OutputSpec.reasoning(summary, tokens)


def _final_message(rng: random.Random, repo: Repo, kind: str, touched: list[str]) -> OutputSpec:
    size = rng.randint(*FINAL_MESSAGE_TOKENS)
    return OutputSpec.message(final_message_text(rng, repo, kind, touched, size))


# ---------------------------------------------------------------------------------------------
# Rollouts


def derive_seed(seed: int, *parts: object) -> int:
    """A stable 63-bit sub-seed (sha256; independent of PYTHONHASHSEED)."""
    text = ":".join(str(p) for p in (seed, *parts))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


def generate_rollout(
    kind: str,
    seed: int,
    *,
    n_turns: int | None = None,
    size_scale: float = 1.0,
    context_bounds: tuple[int, int] | None = CONTEXT_BOUNDS,
    model: str = DEFAULT_MODEL,
    rollout_id: str | None = None,
) -> Rollout:
    """Generate one rollout of ``kind`` ("bug_fix", "refactor", "test_fix"); same seed, same trace.

    ``n_turns`` overrides the kind's turn range; ``size_scale`` scales every text size (system
    prompt, first message, files, tool outputs, patches are not scaled); ``context_bounds``
    (min, max) bounds the final context estimate, or ``None`` to leave it unbounded.
    """
    if kind not in TURNS_RANGE:
        raise ValueError(f"unknown rollout kind {kind!r}; expected one of {', '.join(KINDS)}")
    if n_turns is not None and n_turns < 1:
        raise ValueError("n_turns must be >= 1")
    if size_scale <= 0:
        raise ValueError("size_scale must be > 0")
    scale = size_scale
    rollout = _generate(kind, seed, n_turns, size_scale, scale, context_bounds, model, rollout_id)
    if context_bounds is not None:
        low = context_bounds[0]
        for _ in range(6):
            final = rollout.final_context_tokens
            if final >= low:
                break
            scale *= min(4.0, 1.15 * low / final)
            rollout = _generate(
                kind, seed, n_turns, size_scale, scale, context_bounds, model, rollout_id
            )
    return rollout


def _generate(
    kind: str,
    seed: int,
    n_turns: int | None,
    size_scale: float,
    scale: float,
    bounds: tuple[int, int] | None,
    model: str,
    rollout_id: str | None,
) -> Rollout:
    rng = random.Random(seed)
    repo = Repo(rng, scale, _FILE_SIZES)
    turns_total = n_turns if n_turns is not None else rng.randint(*TURNS_RANGE[kind])
    instructions = instructions_text(rng, int(rng.randint(*INSTRUCTIONS_TOKENS) * size_scale))
    repo.failing = {
        "bug_fix": 1 + rng.randrange(3),
        "refactor": 0,
        "test_fix": 2 + rng.randrange(11),
    }[kind]
    first = first_message(rng, repo, kind, int(rng.randint(*FIRST_MESSAGE_TOKENS) * size_scale))
    max_ctx = bounds[1] if bounds is not None else None
    context = estimate_tokens(instructions) + estimate_tokens(json.dumps(list(TOOLS)))
    pending_input: list[JSONObject] = first
    wait_ms = 0.0
    touched: list[str] = []
    turns: list[Turn] = []
    ids = iter(range(1, 1_000_000))

    def call_id() -> str:
        digest = hashlib.sha256(f"{seed}:{kind}:call:{next(ids)}".encode()).hexdigest()
        return f"call_{digest[:24]}"

    for index in range(turns_total):
        context += sum(estimate_item_tokens(i) for i in pending_input)
        left = turns_total - index - 1
        outputs: list[OutputSpec] = []
        if left == 0:  # final answer
            if rng.random() < REASONING_PROB:
                outputs.append(_reasoning(rng, repo))
            outputs.append(_final_message(rng, repo, kind, touched))
            turns.append(
                Turn(
                    index=index,
                    input=tuple(pending_input),
                    output=tuple(outputs),
                    tool_wait_ms=round(wait_ms, 1),
                )
            )
            break
        progress = index / max(1, turns_total - 1)
        if left == 1:  # verify before answering
            tools = ["run_tests"]
            repo.failing = 0
        else:
            weights = next(w for limit, w in _PHASES[kind] if progress < limit)
            tool = _weighted(rng, weights)
            tools = [tool]
            if tool in _PARALLEL_OK and rng.random() < PARALLEL_GIVEN_READ_ONLY:
                tools += [
                    _weighted(rng, {"read_file": 3, "search": 2, "list_dir": 1})
                    for _ in range(rng.randint(*PARALLEL_CALLS) - 1)
                ]
        calls = [_make_call(rng, repo, t, call_id()) for t in tools]
        if rng.random() < REASONING_PROB:
            outputs.append(_reasoning(rng, repo))
        if rng.random() < PREAMBLE_PROB:
            outputs.append(OutputSpec.message(preamble_text(calls[0])))
        outputs += [
            OutputSpec.function_call(c.name, json.dumps(c.args, separators=(",", ":")), c.call_id)
            for c in calls
        ]
        turns.append(
            Turn(
                index=index,
                input=tuple(pending_input),
                output=tuple(outputs),
                tool_wait_ms=round(wait_ms, 1),
            )
        )
        context += sum(estimate_item_tokens(i) for i in turns[-1].history_outputs())
        # the client runs the tools: outputs for the next turn
        pending_input = []
        for c in calls:
            if c.name == "apply_patch":
                touched += [p for p in patched_paths(c.args["patch"]) if p not in touched]
                if repo.failing and rng.random() < 0.6:
                    repo.failing -= rng.randint(1, min(2, repo.failing))
                elif kind == "refactor" and rng.random() < 0.2:
                    repo.failing += rng.randint(1, 4)
            elif c.name == "write_file" and c.args["path"] not in touched:
                touched.append(c.args["path"])
            cap = TOOL_OUTPUT_MAX_TOKENS
            if max_ctx is not None:
                remaining = (
                    max_ctx - context - 3000 - sum(estimate_item_tokens(i) for i in pending_input)
                )
                cap = max(60, min(cap, int(2.5 * remaining / (left * 1.3 + 1))))
            pending_input.append(
                {
                    "type": "function_call_output",
                    "call_id": c.call_id,
                    "output": execute_call(rng, repo, c, cap),
                }
            )
        if left >= 2 and rng.random() < USER_FOLLOWUP_PROB:
            pending_input.append(input_message(followup_text(rng, repo)))
        wait_ms = max(_tool_wait(rng, c.name) for c in calls)

    return Rollout(
        id=rollout_id or f"gen-{kind}-{seed:016x}",
        source="generated",
        agent_kind=kind,
        model=model,
        instructions=instructions,
        tools=TOOLS,
        seed=seed,
        meta={
            # the label the committed corpus carries (this module's path when it was written)
            "generator": "harness.traces.generator",
            "generator_version": GENERATOR_VERSION,
            "repo": repo.package,
            "size_scale": size_scale,
            "output_scale": round(scale, 4),
        },
        turns=tuple(turns),
    )


def generate_corpus(
    n: int,
    seed: int,
    *,
    kinds: Sequence[str] = KINDS,
    **kwargs: Any,
) -> list[Rollout]:
    """``n`` rollouts cycling through ``kinds``; rollout i uses ``derive_seed(seed, i)``."""
    return [
        generate_rollout(kinds[i % len(kinds)], derive_seed(seed, i), **kwargs) for i in range(n)
    ]
