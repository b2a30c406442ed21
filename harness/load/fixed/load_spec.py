"""What `wsmode load` sends: one mode's fixed request shape and load pattern (`LoadSpec`), and
its requests, built with no I/O.

Every request is a plain Responses API create that any standard server accepts: `model`, one
user message of synthetic text (`input_tokens`, fixed or normal around a mean), and
`max_output_tokens`; `store` false, except over `http-chained`, which stores so that the next
turn's `previous_response_id` resolves. Nothing project-only (no `wsmode` field) is sent.

**Same work in every mode.** Each mode of each run draws its own prompts: `seed` is the mode's
(`mode_seed(run_seed, mode)`, a fresh run seed unless `--seed` is given), so no mode finds the
prompts of an earlier mode (or run) in the target's prefix cache. A shared-prefix workload is
asked for explicitly: `prefix_share` is the fraction of each prompt's tokens taken from one
prefix common to every request, mode and run (`prefix_seed`), the rest fresh.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import random
from dataclasses import dataclass, replace
from typing import Any

from harness.load.core.modes import Mode, parse_mode
from harness.load.core.replay_options import Endpoint
from harness.load.core.target_watch import DEFAULT_EVENT_TIMEOUT_S, DEFAULT_TURN_TIMEOUT_S
from harness.load.target_options import LOAD_PATTERN, OUTPUT
from harness.options import option
from harness.protocol.requests import MIN_MAX_OUTPUT_TOKENS

DEFAULT_MODEL = "gpt-5-codex"


def output_token_cap(text: str) -> int:
    """A max_output_tokens the API takes: an integer >= 16 (it refuses fewer)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < MIN_MAX_OUTPUT_TOKENS:
        raise argparse.ArgumentTypeError(
            f"the API refuses max_output_tokens below {MIN_MAX_OUTPUT_TOKENS}, got {value}"
        )
    return value


# common English words of at most 7 letters: one token each after a space (o200k and the
# reference server's tokenizer alike), so N words make an N-token prompt
_WORD_TEXT = (
    "the of and to in is you that it he was for on are as with his they at be this have from "
    "or one had by word but not what all were we when your can said there use an each which "
    "she do how their if will up other about out many then them these so some her would make "
    "like him into time has look two more write go see number no way could people my than "
    "first water been call who oil its now find long down day did get come made may part"
)
_WORDS = tuple(_WORD_TEXT.split())


#: the help group of the request shape's options
SHAPE = "request shape"


