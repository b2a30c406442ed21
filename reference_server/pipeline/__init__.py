"""The reference server's request pipeline: the mechanisms, and the stages `turn.py` calls.

Mechanisms (pure, deterministic, stdlib-only): `tokenizer`, `render`, `validate`, `safety`,
`prefix` (chained prefix keys, the KV prefix cache). Their states (``Rendering``,
``ValidationState``, ``SafetyState``) are immutable, so one cached state can be extended by
several children.

Stages, in the order of ARCHITECTURE.md §3, each one call from `turn.py` that does its real work
and charges the profile's cost for it: `resolve` (through `turn_cache`), `checks` (validate +
safety), `prompt` (render), `route`, `inference` (plan + scheduled decode, through `outbox`),
`response` (the Response object and terminal), `remember` (the cache entry), `post_inference`.
"""

from .render import Rendering, render_full, render_item, render_prefix, shared_prefix_tokens
from .safety import SafetyState, SafetyVerdict, classify_input, classify_output
from .tokenizer import count_tokens, split, tokenize
from .validate import ItemError, ValidationState, validate_items

__all__ = [
    "ItemError",
    "Rendering",
    "SafetyState",
    "SafetyVerdict",
    "ValidationState",
    "classify_input",
    "classify_output",
    "count_tokens",
    "render_full",
    "render_item",
    "render_prefix",
    "shared_prefix_tokens",
    "split",
    "tokenize",
    "validate_items",
]
