"""The reference server's request pipeline stages: pure, deterministic, stdlib-only functions.

The server charges each stage's simulated cost separately; these modules do the real work.
States (``Rendering``, ``ValidationState``, ``SafetyState``) are immutable, so one cached state
can be extended by several children.
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
