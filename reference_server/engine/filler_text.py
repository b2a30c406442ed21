"""Seeded coding-agent text: filler prose, bullets and code, and reasoning summaries.

Every piece comes from the tokenizer's lossless ``split()``, so a text's pieces are its tokens.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from functools import cache
from itertools import chain
from typing import Final

from harness.protocol.tokenizer import split
from reference_server.engine.argsynth import IDENTIFIERS


def exact_split(text: str) -> tuple[str, ...]:
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


def _sentences(rng: random.Random, most: int) -> str:
    """One to `most` sentences of prose (the count is drawn first)."""
    return " ".join(_fill(rng.choice(_PROSE), rng) for _ in range(rng.randint(1, most)))


_SUMMARY_TITLES: Final = (
    "Inspecting the failing test",
    "Planning the refactor",
    "Tracing the error path",
    "Checking the configuration",
    "Reviewing the request handler",
    "Deciding on the fix",
    "Reading the test output",
)


def reasoning_summary(rng: random.Random) -> str:
    """A bold title and one or two sentences, as a reasoning summary reads."""
    title = rng.choice(_SUMMARY_TITLES)
    return f"**{title}**\n\n{_sentences(rng, 2)}"


def _chunk(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.7:
        return _sentences(rng, 3) + "\n\n"
    if roll < 0.85:
        return "".join(_fill(rng.choice(_BULLETS), rng) for _ in range(rng.randint(2, 4))) + "\n"
    return _fill(rng.choice(_CODE), rng) + "\n"


# Generated text comes from a pool of paragraphs made and split once (seeded, so every process
# holds the same pool): a reply is a seeded draw of paragraphs cut at its token count, so a
# turn spends microseconds on its text instead of generating and tokenizing paragraphs it then
# cuts away (the cost that made an unscripted turn twice a scripted one).
FILLER_POOL_SIZE: Final = 512
_POOL_SEED: Final = 0x77736D6F  # "wsmo"


@cache
def _pool() -> tuple[tuple[str, ...], ...]:
    """The paragraphs, each as its token pieces."""
    rng = random.Random(_POOL_SEED)
    return tuple(exact_split(_chunk(rng)) for _ in range(FILLER_POOL_SIZE))


def warm_filler_pool() -> None:
    """Make the pool now (tens of ms), so that no request waits for it: a server calls this at
    start-up."""
    _pool()


@cache
def pool_texts() -> tuple[str, ...]:
    """The pool's paragraphs as text: every generated reply is these joined, the last one maybe
    cut short (what lets a per-process check vouch for every reply, `state/safety.py`)."""
    return tuple("".join(pieces) for pieces in _pool())


@cache
def _cut_verdicts() -> tuple[bytearray, ...]:
    """Per paragraph, per kept piece count: 0 not yet known, 1 a clean cut, 2 not. Filled as
    cuts are drawn (a few bytes a paragraph), so each cut is re-split once per process."""
    return tuple(bytearray(len(pieces) + 1) for pieces in _pool())


def _clean_cut(index: int, kept: int) -> bool:
    """Whether the first `kept` pieces of paragraph `index`, joined, re-split into exactly
    those pieces (so a client re-tokenizing the reply counts what usage says). Only the last
    paragraph's kept part needs the check: paragraphs end in a line break and begin with none,
    so whole ones join cleanly."""
    verdicts = _cut_verdicts()[index]
    verdict = verdicts[kept]
    if not verdict:
        pieces = _pool()[index][:kept]
        verdict = verdicts[kept] = 1 if tuple(split("".join(pieces))) == pieces else 2
    return verdict == 1


def filler_pieces_checked(n: int, rng: random.Random) -> tuple[tuple[str, ...], bool]:
    """Exactly ``n`` token pieces of coding-agent prose and code (seeded), and whether the
    joined text re-splits into exactly these pieces: then they are its tokens, and whoever
    renders the reply need not split it.

    Paragraphs drawn from the pool, the last one cut at a token boundary; when possible (up to 4
    draws; the usual case) at one where re-tokenizing the joined text gives back the same
    pieces.
    """
    if n <= 0:
        return (), True
    pool = _pool()
    chosen: list[tuple[str, ...]] = []
    last: tuple[str, ...] = ()
    for _attempt in range(4):
        chosen, total = [], 0
        while True:
            index = rng.randrange(FILLER_POOL_SIZE)
            paragraph = pool[index]
            total += len(paragraph)
            if total >= n:
                break
            chosen.append(paragraph)
        kept = n - (total - len(paragraph))  # what the reply keeps of the last: 1..all pieces
        last = paragraph[:kept]
        clean = _clean_cut(index, kept)
        if clean:
            break
    return tuple(chain.from_iterable(chosen)) + last, clean  # joined in C: no per-piece step
