"""What a generated rollout says: the synthetic repository and the text of a rollout.

``harness.traces.synthetic.generator`` decides how a rollout goes (how many turns, which tools,
how big each text is, from its documented distributions); this module writes the text it asks for:

* the vocabularies (packages, modules, identifiers, exceptions, guideline prose, task and
  reasoning templates, shell commands);
* ``Repo``, the invented Python package a rollout works in: its modules and tests, each file
  with a seeded text so re-reads return the same bytes, and its test-suite state;
* the system prompt, the first user message, reasoning summaries, preambles, follow-ups and
  the final message;
* tool-call arguments (search patterns, shell commands, apply_patch patches, new modules) and
  ``execute_call``, which turns a ``ToolCall`` into its output (file reads, pytest reports with
  failures and tracebacks, ripgrep hits, git diffs, lint output, listings, edit acks),
  truncated like agents truncate logs.

Every function draws only from the ``random.Random`` it is given, so a rollout's text is fixed
by its seed and by the order of the calls.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final

from harness.traces.format import JSONObject, estimate_tokens, input_message

__all__ = [
    "FileSizes",
    "Repo",
    "ToolCall",
    "execute_call",
    "final_message_text",
    "first_message",
    "followup_text",
    "instructions_text",
    "lognormal",
    "module_text",
    "new_module_path",
    "patch_text",
    "patched_paths",
    "pick",
    "preamble_text",
    "reasoning_summary",
    "search_pattern",
    "shell_command",
]

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
_SHELL_COMMANDS: Final = (
    "git status", "git diff", "git diff --stat", "ruff check src", "mypy src",
    "python -c 'import {pkg}; print({pkg}.__version__)'", "python scripts/repro.py",
)  # fmt: skip


def pick(rng: random.Random, seq: Sequence[str]) -> str:
    """One element of ``seq`` (one ``randrange`` draw)."""
    return seq[rng.randrange(len(seq))]


def lognormal(rng: random.Random, median: float, sigma: float, cap: float) -> float:
    """A lognormal draw with the given median and sigma, capped at ``cap``."""
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


@dataclass(frozen=True)
class FileSizes:
    """File sizes in tokens: lognormal(median x factor x scale, sigma), capped, at least 60.

    Source modules get ``source_factor``, their tests 0.8 of it, the README, pyproject.toml and
    ``__init__.py`` 0.5 (the caller passes its documented read_file distribution).
    """

    median_tokens: float
    sigma: float
    max_tokens: float
    source_factor: float


@dataclass
class _File:
    path: str
    tokens: int
    seed: int
    text: str = ""


@dataclass
class Repo:
    """The invented package a rollout works in, built from ``rng`` on creation.

    ``scale`` multiplies every file size; ``failing`` is the number of currently failing tests
    (the planner updates it as patches land). A file's text is drawn from its own sub-seed the
    first time it is read, so it is the same on every read.
    """

    rng: random.Random
    scale: float
    sizes: FileSizes
    package: str = ""
    modules: list[str] = field(default_factory=list)
    files: dict[str, _File] = field(default_factory=dict)
    functions: list[str] = field(default_factory=list)
    failing: int = 0
    total_tests: int = 0

    def __post_init__(self) -> None:
        rng = self.rng
        self.package = pick(rng, _PACKAGES)
        mods = list(_MODULES)
        rng.shuffle(mods)
        self.modules = mods[: rng.randint(8, 16)]
        self.functions = [f"{pick(rng, _VERBS)}_{pick(rng, _NOUNS)}" for _ in range(40)]
        self.total_tests = rng.randint(80, 900)
        for mod in self.modules:
            self._add(f"src/{self.package}/{mod}.py", self.sizes.source_factor)
            self._add(f"tests/test_{mod}.py", self.sizes.source_factor * 0.8)
        for extra in ("pyproject.toml", "README.md", f"src/{self.package}/__init__.py"):
            self._add(extra, 0.5)

    def _add(self, path: str, factor: float) -> None:
        median = self.sizes.median_tokens * factor * self.scale
        tokens = int(lognormal(self.rng, median, self.sizes.sigma, self.sizes.max_tokens))
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


def _fn(rng: random.Random, repo: Repo) -> str:
    return pick(rng, repo.functions)


def _code_lines(rng: random.Random, repo: Repo, path: str) -> Iterator[str]:
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


def _statement(rng: random.Random, repo: Repo, ind: str) -> list[str]:
    v, n = pick(rng, _NOUNS), pick(rng, _NOUNS)
    f = _fn(rng, repo)
    choice = rng.randrange(8)
    if choice == 0:
        return [f"{ind}{v} = {f}({n}, strict={rng.choice(('True', 'False'))})"]
    if choice == 1:
        return [
            f"{ind}if {v} is None:",
            f'{ind}    raise {pick(rng, _EXCEPTIONS)}(f"{pick(rng, _ADJ)} {v}: {{{n}!r}}")',
        ]
    if choice == 2:
        return [f"{ind}for item in {v}.{n}s:", f"{ind}    results.append({f}(item))"]
    if choice == 3:
        return [f"{ind}with self._lock:", f"{ind}    self._{v}s[{n}.key] = {v}"]
    if choice == 4:
        return [f'{ind}logger.debug("{pick(rng, _VERBS)} %s (%d {n}s)", {v}, len(results))']
    if choice == 5:
        return [
            f"{ind}try:",
            f"{ind}    {v} = self._{n}s[key]",
            f"{ind}except KeyError:",
            f"{ind}    return None",
        ]
    if choice == 6:
        return [f"{ind}deadline = time.monotonic() + self.{pick(rng, _NOUNS)}_timeout"]
    return [f"{ind}{v}.update({{k: {f}(val) for k, val in {n}.items() if val is not None}})"]


def _function_block(rng: random.Random, repo: Repo, ind: str) -> Iterator[str]:
    name = _fn(rng, repo)
    noun = pick(rng, _NOUNS)
    self_arg = "self, " if ind else ""
    yield f"{ind}def {name}({self_arg}{noun}: {noun.title()}, *, timeout: float = 5.0) -> list:"
    doc = f"{name.split('_')[0].title()} the {noun}, skipping {pick(rng, _ADJ)} ones."
    yield f'{ind}    """{doc}"""'
    yield f"{ind}    results: list = []"
    for _ in range(rng.randint(2, 6)):
        yield from _statement(rng, repo, ind + "    ")
    yield f"{ind}    return results"


def _class_block(rng: random.Random, repo: Repo) -> Iterator[str]:
    noun = pick(rng, _NOUNS).title()
    yield "@dataclasses.dataclass"
    yield f"class {noun}{pick(rng, ('Store', 'Manager', 'Cache', 'Spec', 'Client'))}:"
    yield f'    """Keeps track of {noun.lower()} state between calls."""'
    yield ""
    for _ in range(rng.randint(2, 4)):
        yield f"    {pick(rng, _NOUNS)}: {pick(rng, ('int', 'str', 'float', 'dict'))} = None"
    for _ in range(rng.randint(1, 3)):
        yield ""
        yield from _function_block(rng, repo, "    ")


def _test_function(rng: random.Random, repo: Repo) -> Iterator[str]:
    f, adj, noun = _fn(rng, repo), pick(rng, _ADJ), pick(rng, _NOUNS)
    if rng.random() < 0.3:
        yield f'@pytest.mark.parametrize("{noun}", [None, "", "x" * 300])'
        yield f"def test_{f}_{adj}_{noun}(tmp_path, {noun}):"
    else:
        yield f"def test_{f}_{adj}_{noun}(tmp_path):"
    yield f"    {noun} = make_{noun}(tmp_path, {adj}=True)"
    if rng.random() < 0.4:
        yield f"    with pytest.raises({pick(rng, _EXCEPTIONS)}):"
        yield f"        {f}({noun})"
    else:
        yield f"    result = {f}({noun})"
        yield f"    assert result == expected_{noun}({noun})"
        yield f"    assert len(result) == {rng.randint(0, 12)}"


def _doc_lines(rng: random.Random, repo: Repo) -> Iterator[str]:
    yield f"# {repo.package}"
    while True:
        yield ""
        yield f"## {pick(rng, _SECTIONS)}"
        for _ in range(rng.randint(2, 5)):
            yield _sentence(rng)


def _sentence(rng: random.Random) -> str:
    return f"{pick(rng, _PROSE_SUBJECTS)} {pick(rng, _PROSE_RULES)} {pick(rng, _PROSE_TAILS)}"


def _fmt(rng: random.Random, repo: Repo, template: str, n: int | None = None) -> str:
    mod = pick(rng, repo.modules)
    f = _fn(rng, repo)
    noun = pick(rng, _NOUNS)
    return template.format(
        f=f,
        f2=_fn(rng, repo),
        mod=mod,
        mod2=pick(rng, repo.modules),
        noun=noun,
        Noun=noun.title(),
        adj=pick(rng, _ADJ),
        exc=pick(rng, _EXCEPTIONS),
        n=rng.randint(2, 999) if n is None else n,
    )


def _traceback_lines(rng: random.Random, repo: Repo) -> Iterator[str]:
    yield "Traceback (most recent call last):"
    for _ in range(rng.randint(2, 5)):
        path = pick(rng, repo.source_paths())
        yield f'  File "/workspace/{repo.package}/{path}", line {rng.randint(10, 600)}, in ' + _fn(
            rng, repo
        )
        yield "    " + _statement(rng, repo, "")[0]
    yield f"{pick(rng, _EXCEPTIONS)}: {pick(rng, _ADJ)} {pick(rng, _NOUNS)} {rng.randint(1, 99)}"


def instructions_text(rng: random.Random, tokens: int) -> str:
    """The system prompt: agent guidelines in sections, about ``tokens`` tokens."""

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


def first_message(rng: random.Random, repo: Repo, kind: str, tokens: int) -> list[JSONObject]:
    """The first user input: the context (environment, AGENTS.md, tree, README) and the task."""
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

    task = _fmt(rng, repo, pick(rng, _TASKS[kind]), n=repo.failing or None)
    if kind != "refactor":
        task += "\n\n```\n" + "\n".join(_traceback_lines(rng, repo)) + "\n```"
    context = _fill(context_lines(), max(400, tokens * 4 - len(task)))
    return [input_message(context), input_message(task)]


def _tree_lines(rng: random.Random, repo: Repo, root: str) -> Iterator[str]:
    paths = sorted(p for p in repo.files if root in (".", "") or p.startswith(root))
    for p in paths:
        yield f"{p}  ({repo.files[p].tokens * 4 // 40} lines)"
    yield f"{len(paths)} files"


# ---------------------------------------------------------------------------------------------
# Tool calls: their arguments and their outputs


@dataclass
class ToolCall:
    """A function call the model makes; ``args`` is the JSON arguments object."""

    name: str
    args: JSONObject
    call_id: str
    output_tokens: int = 0  # requested size of the output before truncation


def _run_tests_output(rng: random.Random, repo: Repo, tokens: int) -> str:
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
            test = f"test_{_fn(rng, repo)}_{pick(rng, _ADJ)}"
            yield f"{'_' * 20} {test} {'_' * 20}"
            yield ""
            yield from _test_function(rng, repo)
            yield f">       assert result == expected_{pick(rng, _NOUNS)}(value)"
            yield f"E       AssertionError: assert None == {{'{pick(rng, _NOUNS)}': 1}}"
            yield f"E        +  where None = {_fn(rng, repo)}(<{pick(rng, _NOUNS).title()}>)"
            yield ""
            yield from _traceback_lines(rng, repo)
            yield f"{pick(rng, repo.test_paths())}:{rng.randint(10, 400)}: AssertionError"

    body = _fill(failures(), max(200, tokens * 4 - sum(len(h) + 1 for h in head) - 300))
    tail = [
        "=========================== short test summary info ============================",
        *(
            f"FAILED {pick(rng, repo.test_paths())}::test_{_fn(rng, repo)} - AssertionError"
            for _ in range(min(repo.failing, 8))
        ),
        f"{'=' * 20} {repo.failing} failed, {passed} passed in {duration} {'=' * 20}",
    ]
    return "\n".join([*head, "", body, *tail])


def _search_output(rng: random.Random, repo: Repo, tokens: int) -> str:
    def lines() -> Iterator[str]:
        while True:
            path = pick(rng, list(repo.files))
            code = _statement(rng, repo, "    ")[0]
            yield f"{path}:{rng.randint(1, 800)}:{code}"

    return _fill(lines(), tokens * 4)


def _shell_output(rng: random.Random, repo: Repo, command: str, tokens: int) -> str:
    if command.startswith("git diff"):
        path = pick(rng, repo.source_paths())

        def diff() -> Iterator[str]:
            yield f"diff --git a/{path} b/{path}"
            yield f"--- a/{path}\n+++ b/{path}"
            while True:
                yield f"@@ -{rng.randint(1, 400)},7 +{rng.randint(1, 400)},8 @@"
                for _ in range(rng.randint(3, 8)):
                    mark = pick(rng, (" ", " ", "-", "+"))
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
                path = pick(rng, repo.source_paths())
                code = pick(rng, ("E501", "F401", "B006", "UP007", "arg-type", "union-attr"))
                yield (
                    f"{path}:{rng.randint(1, 500)}:{rng.randint(1, 80)}: {code} "
                    f"{pick(rng, _ADJ)} {pick(rng, _NOUNS)} in `{_fn(rng, repo)}`"
                )

        return _fill(lint(), tokens * 4)

    def trace() -> Iterator[str]:
        while True:
            yield from _traceback_lines(rng, repo)

    return _fill(trace(), tokens * 4)


def search_pattern(rng: random.Random, repo: Repo) -> str:
    """A ripgrep pattern for a ``search`` call: a function name, its def, or a class."""
    return pick(
        rng, (_fn(rng, repo), f"def {_fn(rng, repo)}", f"class {pick(rng, _NOUNS).title()}")
    )


def shell_command(rng: random.Random, repo: Repo) -> str:
    """A ``run_shell`` command line (git, linters, a repro script)."""
    return pick(rng, _SHELL_COMMANDS).format(pkg=repo.package)


def new_module_path(rng: random.Random, repo: Repo) -> str:
    """The path of a new module a ``write_file`` call creates."""
    return f"src/{repo.package}/{pick(rng, _MODULES)}_{pick(rng, _NOUNS)}.py"


def patch_text(rng: random.Random, repo: Repo, paths: Sequence[str], tokens: int) -> str:
    """An apply_patch patch updating ``paths``, about ``tokens`` tokens long."""

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


def module_text(rng: random.Random, repo: Repo, path: str, tokens: int) -> str:
    """The content of a new Python module at ``path`` (about ``tokens`` tokens)."""
    return _fill(_code_lines(rng, repo, path), tokens * 4)


def execute_call(rng: random.Random, repo: Repo, call: ToolCall, cap_tokens: int) -> str:
    """The tool output for a call, truncated to ``cap_tokens`` like agents truncate logs."""
    name, args = call.name, call.args
    if name == "read_file":
        text = repo.content(args["path"])
        numbered = "\n".join(f"{i:>5}\t{line}" for i, line in enumerate(text.split("\n"), 1))
        body = numbered
    elif name in ("apply_patch", "write_file"):
        changed = args["path"] if name == "write_file" else patched_paths(args["patch"])
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


def patched_paths(patch: str) -> list[str]:
    """The files a patch from ``patch_text`` updates."""
    return [ln.split(": ", 1)[1] for ln in patch.split("\n") if ln.startswith("*** Update File: ")]


# ---------------------------------------------------------------------------------------------
# Model and user messages


def reasoning_summary(rng: random.Random, repo: Repo) -> str:
    """The summary of a reasoning item: a bold title and one to three thoughts."""
    title = _fmt(rng, repo, pick(rng, _TITLES))
    thoughts = " ".join(_fmt(rng, repo, pick(rng, _THOUGHTS)) for _ in range(rng.randint(1, 3)))
    return f"**{title}**\n\n{thoughts}"


def preamble_text(call: ToolCall) -> str:
    """The one-sentence message the model may send before ``call``."""
    what = {
        "read_file": "read `{p}` to see how it works",
        "search": "search for the remaining call sites",
        "list_dir": "look at the repository layout first",
        "run_tests": "run the tests to check the current state",
        "run_shell": "check the working tree",
        "apply_patch": "apply the fix",
        "write_file": "create the new module",
    }[call.name].format(p=call.args.get("path", ""))
    return f"I'll {what}."


def final_message_text(
    rng: random.Random, repo: Repo, kind: str, touched: list[str], tokens: int
) -> str:
    """The closing summary (changes per touched file, verification, notes), about ``tokens``."""
    verb = {"bug_fix": "Fixed", "refactor": "Refactored", "test_fix": "Repaired"}[kind]

    def lines() -> Iterator[str]:
        yield f"{verb} the {pick(rng, _NOUNS)} handling in `{repo.package}`."
        yield ""
        yield "**Changes**"
        for path in touched or repo.source_paths()[:2]:
            yield f"- `{path}`: {_fmt(rng, repo, pick(rng, _THOUGHTS))}"
        yield ""
        yield "**Verification**"
        yield f"- `pytest -q`: {repo.total_tests} passed."
        yield ""
        yield "**Notes**"
        while True:
            yield f"- {_fmt(rng, repo, pick(rng, _THOUGHTS))}"

    return _fill(lines(), tokens * 4)


def followup_text(rng: random.Random, repo: Repo) -> str:
    """A user steering message sent along with tool outputs."""
    return _fmt(rng, repo, "Also keep `{f}` backwards compatible; other teams import it.")
