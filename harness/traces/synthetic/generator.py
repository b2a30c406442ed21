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
import random
from collections.abc import Sequence
from dataclasses import dataclass
from types import EllipsisType
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
from harness.traces.synthetic.targets import CALIBRATED, UNCALIBRATED, Targets
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
    "Targets",
    "derive_seed",
    "generate_corpus",
    "generate_rollout",
]

# ---------------------------------------------------------------------------------------------
# Distributions: harness.traces.synthetic.targets (documented in traces/README.md and
# traces/CALIBRATION.md). Token counts are chars / 4.

KINDS: Final = ("bug_fix", "refactor", "test_fix")
DEFAULT_MODEL: Final = "gpt-5-codex"
#: 2: the distributions became a parameter (``Targets``), the default the calibrated ones, and
#: a turn may answer the user (``Targets.user_turn_prob``)
GENERATOR_VERSION: Final = 2
#: The default targets' turns per kind, system prompt sizes and final-context bounds.
TURNS_RANGE: Final = CALIBRATED.turns_range
INSTRUCTIONS_TOKENS: Final = CALIBRATED.instructions_tokens
CONTEXT_BOUNDS: Final = CALIBRATED.context_bounds


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


def _file_sizes(targets: Targets) -> FileSizes:
    """Repository files are sized like their read_file outputs (twice the output cap)."""
    return FileSizes(
        median_tokens=targets.tool_output_median_tokens,
        sigma=targets.tool_output_sigma,
        max_tokens=targets.tool_output_max_tokens * 2,
        source_factor=targets.tool_output_factor["read_file"],
    )


def _weighted(rng: random.Random, weights: dict[str, int]) -> str:
    names = list(weights)
    return rng.choices(names, weights=[weights[n] for n in names])[0]


def _output_size(rng: random.Random, repo: Repo, tool: str, t: Targets) -> int:
    median = t.tool_output_median_tokens * t.tool_output_factor[tool] * repo.scale
    return max(20, int(lognormal(rng, median, t.tool_output_sigma, t.tool_output_max_tokens)))


def _make_call(rng: random.Random, repo: Repo, tool: str, call_id: str, t: Targets) -> ToolCall:
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
        tokens = int(lognormal(rng, t.patch_median_tokens, t.patch_sigma, t.patch_max_tokens))
        args = {"patch": patch_text(rng, repo, paths, max(30, tokens))}
    else:  # write_file
        path = new_module_path(rng, repo)
        tokens = int(lognormal(rng, t.patch_median_tokens * 1.5, t.patch_sigma, t.patch_max_tokens))
        args = {"path": path, "content": module_text(rng, repo, path, max(60, tokens))}
    call = ToolCall(tool, args, call_id)
    if tool in t.tool_output_factor:
        call.output_tokens = _output_size(rng, repo, tool, t)
    return call


def _tool_wait(rng: random.Random, tool: str, t: Targets) -> float:
    if tool == "run_tests":
        return lognormal(rng, t.test_wait_median_ms, t.test_wait_sigma, t.tool_wait_max_ms)
    return lognormal(rng, t.tool_wait_median_ms, t.tool_wait_sigma, t.tool_wait_max_ms)


def _reasoning(rng: random.Random, repo: Repo, t: Targets) -> OutputSpec:
    summary = reasoning_summary(rng, repo)
    tokens = int(
        lognormal(rng, t.reasoning_median_tokens, t.reasoning_sigma, t.reasoning_max_tokens)
    )
    return OutputSpec.reasoning(summary, tokens)


def _final_message(
    rng: random.Random, repo: Repo, kind: str, touched: list[str], size_range: tuple[int, int]
) -> OutputSpec:
    size = rng.randint(*size_range)
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
    context_bounds: tuple[int, int] | EllipsisType | None = ...,
    model: str = DEFAULT_MODEL,
    rollout_id: str | None = None,
    targets: Targets = CALIBRATED,
) -> Rollout:
    """Generate one rollout of ``kind`` ("bug_fix", "refactor", "test_fix"); same seed and
    targets, same trace.

    ``targets`` are the distributions it is drawn from (``harness.traces.synthetic.targets``:
    the calibrated ones by default). ``n_turns`` overrides the kind's turn range;
    ``size_scale`` scales every text size (system prompt, first message, files, tool outputs,
    patches are not scaled); ``context_bounds`` (min, max) bounds the final context estimate
    (default: the targets'), or ``None`` to leave it unbounded.
    """
    if kind not in targets.turns_range:
        raise ValueError(f"unknown rollout kind {kind!r}; expected one of {', '.join(KINDS)}")
    if n_turns is not None and n_turns < 1:
        raise ValueError("n_turns must be >= 1")
    if size_scale <= 0:
        raise ValueError("size_scale must be > 0")
    bounds = targets.context_bounds if context_bounds is ... else context_bounds
    plan = _Plan(kind, seed, n_turns, size_scale, bounds, model, rollout_id, targets)
    scale = size_scale
    rollout = _generate(plan, scale)
    if bounds is not None:
        low = bounds[0]
        for _ in range(6):
            final = rollout.final_context_tokens
            if final >= low:
                break
            scale *= min(4.0, 1.15 * low / final)
            rollout = _generate(plan, scale)
    return rollout


