"""Did a continuation carry its parent's context? Judged from `usage`, without trusting the model.

A server that checks `previous_response_id` and then drops it answers every turn from the new
items alone; its `usage.input_tokens` gives it away. A continuation's prompt holds the parent's
prompt, the parent's visible output and the new items, so (PROTOCOL.md §2.1, §3.4):

    continuation.input_tokens >= parent.input_tokens - parent instructions
                                 + parent visible output + new items - tolerance

* parent visible output = `output_tokens - output_tokens_details.reasoning_tokens`: a server may
  drop earlier reasoning from the next prompt, never the visible output;
* the parent's `instructions` are subtracted: they are not inherited (§2.1);
* the parent's numbers are the target's own (its tokenizer); the new items' and instructions'
  sizes are measured with the project's tokenizer (`harness.protocol.tokenizer`, about
  4 characters per token), which may differ from the target's.

**Tolerance** (`tolerance_tokens`): half the new items' estimate (another tokenizer may count
them up to 2x fewer), a tenth of the parent's visible output (re-rendering the output into the
next prompt may merge or drop a few tokens, e.g. trailing whitespace or an end-of-turn marker),
plus 4 tokens of chat-template slack. A server that reports the new input alone falls short by
about the parent's whole prompt and output, far beyond this.

No `usage` on either side: the case cannot judge and reports INFORMATIONAL, never PASS.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from harness.protocol.items import item_text
from harness.protocol.tokenizer import count_tokens

TEMPLATE_SLACK_TOKENS = 4


def items_tokens(items: Any) -> int:
    """The size of a create's `input` (a string or a list of items) by the project's tokenizer."""
    if isinstance(items, str):
        return count_tokens(items)
    if not isinstance(items, Iterable):
        return 0
    return sum(count_tokens(item_text(i)) for i in items if isinstance(i, Mapping))


def _tokens(usage: Mapping[str, Any], name: str, detail: str | None = None) -> int | None:
    if detail is not None:
        details = usage.get(f"{name}_details")
        value = details.get(detail, 0) if isinstance(details, Mapping) else 0
    else:
        value = usage.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True, slots=True)
class CarriedContext:
    """The numbers a context check compares, all in tokens."""

    parent_input: int
    parent_instructions: int  # not inherited, so not expected in the continuation
    parent_visible_output: int  # output minus reasoning
    new_items: int  # by the project's tokenizer
    continuation_input: int

    @property
    def tolerance_tokens(self) -> int:
        return (
            math.ceil(self.new_items / 2)
            + math.ceil(self.parent_visible_output / 10)
            + TEMPLATE_SLACK_TOKENS
        )

    @property
    def expected_min(self) -> int:
        carried = self.parent_input - self.parent_instructions + self.parent_visible_output
        return max(carried, 0) + self.new_items - self.tolerance_tokens

    @property
    def carried(self) -> bool:
        return self.continuation_input >= self.expected_min

    def describe(self) -> str:
        return (
            f"continuation input_tokens {self.continuation_input}, expected >= "
            f"{self.expected_min} = parent input {self.parent_input}"
            + (f" - instructions {self.parent_instructions}" if self.parent_instructions else "")
            + f" + parent visible output {self.parent_visible_output}"
            f" + new items {self.new_items} - tolerance {self.tolerance_tokens}"
        )


def measure(
    parent: Mapping[str, Any], continuation: Mapping[str, Any], new_input: Any
) -> CarriedContext | str:
    """The numbers for a parent Response and its continuation's, or why they cannot be had."""
    parent_usage, child_usage = parent.get("usage"), continuation.get("usage")
    if not isinstance(parent_usage, Mapping) or not isinstance(child_usage, Mapping):
        side = "the parent" if not isinstance(parent_usage, Mapping) else "the continuation"
        return f"{side} reports no usage: whether the context was carried cannot be judged"
    parent_input = _tokens(parent_usage, "input_tokens")
    parent_output = _tokens(parent_usage, "output_tokens")
    child_input = _tokens(child_usage, "input_tokens")
    reasoning = _tokens(parent_usage, "output_tokens", "reasoning_tokens") or 0
    if parent_input is None or parent_output is None or child_input is None:
        return "usage lacks integer input_tokens/output_tokens: the context cannot be judged"
    instructions = parent.get("instructions")
    return CarriedContext(
        parent_input=parent_input,
        parent_instructions=count_tokens(instructions) if isinstance(instructions, str) else 0,
        parent_visible_output=max(parent_output - reasoning, 0),
        new_items=items_tokens(new_input),
        continuation_input=child_input,
    )


class Judged(Protocol):
    """Where a judgement goes: the case's context (runner.context.CaseContext)."""

    def check(self, condition: bool, rule_id: str, message: str) -> bool: ...

    def note(self, message: str) -> None: ...

    def inform(self, message: str) -> None: ...


def expect_context_carried(
    ctx: Judged,
    parent: Mapping[str, Any],
    continuation: Mapping[str, Any],
    new_input: Any,
    what: str = "the continuation",
) -> None:
    """Judge `continuation.context_carried`; without usage the case becomes INFORMATIONAL."""
    measured = measure(parent, continuation, new_input)
    if isinstance(measured, str):
        ctx.inform(f"{what}: {measured}")
        return
    if ctx.check(
        measured.carried,
        "continuation.context_carried",
        f"{what} reports about its new input alone, not the parent's context: "
        + measured.describe(),
    ):
        ctx.note(f"{what}: context carried ({measured.describe()})")
