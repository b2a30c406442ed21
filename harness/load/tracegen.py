"""Seeded generator of realistic coding-agent rollouts in the ``wsmode-trace`` format.

Each rollout imitates a Codex-style agent working in a Python repository: a long system prompt,
a large first user message (environment, AGENTS.md, file tree, task), then tool-calling turns
(list_dir, search, read_file, apply_patch, write_file, run_shell, run_tests) and a final summary
message. The distributions are the module constants below and are documented, with measured
corpus statistics, in ``traces/README.md``.

Everything is deterministic per seed: one ``random.Random(seed)`` drives a rollout (files get
sub-seeds drawn from it) and nothing reads global randomness, hash order or the clock.

``python -m harness.load.tracegen --out traces`` regenerates the committed corpus.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import statistics
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from harness.load.traces import (
    JSONObject,
    OutputSpec,
    Rollout,
    Turn,
    dump_rollouts,
    estimate_item_tokens,
    estimate_tokens,
    input_message,
)

__all__ = [
    "CONTEXT_BOUNDS",
    "CORPUS_LAYOUT",
    "CORPUS_SEED",
    "DEFAULT_MODEL",
    "KINDS",
    "TOOLS",
    "corpus_rollouts",
    "corpus_stats",
    "derive_seed",
    "generate_corpus",
    "generate_rollout",
    "generate_smoke",
    "write_corpus",
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
# Vocabularies

_PACKAGES: Final = (
    "ledgerkit", "fluxpipe", "tinyorm", "kvstash", "pyroute", "mdforge", "cronwheel",
    "quicktoml", "geoindex", "snapcache", "taskloom", "authlane", "metricbox", "feedparse",
)  # fmt: skip
_MODULES: Final = (
    "config", "cache", "client", "parser", "models", "utils", "storage", "scheduler", "auth",
    "events", "serializers", "handlers", "pipeline", "metrics", "retry", "validators", "http",
    "cli", "registry", "session", "backends", "plugins", "timeouts", "index", "migrations",
)  # fmt: skip
_VERBS: Final = (
    "load", "parse", "build", "resolve", "fetch", "apply", "merge", "validate", "normalize",
    "render", "flush", "compute", "encode", "decode", "register", "dispatch", "collect", "emit",
    "refresh", "split", "expire", "serialize", "schedule", "retry", "lookup", "prune",
)  # fmt: skip
_NOUNS: Final = (
    "config", "record", "batch", "token", "entry", "payload", "request", "response", "schema",
    "index", "cursor", "window", "buffer", "snapshot", "handler", "event", "session", "key",
    "path", "chunk", "header", "ttl", "backoff", "plugin", "job", "offset", "row", "column",
)  # fmt: skip
_EXCEPTIONS: Final = (
    "KeyError", "ValueError", "TypeError", "AttributeError", "AssertionError", "RuntimeError",
    "IndexError", "TimeoutError",
)  # fmt: skip
_ADJ: Final = (
    "stale", "missing", "duplicate", "expired", "empty", "nested", "unicode", "negative",
    "concurrent", "partial", "legacy", "cached", "default", "optional", "large",
)  # fmt: skip
_PROSE_SUBJECTS: Final = (
    "The agent", "You", "Each tool call", "Every edit", "The final answer", "A patch",
    "Test output", "The workspace", "Shell commands", "Your plan", "The user",
)  # fmt: skip
_PROSE_RULES: Final = (
    "must keep changes minimal and focused on the task",
    "should read the relevant code before editing it",
    "must not modify files outside the repository root",
    "should prefer apply_patch over rewriting whole files",
    "must run the narrowest relevant tests after each change",
    "should explain non-obvious decisions in one or two sentences",
    "must never commit or push unless explicitly asked",
    "should keep the existing code style, naming and import order",
    "must report failing tests honestly instead of hiding them",
    "should avoid adding new dependencies",
    "must not print secrets, tokens or credentials",
    "should summarise what changed and how it was verified",
    "must stop and ask when the request is ambiguous",
    "should batch independent read-only tool calls in parallel",
    "must respect the sandbox: network access is disabled",
    "should keep functions small and add type hints to new code",
)  # fmt: skip
_PROSE_TAILS: Final = (
    "unless the user says otherwise.", "even when it seems faster not to.",
    "so that reviewers can follow the change.", "because the sandbox is shared.",
    "and mention it in the final message.", "before moving on to the next step.",
    "when the task touches public APIs.", "to keep the diff easy to review.",
)  # fmt: skip
_SECTIONS: Final = (
    "General", "Editing files", "Running commands", "Testing", "Tool usage", "Planning",
    "Safety and sandboxing", "Code style", "Communication", "Final answer formatting",
    "Working with git", "Handling failures",
)  # fmt: skip
_TASKS: Final = {
    "bug_fix": (
        "`{f}` returns `None` for {adj} {noun}s instead of raising; callers crash later with "
        "`{exc}`. Please fix it and add a regression test.",
        "Since the last release, `{f}` ignores the {noun} {adj} flag. Users report it in #{n}. "
        "Find the cause, fix it, and make sure the test suite passes.",
        "There is an off-by-one in `{f}` when the {noun} is {adj}; see the traceback below.",
    ),
    "refactor": (
        "Split `{mod}.py` into smaller modules: move the {noun} helpers into `{mod2}.py`, keep "
        "the public names importable from the old location, and update all call sites.",
        "Replace the ad-hoc `{noun}` dicts with a `{Noun}` dataclass across the package; keep "
        "behaviour identical and the tests green.",
        "Rename `{f}` to `{f2}` everywhere (with a deprecated alias) and remove the {adj} "
        "code path it used.",
    ),
    "test_fix": (
        "CI is red: {n} tests fail in `tests/test_{mod}.py` after the {noun} change. Make the "
        "suite pass without weakening the assertions.",
        "The test suite fails on Python 3.12 ({n} failures around `{f}`). Fix the code, not the "
        "tests, unless a test is clearly wrong.",
        "`pytest -q` fails with {exc} in several {mod} tests. Investigate and get it green.",
    ),
}
_TITLES: Final = (
    "Inspecting {mod} module", "Tracing {noun} handling", "Checking {f} callers",
    "Planning the {noun} fix", "Reviewing failing test", "Verifying the patch",
    "Looking for {noun} usages", "Considering edge cases for {adj} {noun}s",
)  # fmt: skip
_THOUGHTS: Final = (
    "The failure points at `{f}`, which reads the {noun} before checking whether it is {adj}.",
    "I need to confirm how `{f2}` is called from `{mod}.py` before changing its signature.",
    "The test expects a `{exc}` here, so silently returning None is the bug.",
    "Reading the tests first will tell me which behaviour is intended.",
    "A minimal fix is to guard the {adj} case and keep the fast path unchanged.",
    "Other modules import `{f}` directly, so the old name must stay importable.",
    "I should rerun only the {mod} tests first, then the whole suite.",
    "The traceback shows the {noun} cache being consulted after expiry.",
)  # fmt: skip


def _pick(rng: random.Random, seq: Sequence[str]) -> str:
    return seq[rng.randrange(len(seq))]


def _lognormal(rng: random.Random, median: float, sigma: float, cap: float) -> float:
    return min(cap, median * math.exp(rng.gauss(0.0, sigma)))


def _fill(lines: Iterator[str], target_chars: int) -> str:
    """Join lines from an endless generator until ``target_chars`` is reached."""
    out: list[str] = []
    size = 0
    for line in lines:
        out.append(line)
        size += len(line) + 1
        if size >= target_chars:
            break
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# The simulated repository and its text


@dataclass
class _File:
    path: str
    tokens: int
    seed: int
    text: str = ""


@dataclass
class _Repo:
    rng: random.Random
    scale: float
    package: str = ""
    modules: list[str] = field(default_factory=list)
    files: dict[str, _File] = field(default_factory=dict)
    functions: list[str] = field(default_factory=list)
    failing: int = 0
    total_tests: int = 0

    def __post_init__(self) -> None:
        rng = self.rng
        self.package = _pick(rng, _PACKAGES)
        mods = list(_MODULES)
        rng.shuffle(mods)
        self.modules = mods[: rng.randint(8, 16)]
        self.functions = [f"{_pick(rng, _VERBS)}_{_pick(rng, _NOUNS)}" for _ in range(40)]
        self.total_tests = rng.randint(80, 900)
        for mod in self.modules:
            self._add(f"src/{self.package}/{mod}.py", TOOL_OUTPUT_FACTOR["read_file"])
            self._add(f"tests/test_{mod}.py", TOOL_OUTPUT_FACTOR["read_file"] * 0.8)
        for extra in ("pyproject.toml", "README.md", f"src/{self.package}/__init__.py"):
            self._add(extra, 0.5)

    def _add(self, path: str, factor: float) -> None:
        median = TOOL_OUTPUT_MEDIAN_TOKENS * factor * self.scale
        tokens = int(_lognormal(self.rng, median, TOOL_OUTPUT_SIGMA, TOOL_OUTPUT_MAX_TOKENS * 2))
        self.files[path] = _File(path, max(60, tokens), self.rng.getrandbits(32))

    def source_paths(self) -> list[str]:
        return [p for p in self.files if p.startswith("src/") and not p.endswith("__init__.py")]

    def test_paths(self) -> list[str]:
        return [p for p in self.files if p.startswith("tests/")]

    def content(self, path: str) -> str:
        f = self.files[path]
        if not f.text:
            frng = random.Random(f.seed)
            if path.endswith(".py"):
                f.text = _fill(_code_lines(frng, self, path), f.tokens * 4)
            else:
                f.text = _fill(_doc_lines(frng, self), f.tokens * 4)
        return f.text


def _fn(rng: random.Random, repo: _Repo) -> str:
    return _pick(rng, repo.functions)


def _code_lines(rng: random.Random, repo: _Repo, path: str) -> Iterator[str]:
    is_test = "/test_" in path or path.startswith("tests/")
    mod = path.rsplit("/", 1)[-1].removesuffix(".py").removeprefix("test_")
    yield f'"""{"Tests for" if is_test else "Helpers for"} {repo.package}.{mod}."""'
    yield ""
    yield "from __future__ import annotations"
    yield ""
    yield "import logging"
    for imp in sorted(rng.sample(("time", "json", "threading", "dataclasses", "typing"), 2)):
        yield f"import {imp}"
    if is_test:
        yield "import pytest"
        yield ""
        yield f"from {repo.package}.{mod} import {_fn(rng, repo)}, {_fn(rng, repo)}"
    yield ""
    yield "logger = logging.getLogger(__name__)"
    while True:
        yield ""
        yield ""
        if is_test:
            yield from _test_function(rng, repo)
        elif rng.random() < 0.25:
            yield from _class_block(rng, repo)
        else:
            yield from _function_block(rng, repo, "")


def _statement(rng: random.Random, repo: _Repo, ind: str) -> list[str]:
    v, n = _pick(rng, _NOUNS), _pick(rng, _NOUNS)
    f = _fn(rng, repo)
    choice = rng.randrange(8)
    if choice == 0:
        return [f"{ind}{v} = {f}({n}, strict={rng.choice(('True', 'False'))})"]
    if choice == 1:
        return [
            f"{ind}if {v} is None:",
            f'{ind}    raise {_pick(rng, _EXCEPTIONS)}(f"{_pick(rng, _ADJ)} {v}: {{{n}!r}}")',
        ]
    if choice == 2:
        return [f"{ind}for item in {v}.{n}s:", f"{ind}    results.append({f}(item))"]
    if choice == 3:
        return [f"{ind}with self._lock:", f"{ind}    self._{v}s[{n}.key] = {v}"]
    if choice == 4:
        return [f'{ind}logger.debug("{_pick(rng, _VERBS)} %s (%d {n}s)", {v}, len(results))']
    if choice == 5:
        return [
            f"{ind}try:",
            f"{ind}    {v} = self._{n}s[key]",
            f"{ind}except KeyError:",
            f"{ind}    return None",
        ]
    if choice == 6:
        return [f"{ind}deadline = time.monotonic() + self.{_pick(rng, _NOUNS)}_timeout"]
    return [f"{ind}{v}.update({{k: {f}(val) for k, val in {n}.items() if val is not None}})"]


def _function_block(rng: random.Random, repo: _Repo, ind: str) -> Iterator[str]:
    name = _fn(rng, repo)
    noun = _pick(rng, _NOUNS)
    self_arg = "self, " if ind else ""
    yield f"{ind}def {name}({self_arg}{noun}: {noun.title()}, *, timeout: float = 5.0) -> list:"
    doc = f"{name.split('_')[0].title()} the {noun}, skipping {_pick(rng, _ADJ)} ones."
    yield f'{ind}    """{doc}"""'
    yield f"{ind}    results: list = []"
    for _ in range(rng.randint(2, 6)):
        yield from _statement(rng, repo, ind + "    ")
    yield f"{ind}    return results"


def _class_block(rng: random.Random, repo: _Repo) -> Iterator[str]:
    noun = _pick(rng, _NOUNS).title()
    yield "@dataclasses.dataclass"
    yield f"class {noun}{_pick(rng, ('Store', 'Manager', 'Cache', 'Spec', 'Client'))}:"
    yield f'    """Keeps track of {noun.lower()} state between calls."""'
    yield ""
    for _ in range(rng.randint(2, 4)):
        yield f"    {_pick(rng, _NOUNS)}: {_pick(rng, ('int', 'str', 'float', 'dict'))} = None"
    for _ in range(rng.randint(1, 3)):
        yield ""
        yield from _function_block(rng, repo, "    ")


def _test_function(rng: random.Random, repo: _Repo) -> Iterator[str]:
    f, adj, noun = _fn(rng, repo), _pick(rng, _ADJ), _pick(rng, _NOUNS)
    if rng.random() < 0.3:
        yield f'@pytest.mark.parametrize("{noun}", [None, "", "x" * 300])'
        yield f"def test_{f}_{adj}_{noun}(tmp_path, {noun}):"
    else:
        yield f"def test_{f}_{adj}_{noun}(tmp_path):"
    yield f"    {noun} = make_{noun}(tmp_path, {adj}=True)"
    if rng.random() < 0.4:
        yield f"    with pytest.raises({_pick(rng, _EXCEPTIONS)}):"
        yield f"        {f}({noun})"
    else:
        yield f"    result = {f}({noun})"
        yield f"    assert result == expected_{noun}({noun})"
        yield f"    assert len(result) == {rng.randint(0, 12)}"


def _doc_lines(rng: random.Random, repo: _Repo) -> Iterator[str]:
    yield f"# {repo.package}"
    while True:
        yield ""
        yield f"## {_pick(rng, _SECTIONS)}"
        for _ in range(rng.randint(2, 5)):
            yield _sentence(rng)


def _sentence(rng: random.Random) -> str:
    return f"{_pick(rng, _PROSE_SUBJECTS)} {_pick(rng, _PROSE_RULES)} {_pick(rng, _PROSE_TAILS)}"


def _fmt(rng: random.Random, repo: _Repo, template: str, n: int | None = None) -> str:
    mod = _pick(rng, repo.modules)
    f = _fn(rng, repo)
    noun = _pick(rng, _NOUNS)
    return template.format(
        f=f,
        f2=_fn(rng, repo),
        mod=mod,
        mod2=_pick(rng, repo.modules),
        noun=noun,
        Noun=noun.title(),
        adj=_pick(rng, _ADJ),
        exc=_pick(rng, _EXCEPTIONS),
        n=rng.randint(2, 999) if n is None else n,
    )


def _traceback_lines(rng: random.Random, repo: _Repo) -> Iterator[str]:
    yield "Traceback (most recent call last):"
    for _ in range(rng.randint(2, 5)):
        path = _pick(rng, repo.source_paths())
        yield f'  File "/workspace/{repo.package}/{path}", line {rng.randint(10, 600)}, in ' + _fn(
            rng, repo
        )
        yield "    " + _statement(rng, repo, "")[0]
    yield f"{_pick(rng, _EXCEPTIONS)}: {_pick(rng, _ADJ)} {_pick(rng, _NOUNS)} {rng.randint(1, 99)}"


def _instructions(rng: random.Random, tokens: int) -> str:
    def lines() -> Iterator[str]:
        yield "You are a coding agent running in a terminal-based workspace."
        yield "You help the user by reading, editing and testing code in their repository."
        sections = list(_SECTIONS)
        while True:
            rng.shuffle(sections)
            for section in sections:
                yield ""
                yield f"## {section}"
                for _ in range(rng.randint(3, 8)):
                    yield f"- {_sentence(rng)}"

    return _fill(lines(), tokens * 4)


def _first_message(rng: random.Random, repo: _Repo, kind: str, tokens: int) -> list[JSONObject]:
    env = (
        "<environment_context>\n"
        f"  <cwd>/workspace/{repo.package}</cwd>\n"
        "  <approval_policy>on-request</approval_policy>\n"
        "  <sandbox_mode>workspace-write</sandbox_mode>\n"
        "  <network_access>restricted</network_access>\n"
        "  <shell>bash</shell>\n"
        "</environment_context>"
    )

    def context_lines() -> Iterator[str]:
        yield env
        yield ""
        yield f"# AGENTS.md instructions for /workspace/{repo.package}"
        yield ""
        yield "<INSTRUCTIONS>"
        for _ in range(rng.randint(6, 14)):
            yield f"- {_sentence(rng)}"
        yield "</INSTRUCTIONS>"
        yield ""
        yield "Repository layout:"
        yield from _tree_lines(rng, repo, ".")
        while True:  # then excerpts of the README / design notes
            yield from _doc_lines(rng, repo)

    task = _fmt(rng, repo, _pick(rng, _TASKS[kind]), n=repo.failing or None)
    if kind != "refactor":
        task += "\n\n```\n" + "\n".join(_traceback_lines(rng, repo)) + "\n```"
    context = _fill(context_lines(), max(400, tokens * 4 - len(task)))
    return [input_message(context), input_message(task)]


def _tree_lines(rng: random.Random, repo: _Repo, root: str) -> Iterator[str]:
    paths = sorted(p for p in repo.files if root in (".", "") or p.startswith(root))
    for p in paths:
        yield f"{p}  ({repo.files[p].tokens * 4 // 40} lines)"
    yield f"{len(paths)} files"


# ---------------------------------------------------------------------------------------------
# Tool calls and their outputs


@dataclass
class _Call:
    name: str
    args: JSONObject
    call_id: str
    output_tokens: int = 0  # requested size of the output before truncation


def _output_size(rng: random.Random, repo: _Repo, tool: str) -> int:
    median = TOOL_OUTPUT_MEDIAN_TOKENS * TOOL_OUTPUT_FACTOR[tool] * repo.scale
    return max(20, int(_lognormal(rng, median, TOOL_OUTPUT_SIGMA, TOOL_OUTPUT_MAX_TOKENS)))


def _run_tests_output(rng: random.Random, repo: _Repo, tokens: int) -> str:
    passed = repo.total_tests - repo.failing
    head = [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.11.7, pytest-8.3.2, pluggy-1.5.0",
        f"rootdir: /workspace/{repo.package}",
        "configfile: pyproject.toml",
        f"collected {repo.total_tests} items",
        "",
    ]
    paths = repo.test_paths()
    for i, t in enumerate(paths, start=1):
        dots = "".join("F" if rng.random() < 0.04 * repo.failing else "." for _ in range(24))
        head.append(f"{t} {dots:<50} [{100 * i // len(paths):>3}%]")
    duration = f"{rng.uniform(0.8, 40.0):.2f}s"
    if repo.failing == 0:
        return "\n".join([*head, "", f"{'=' * 30} {passed} passed in {duration} {'=' * 30}"])

    def failures() -> Iterator[str]:
        yield "=================================== FAILURES ==================================="
        while True:
            test = f"test_{_fn(rng, repo)}_{_pick(rng, _ADJ)}"
            yield f"{'_' * 20} {test} {'_' * 20}"
            yield ""
            yield from _test_function(rng, repo)
            yield f">       assert result == expected_{_pick(rng, _NOUNS)}(value)"
            yield f"E       AssertionError: assert None == {{'{_pick(rng, _NOUNS)}': 1}}"
            yield f"E        +  where None = {_fn(rng, repo)}(<{_pick(rng, _NOUNS).title()}>)"
            yield ""
            yield from _traceback_lines(rng, repo)
            yield f"{_pick(rng, repo.test_paths())}:{rng.randint(10, 400)}: AssertionError"

    body = _fill(failures(), max(200, tokens * 4 - sum(len(h) + 1 for h in head) - 300))
    tail = [
        "=========================== short test summary info ============================",
        *(
            f"FAILED {_pick(rng, repo.test_paths())}::test_{_fn(rng, repo)} - AssertionError"
            for _ in range(min(repo.failing, 8))
        ),
        f"{'=' * 20} {repo.failing} failed, {passed} passed in {duration} {'=' * 20}",
    ]
    return "\n".join([*head, "", body, *tail])


def _search_output(rng: random.Random, repo: _Repo, tokens: int) -> str:
    def lines() -> Iterator[str]:
        while True:
            path = _pick(rng, list(repo.files))
            code = _statement(rng, repo, "    ")[0]
            yield f"{path}:{rng.randint(1, 800)}:{code}"

    return _fill(lines(), tokens * 4)


def _shell_output(rng: random.Random, repo: _Repo, command: str, tokens: int) -> str:
    if command.startswith("git diff"):
        path = _pick(rng, repo.source_paths())

        def diff() -> Iterator[str]:
            yield f"diff --git a/{path} b/{path}"
            yield f"--- a/{path}\n+++ b/{path}"
            while True:
                yield f"@@ -{rng.randint(1, 400)},7 +{rng.randint(1, 400)},8 @@"
                for _ in range(rng.randint(3, 8)):
                    mark = _pick(rng, (" ", " ", "-", "+"))
                    yield mark + _statement(rng, repo, "    ")[0]

        return _fill(diff(), tokens * 4)
    if command.startswith("git status"):
        changed = rng.sample(repo.source_paths(), min(3, len(repo.source_paths())))
        return "On branch main\nChanges not staged for commit:\n" + "\n".join(
            f"\tmodified:   {p}" for p in changed
        )
    if command.startswith(("ruff", "mypy")):

        def lint() -> Iterator[str]:
            while True:
                path = _pick(rng, repo.source_paths())
                code = _pick(rng, ("E501", "F401", "B006", "UP007", "arg-type", "union-attr"))
                yield (
                    f"{path}:{rng.randint(1, 500)}:{rng.randint(1, 80)}: {code} "
                    f"{_pick(rng, _ADJ)} {_pick(rng, _NOUNS)} in `{_fn(rng, repo)}`"
                )

        return _fill(lint(), tokens * 4)

    def trace() -> Iterator[str]:
        while True:
            yield from _traceback_lines(rng, repo)

    return _fill(trace(), tokens * 4)


def _patch(rng: random.Random, repo: _Repo, paths: Sequence[str], tokens: int) -> str:
    def lines() -> Iterator[str]:
        yield "*** Begin Patch"
        for path in paths:
            yield f"*** Update File: {path}"
            for _ in range(rng.randint(1, 3)):
                yield f"@@ def {_fn(rng, repo)}("
                for _ in range(rng.randint(2, 5)):
                    yield " " + _statement(rng, repo, "    ")[0]
                yield "-" + _statement(rng, repo, "    ")[0]
                for stmt in _statement(rng, repo, "    "):
                    yield "+" + stmt
        while True:  # long patches: keep extending the last file's hunk
            yield "+" + _statement(rng, repo, "    ")[0]

    text = _fill(lines(), tokens * 4)
    return text + "\n*** End Patch"


def _write_file_content(rng: random.Random, repo: _Repo, path: str, tokens: int) -> str:
    return _fill(_code_lines(rng, repo, path), tokens * 4)


def _execute(rng: random.Random, repo: _Repo, call: _Call, cap_tokens: int) -> str:
    """The tool output for a call, truncated to ``cap_tokens`` like agents truncate logs."""
    name, args = call.name, call.args
    if name == "read_file":
        text = repo.content(args["path"])
        numbered = "\n".join(f"{i:>5}\t{line}" for i, line in enumerate(text.split("\n"), 1))
        body = numbered
    elif name in ("apply_patch", "write_file"):
        changed = args["path"] if name == "write_file" else _patched_paths(args["patch"])
        return "Success. Updated the following files:\n" + "\n".join(
            f"M {p}" for p in ([changed] if isinstance(changed, str) else changed)
        )
    elif name == "run_tests":
        size = call.output_tokens if repo.failing else max(40, call.output_tokens // 4)
        body = _run_tests_output(rng, repo, size)
    elif name == "search":
        body = _search_output(rng, repo, call.output_tokens)
    elif name == "list_dir":
        body = "\n".join(_tree_lines(rng, repo, args["path"]))
    else:
        body = _shell_output(rng, repo, args["command"], call.output_tokens)
    if estimate_tokens(body) <= cap_tokens:
        return body
    kept = body[: cap_tokens * 4]
    kept = kept[: kept.rfind("\n")] if "\n" in kept else kept
    omitted = body.count("\n") - kept.count("\n")
    return f"{kept}\n[... output truncated: {omitted} more lines ...]"


def _patched_paths(patch: str) -> list[str]:
    return [ln.split(": ", 1)[1] for ln in patch.split("\n") if ln.startswith("*** Update File: ")]


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
_SHELL_COMMANDS: Final = (
    "git status", "git diff", "git diff --stat", "ruff check src", "mypy src",
    "python -c 'import {pkg}; print({pkg}.__version__)'", "python scripts/repro.py",
)  # fmt: skip


def _weighted(rng: random.Random, weights: dict[str, int]) -> str:
    names = list(weights)
    return rng.choices(names, weights=[weights[n] for n in names])[0]


def _make_call(rng: random.Random, repo: _Repo, tool: str, call_id: str) -> _Call:
    src, tests = repo.source_paths(), repo.test_paths()
    args: JSONObject
    if tool == "read_file":
        path = _pick(rng, src if rng.random() < 0.65 else tests)
        args = {"path": path, "start_line": None, "end_line": None}
    elif tool == "search":
        pattern = _pick(
            rng, (_fn(rng, repo), f"def {_fn(rng, repo)}", f"class {_pick(rng, _NOUNS).title()}")
        )
        args = {"pattern": pattern, "path": _pick(rng, ("src", "tests", ".")), "glob": "*.py"}
    elif tool == "list_dir":
        args = {"path": _pick(rng, (".", "src", "tests")), "depth": rng.choice((None, 2, 3))}
    elif tool == "run_tests":
        target = None if rng.random() < 0.5 else _pick(rng, tests)
        args = {"target": target, "keyword": None, "fail_fast": rng.random() < 0.2}
    elif tool == "run_shell":
        command = _pick(rng, _SHELL_COMMANDS).format(pkg=repo.package)
        args = {"command": command, "workdir": None, "timeout_ms": 60000}
    elif tool == "apply_patch":
        n_files = 1 if rng.random() < 0.8 else rng.randint(2, 3)
        paths = rng.sample(src + tests, min(n_files, len(src + tests)))
        tokens = int(_lognormal(rng, PATCH_MEDIAN_TOKENS, PATCH_SIGMA, PATCH_MAX_TOKENS))
        args = {"patch": _patch(rng, repo, paths, max(30, tokens))}
    else:  # write_file
        path = f"src/{repo.package}/{_pick(rng, _MODULES)}_{_pick(rng, _NOUNS)}.py"
        tokens = int(_lognormal(rng, PATCH_MEDIAN_TOKENS * 1.5, PATCH_SIGMA, PATCH_MAX_TOKENS))
        args = {"path": path, "content": _write_file_content(rng, repo, path, max(60, tokens))}
    call = _Call(tool, args, call_id)
    if tool in TOOL_OUTPUT_FACTOR:
        call.output_tokens = _output_size(rng, repo, tool)
    return call


def _tool_wait(rng: random.Random, tool: str) -> float:
    if tool == "run_tests":
        return _lognormal(rng, TEST_WAIT_MEDIAN_MS, TEST_WAIT_SIGMA, TOOL_WAIT_MAX_MS)
    return _lognormal(rng, TOOL_WAIT_MEDIAN_MS, TOOL_WAIT_SIGMA, TOOL_WAIT_MAX_MS)


def _reasoning(rng: random.Random, repo: _Repo) -> OutputSpec:
    title = _fmt(rng, repo, _pick(rng, _TITLES))
    thoughts = " ".join(_fmt(rng, repo, _pick(rng, _THOUGHTS)) for _ in range(rng.randint(1, 3)))
    summary = f"**{title}**\n\n{thoughts}"
    tokens = int(_lognormal(rng, REASONING_MEDIAN_TOKENS, REASONING_SIGMA, REASONING_MAX_TOKENS))
    return OutputSpec.reasoning(summary, tokens)


def _preamble(rng: random.Random, repo: _Repo, call: _Call) -> OutputSpec:
    what = {
        "read_file": "read `{p}` to see how it works",
        "search": "search for the remaining call sites",
        "list_dir": "look at the repository layout first",
        "run_tests": "run the tests to check the current state",
        "run_shell": "check the working tree",
        "apply_patch": "apply the fix",
        "write_file": "create the new module",
    }[call.name].format(p=call.args.get("path", ""))
    return OutputSpec.message(f"I'll {what}.")


def _final_message(rng: random.Random, repo: _Repo, kind: str, touched: list[str]) -> OutputSpec:
    verb = {"bug_fix": "Fixed", "refactor": "Refactored", "test_fix": "Repaired"}[kind]

    def lines() -> Iterator[str]:
        yield f"{verb} the {_pick(rng, _NOUNS)} handling in `{repo.package}`."
        yield ""
        yield "**Changes**"
        for path in touched or repo.source_paths()[:2]:
            yield f"- `{path}`: {_fmt(rng, repo, _pick(rng, _THOUGHTS))}"
        yield ""
        yield "**Verification**"
        yield f"- `pytest -q`: {repo.total_tests} passed."
        yield ""
        yield "**Notes**"
        while True:
            yield f"- {_fmt(rng, repo, _pick(rng, _THOUGHTS))}"

    size = rng.randint(*FINAL_MESSAGE_TOKENS)
    return OutputSpec.message(_fill(lines(), size * 4))


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
    repo = _Repo(rng, scale)
    turns_total = n_turns if n_turns is not None else rng.randint(*TURNS_RANGE[kind])
    instructions = _instructions(rng, int(rng.randint(*INSTRUCTIONS_TOKENS) * size_scale))
    repo.failing = {
        "bug_fix": 1 + rng.randrange(3),
        "refactor": 0,
        "test_fix": 2 + rng.randrange(11),
    }[kind]
    first = _first_message(rng, repo, kind, int(rng.randint(*FIRST_MESSAGE_TOKENS) * size_scale))
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
            outputs.append(_preamble(rng, repo, calls[0]))
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
        for out in outputs:
            item = out.history_item()
            if item is not None:
                context += estimate_item_tokens(item)
        # the client runs the tools: outputs for the next turn
        pending_input = []
        for c in calls:
            if c.name == "apply_patch":
                touched += [p for p in _patched_paths(c.args["patch"]) if p not in touched]
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
                    "output": _execute(rng, repo, c, cap),
                }
            )
        if left >= 2 and rng.random() < USER_FOLLOWUP_PROB:
            pending_input.append(
                input_message(
                    _fmt(rng, repo, "Also keep `{f}` backwards compatible; other teams import it.")
                )
            )
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
            "generator": "harness.load.tracegen",
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


def generate_smoke(seed: int = 0) -> list[Rollout]:
    """Three short rollouts (one per kind, 5 turns, a few thousand tokens) for fast tests."""
    return [
        generate_rollout(
            kind,
            derive_seed(seed, "smoke", kind),
            n_turns=5,
            size_scale=0.08,
            context_bounds=None,
            rollout_id=f"smoke-{kind}",
        )
        for kind in KINDS
    ]


def _quantiles(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {}

    def q(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))], 1)

    return {
        "min": round(ordered[0], 1),
        "p50": q(0.5),
        "p90": q(0.9),
        "p99": q(0.99),
        "max": round(ordered[-1], 1),
    }


def corpus_stats(rollouts: Sequence[Rollout]) -> JSONObject:
    """Measured distributions of a set of rollouts (the numbers in traces/README.md)."""
    tool_outputs: list[float] = []
    read_outputs: list[float] = []  # outputs of tools that return content (not edit acks)
    waits: list[float] = []
    test_waits: list[float] = []  # turns answering a run_tests call
    other_waits: list[float] = []
    out_tokens: list[float] = []
    parallel = 0
    calls_turns = 0
    for r in rollouts:
        names: dict[str, str] = {}
        for t in r.turns:
            out_tokens.append(t.output_tokens)
            if t.index > 0:
                waits.append(t.tool_wait_ms)
                if "run_tests" in names.values():
                    test_waits.append(t.tool_wait_ms)
                else:
                    other_waits.append(t.tool_wait_ms)
            n_calls = len(t.function_calls)
            if n_calls:
                calls_turns += 1
                parallel += n_calls > 1
            for item in t.input:
                if item.get("type") == "function_call_output":
                    size = estimate_tokens(str(item["output"]))
                    tool_outputs.append(size)
                    if names.get(item["call_id"]) not in ("apply_patch", "write_file"):
                        read_outputs.append(size)
            names = {c.call_id: c.name for c in t.function_calls}
    by_kind: dict[str, int] = {}
    for r in rollouts:
        by_kind[r.agent_kind] = by_kind.get(r.agent_kind, 0) + 1
    turn_counts = [len(r.turns) for r in rollouts]
    return {
        "rollouts": len(rollouts),
        "by_kind": dict(sorted(by_kind.items())),
        "turns_total": sum(turn_counts),
        "turns_per_rollout": _quantiles(turn_counts),
        "instructions_tokens": _quantiles(
            [estimate_tokens(r.instructions or "") for r in rollouts]
        ),
        "first_turn_context_tokens": _quantiles([r.context_tokens_estimate(0) for r in rollouts]),
        "final_context_tokens": _quantiles([r.final_context_tokens for r in rollouts]),
        "tool_output_tokens": _quantiles(tool_outputs),
        "tool_output_tokens_excluding_edits": _quantiles(read_outputs),
        "output_tokens_per_turn": _quantiles(out_tokens),
        "tool_wait_ms": _quantiles(waits),
        "tool_wait_ms_mean": round(statistics.fmean(waits), 1) if waits else 0.0,
        "tool_wait_ms_test_turns": _quantiles(test_waits),
        "tool_wait_ms_other_turns": _quantiles(other_waits),
        "parallel_call_turn_share": round(parallel / calls_turns, 3) if calls_turns else 0.0,
    }


#: The committed corpus: (file name, kind, count) and the corpus seed.
CORPUS_SEED: Final = 20260
CORPUS_LAYOUT: Final = (
    ("bug_fix.jsonl", "bug_fix", 10),
    ("refactor.jsonl", "refactor", 10),
    ("test_fix.jsonl", "test_fix", 10),
)


def corpus_rollouts(kind: str, count: int, seed: int = CORPUS_SEED) -> list[Rollout]:
    """The committed corpus's rollouts of one kind (``corpus-<kind>-<i>``)."""
    return [
        generate_rollout(kind, derive_seed(seed, kind, i), rollout_id=f"corpus-{kind}-{i:02d}")
        for i in range(count)
    ]


def write_corpus(out_dir: str | Path, seed: int = CORPUS_SEED) -> dict[str, int]:
    """Write ``corpus/*.jsonl`` and ``smoke.jsonl`` under ``out_dir``; returns bytes per file."""
    out = Path(out_dir)
    sizes: dict[str, int] = {}
    for name, kind, count in CORPUS_LAYOUT:
        sizes[f"corpus/{name}"] = dump_rollouts(
            corpus_rollouts(kind, count, seed), out / "corpus" / name
        )
    sizes["smoke.jsonl"] = dump_rollouts(generate_smoke(seed), out / "smoke.jsonl")
    return sizes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate the bundled trace corpus.")
    parser.add_argument("--out", default="traces", help="output directory (default: traces)")
    parser.add_argument("--seed", type=int, default=CORPUS_SEED)
    parser.add_argument("--stats", action="store_true", help="print corpus statistics as JSON")
    args = parser.parse_args(argv)
    sizes = write_corpus(args.out, args.seed)
    for name, size in sizes.items():
        print(f"{name}: {size / 1e6:.2f} MB")
    if args.stats:
        from harness.load.traces import load_traces

        print(json.dumps(corpus_stats(load_traces(Path(args.out) / "corpus")), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
