"""What the engine decides before a token is sent: the plan's items, usage and timing.

A :class:`GenerationPlan` is pure data, built by :class:`reference_server.engine.Engine`; the
server's engine stage emits its pieces on the token schedule. The :class:`PlanError` family is what
a request can get wrong (the server answers 400 with the message).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from harness.errors import ProtocolError

ItemKind = Literal["message", "function_call", "reasoning"]


class PlanError(ProtocolError, ValueError):
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
    agent: str | None = None  # the agent of a multi-agent response that says it (None: root)
    # "".join(pieces) splits back into exactly `pieces`: they are the text's tokens, so the
    # rendering of the output reuses them instead of tokenizing the text again (state/render.py)
    pieces_resplit: bool = False
    # the text is paragraphs of the filler pool joined, the last one maybe cut short
    # (filler_text.pool_texts): a check of the pool vouches for it (pipeline/inference.py)
    pool_text: bool = False

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


def seeded_call_id(rng: random.Random) -> str:
    return f"call_{rng.getrandbits(96):024x}"


def truncate_items(
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
                    refusal=item.refusal,
                    agent=item.agent,
                    pool_text=item.pool_text,  # a prefix of pool text is pool text
                )
            )
        return tuple(kept), True
    return tuple(kept), False


def resplit_texts(items: Iterable[PlannedItem]) -> dict[str, tuple[str, ...]]:
    """Text -> its token pieces, for the items whose pieces are the split of their text."""
    return {item.text: item.pieces for item in items if item.pieces_resplit and item.pieces}
