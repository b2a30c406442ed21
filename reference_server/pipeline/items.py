"""Small readers for Responses API items (plain JSON dicts), shared by the pipeline stages.

They never raise on malformed items: validation reports those; the other stages just skip
what they cannot read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["item_texts", "item_type", "part_text"]


def item_type(item: Mapping[str, Any]) -> str | None:
    """The item's type; a message may omit ``type`` (it is recognised by its ``role``)."""
    kind = item.get("type")
    if kind is None and "role" in item:
        return "message"
    return kind if isinstance(kind, str) else None


def part_text(part: object) -> str | None:
    """The text of one content part (input_text, output_text, refusal, summary_text)."""
    if not isinstance(part, Mapping):
        return None
    text = part.get("text")
    if isinstance(text, str):
        return text
    refusal = part.get("refusal")
    return refusal if isinstance(refusal, str) else None


def _content_texts(content: object) -> Iterator[str]:
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for part in content:
            text = part_text(part)
            if text is not None:
                yield text


def item_texts(item: Mapping[str, Any]) -> Iterator[str]:
    """Every piece of natural-language text an item carries, in order."""
    kind = item_type(item)
    if kind == "message":
        yield from _content_texts(item.get("content"))
    elif kind == "function_call":
        for key in ("name", "arguments"):
            value = item.get(key)
            if isinstance(value, str):
                yield value
    elif kind == "function_call_output":
        yield from _content_texts(item.get("output"))
    elif kind == "reasoning":
        yield from _content_texts(item.get("summary"))