@dataclass(frozen=True, slots=True)
class LoadSpec:
    """One `wsmode load` run in one mode; `share` gives one process its part of it. The fields
    that are options of `wsmode load` declare them (harness.options): one mode's request shape
    and load pattern, the same in every mode."""

    mode: Mode
    endpoint: Endpoint
    model: str = option(DEFAULT_MODEL, "--model", group=SHAPE, help="model every request names")
    input_tokens: int = option(
        256, "--input-tokens", group=SHAPE, type=int, help="input tokens (mean)"
    )
    input_tokens_stddev: float = option(
        0.0, "--input-tokens-stddev", group=SHAPE, type=float, help="normal stddev"
    )
    output_tokens: int = option(
        128,
        "--output-tokens",
        group=SHAPE,
        type=output_token_cap,
        help="sent as max_output_tokens (at least 16: the API refuses fewer)",
    )
    concurrency: int = option(
        8, "--concurrency", type=int, group=LOAD_PATTERN, help="in flight (with --rate: at most)"
    )
    rate_per_s: float | None = option(
        None, "--rate", type=float, group=LOAD_PATTERN, help="requests per second, Poisson arrivals"
    )
    duration_s: float | None = None
    requests: int | None = None
    turns: int = option(
        1,
        "--turns",
        group=SHAPE,
        type=int,
        help="requests per conversation: ws / http-chained chain them with "
        "previous_response_id (one connection / one stored chain); http resends the whole "
        "conversation so far with each one (stateless), so every mode does the same work",
    )
    seed: int = 0  # this mode's prompts and arrivals: mode_seed(run seed, mode)
    # fraction of each prompt from the prefix shared by every request
    prefix_share: float = option(
        0.0,
        "--prefix-share",
        group=SHAPE,
        type=float,
        metavar="RATIO",
        help="a shared-prefix workload: this fraction (0-1) of every prompt is one prefix "
        "common to every request, mode and run (0: every prompt fresh, per run and mode)",
    )
    prefix_seed: int = 0
    timeout_s: float = option(
        DEFAULT_TURN_TIMEOUT_S,
        "--timeout-s",
        type=float,
        group=LOAD_PATTERN,
        help=f"per request; each event {DEFAULT_EVENT_TIMEOUT_S:g} s. A request that times "
        "out asks a liveness probe whether the target still answers; a dead target ends the "
        "run",
    )
    keep_samples: int = option(
        20_000,
        "--keep-samples",
        type=int,
        group=OUTPUT,
        help="per-request samples kept per process",
    )

    def __post_init__(self) -> None:
        parse_mode(self.mode)
        self.endpoint.for_mode(self.mode)  # raises when the mode's URL is missing
        for name in ("input_tokens", "output_tokens", "concurrency", "turns"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if self.input_tokens_stddev < 0:
            raise ValueError("input_tokens_stddev must be >= 0")
        if not 0.0 <= self.prefix_share <= 1.0:
            raise ValueError(f"prefix share must be in [0, 1], got {self.prefix_share:g}")
        if self.rate_per_s is not None and not self.rate_per_s > 0:
            raise ValueError("rate must be > 0 requests per second")
        if self.requests is None and self.duration_s is None:
            raise ValueError("give a request count or a duration (or both)")
        if self.requests is not None and self.requests < 1:
            raise ValueError("requests must be >= 1")
        if self.duration_s is not None and not self.duration_s > 0:
            raise ValueError("duration must be > 0 s")

    @property
    def chained(self) -> bool:
        return self.mode != "http" and self.turns > 1

    @property
    def resends_history(self) -> bool:
        """`http` with several turns: each turn resends the conversation so far."""
        return self.mode == "http" and self.turns > 1

    def share(self, index: int, parts: int) -> LoadSpec | None:
        """Process `index` of `parts`: its concurrency, rate and count (None: nothing to do).

        Poisson arrivals at rate r split into `parts` independent streams of r/parts each are
        again Poisson at r in total, so the split changes nothing the target sees.
        """
        concurrency = _split(self.concurrency, index, parts)
        requests = None if self.requests is None else _split(self.requests, index, parts)
        if concurrency == 0 or requests == 0:
            return None
        rate = None if self.rate_per_s is None else self.rate_per_s / parts
        seed = self.seed * 1_000_003 + index
        return replace(self, concurrency=concurrency, requests=requests, rate_per_s=rate, seed=seed)

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "url": self.endpoint.for_mode(self.mode),
            "model": self.model,
            "input_tokens": self.input_tokens,
            "input_tokens_stddev": self.input_tokens_stddev,
            "output_tokens": self.output_tokens,
            "concurrency": self.concurrency,
            "rate_per_s": self.rate_per_s,
            "duration_s": self.duration_s,
            "requests": self.requests,
            "turns": self.turns,
            "seed": self.seed,
            "prompts": self.prompts,
            "prefix_share": self.prefix_share,
            "prefix_seed": self.prefix_seed if self.prefix_share else None,
            "timeout_s": self.timeout_s,
        }

    @property
    def prompts(self) -> str:
        """How this mode's prompts were drawn, in words (results config, console)."""
        if not self.prefix_share:
            return f"fresh for this run and mode (seed {self.seed})"
        return (
            f"{self.prefix_share:.0%} of each prompt from a prefix shared by every request, mode "
            f"and run (prefix seed {self.prefix_seed}), the rest fresh (seed {self.seed})"
        )


def mode_seed(run_seed: int, mode: str) -> int:
    """The seed of one mode's prompts in a run: distinct per mode, reproducible from the run's."""
    digest = hashlib.sha256(f"wsmode-load:{run_seed}:{mode}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def _split(total: int, index: int, parts: int) -> int:
    return total // parts + (1 if index < total % parts else 0)


def synthetic_text(rng: random.Random, tokens: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(tokens))


@functools.lru_cache(maxsize=64)
def shared_prefix(prefix_seed: int, tokens: int) -> str:
    """The first `tokens` words of the prefix every request shares (a longer one extends it)."""
    return synthetic_text(random.Random(f"wsmode-prefix:{prefix_seed}"), tokens)


def input_token_count(spec: LoadSpec, rng: random.Random) -> int:
    if not spec.input_tokens_stddev:
        return spec.input_tokens
    return max(1, round(rng.gauss(spec.input_tokens, spec.input_tokens_stddev)))


def request_body(spec: LoadSpec, rng: random.Random, previous_id: str | None) -> dict[str, Any]:
    """One standard create: model, one user message, max_output_tokens, store."""
    tokens = input_token_count(spec, rng)
    shared = round(tokens * spec.prefix_share)
    parts = [shared_prefix(spec.prefix_seed, shared)] if shared else []
    if tokens > shared:
        parts.append(synthetic_text(rng, tokens - shared))
    text = " ".join(parts)
    body: dict[str, Any] = {
        "model": spec.model,
        "input": [{"type": "message", "role": "user", "content": text}],
        "max_output_tokens": spec.output_tokens,
        "store": spec.mode == "http-chained",
    }
    if previous_id is not None:
        body["previous_response_id"] = previous_id
    return body