@dataclass(frozen=True)
class _Plan:
    kind: str
    seed: int
    n_turns: int | None
    size_scale: float
    bounds: tuple[int, int] | None
    model: str
    rollout_id: str | None
    targets: Targets


def _generate(plan: _Plan, scale: float) -> Rollout:
    kind, seed, size_scale, t = plan.kind, plan.seed, plan.size_scale, plan.targets
    rng = random.Random(seed)
    repo = Repo(rng, scale, _file_sizes(t))
    turns_total = plan.n_turns if plan.n_turns is not None else rng.randint(*t.turns_range[kind])
    instructions = instructions_text(rng, int(rng.randint(*t.instructions_tokens) * size_scale))
    repo.failing = {
        "bug_fix": 1 + rng.randrange(3),
        "refactor": 0,
        "test_fix": 2 + rng.randrange(11),
    }[kind]
    first = first_message(rng, repo, kind, int(rng.randint(*t.first_message_tokens) * size_scale))
    max_ctx = plan.bounds[1] if plan.bounds is not None else None
    context = estimate_tokens(instructions) + estimate_tokens(json.dumps(list(TOOLS)))
    pending_input: list[JSONObject] = first
    wait_ms = 0.0
    touched: list[str] = []
    turns: list[Turn] = []
    ids = iter(range(1, 1_000_000))

    def call_id() -> str:
        digest = hashlib.sha256(f"{seed}:{kind}:call:{next(ids)}".encode()).hexdigest()
        return f"call_{digest[:24]}"

    def close(outputs: list[OutputSpec]) -> None:
        turns.append(
            Turn(
                index=len(turns),
                input=tuple(pending_input),
                output=tuple(outputs),
                tool_wait_ms=round(wait_ms, 1),
            )
        )

    for index in range(turns_total):
        context += sum(estimate_item_tokens(i) for i in pending_input)
        left = turns_total - index - 1
        outputs: list[OutputSpec] = []
        if left == 0:  # final answer
            if rng.random() < t.reasoning_prob:
                outputs.append(_reasoning(rng, repo, t))
            outputs.append(_final_message(rng, repo, kind, touched, t.final_message_tokens))
            close(outputs)
            break
        # a progress report to the user, who answers (never drawn when the chance is 0, so
        # version-1 targets give version 1's rollouts)
        if left >= 3 and t.user_turn_prob > 0 and rng.random() < t.user_turn_prob:
            if rng.random() < t.reasoning_prob:
                outputs.append(_reasoning(rng, repo, t))
            outputs.append(_final_message(rng, repo, kind, touched, t.user_reply_tokens))
            close(outputs)
            context += sum(estimate_item_tokens(i) for i in turns[-1].history_outputs())
            pending_input = [input_message(followup_text(rng, repo))]
            wait_ms = 0.0
            continue
        progress = index / max(1, turns_total - 1)
        if left == 1:  # verify before answering
            tools = ["run_tests"]
            repo.failing = 0
        else:
            weights = next(w for limit, w in _PHASES[kind] if progress < limit)
            tool = _weighted(rng, weights)
            tools = [tool]
            if tool in _PARALLEL_OK and rng.random() < t.parallel_given_read_only:
                tools += [
                    _weighted(rng, {"read_file": 3, "search": 2, "list_dir": 1})
                    for _ in range(rng.randint(*t.parallel_calls) - 1)
                ]
        calls = [_make_call(rng, repo, name, call_id(), t) for name in tools]
        if rng.random() < t.reasoning_prob:
            outputs.append(_reasoning(rng, repo, t))
        if rng.random() < t.preamble_prob:
            outputs.append(OutputSpec.message(preamble_text(calls[0])))
        outputs += [
            OutputSpec.function_call(c.name, json.dumps(c.args, separators=(",", ":")), c.call_id)
            for c in calls
        ]
        close(outputs)
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
            cap = t.tool_output_max_tokens
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
        if left >= 2 and rng.random() < t.user_followup_prob:
            pending_input.append(input_message(followup_text(rng, repo)))
        wait_ms = max(_tool_wait(rng, c.name, t) for c in calls)

    meta: JSONObject = {
        # the label the committed corpus carries (this module's path when it was written)
        "generator": "harness.traces.generator",
        # version 1's targets make version 1's rollouts, byte for byte
        "generator_version": 1 if t == UNCALIBRATED else GENERATOR_VERSION,
        "repo": repo.package,
        "size_scale": size_scale,
        "output_scale": round(scale, 4),
    }
    if t not in (CALIBRATED, UNCALIBRATED):
        meta["targets"] = "custom"
    return Rollout(
        id=plan.rollout_id or f"gen-{kind}-{seed:016x}",
        source="generated",
        agent_kind=kind,
        model=plan.model,
        instructions=instructions,
        tools=TOOLS,
        seed=seed,
        meta=meta,
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
