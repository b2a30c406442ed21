"""Reading Responses API items (plain JSON dicts): their text, and their history form.

One copy for every user: the reference server's pipeline (validate, safety, render), the
accumulator, the trace format, converters and recorder, and the replay driver. Readers never
raise on malformed items (validation reports those); they skip what they cannot read.

Text rules (PROTOCOL.md §3.4 gives the item shapes):

- a content part's text is its ``text`` (``input_text``, ``output_text``, ``summary_text``,
  ``reasoning_text``), or its ``refusal``; a bare string part is its own text;
- a message's text, and a ``function_call_output``'s, is its content parts joined with nothing
  between them (one text split into parts);
- a reasoning item's text is its summary parts joined by a blank line (each part is a paragraph);
- a function call reads as its name followed by its arguments.

History rule (what a client sends back as input, PROTOCOL.md §6.3: the next input is the previous
input followed by the previous response's ``output_item.done`` items): a message becomes an
assistant message with one ``output_text`` part; a function call keeps ``call_id``, ``name`` and
``arguments``; a reasoning item goes back only as the API takes it from a client, with its
``rs_`` ``id``, its summary and, when the server sent it, its ``encrypted_content``. A reasoning
item without an ``id`` (e.g. one rebuilt from a trace, which keeps no ids) cannot be resent and
is left out, as is every other item type.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

__all__ = [
    "MODEL_OUTPUT_TYPES",
    "SUMMARY_SEPARATOR",
    "assistant_message",
    "content_text",
    "function_call_item",
    "history_item",
    "is_model_output",
    "item_text",
    "item_texts",
    "item_type",
    "part_text",
    "summary_text",
]

#: Item types only the model produces (an assistant message is one too, recognised by role).
MODEL_OUTPUT_TYPES: Final = frozenset({"function_call", "custom_tool_call", "reasoning"})
#: Between the summary parts of a reasoning item when read as one text.
SUMMARY_SEPARATOR: Final = "\n\n"


def item_type(item: Mapping[str, Any]) -> str | None:
    """The item's type; a message may omit ``type`` (it is recognised by its ``role``), and so
    may an item reference (``{"id": ...}`` alone, openai-python's ``ItemReference``)."""
    kind = item.get("type")
    if kind is None:
        if "role" in item:
            return "message"
        if "id" in item and len(item) == 1:
            return "item_reference"
    return kind if isinstance(kind, str) else None


def part_text(part: object) -> str | None:
    """The text of one content part (its ``text`` or ``refusal``), None when it has none."""
    if isinstance(part, str):
        return part
    # (dict, Mapping): decoded JSON is dicts, tested at C speed; the ABC check is the fallback
    # (it costs microseconds per call when the caches are cold, as after an idle wake-up).
    if not isinstance(part, (dict, Mapping)):
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


def content_text(content: object) -> str:
    """A content value (a string or a list of parts) as one text."""
    return "".join(_content_texts(content))


def summary_text(item: Mapping[str, Any]) -> str:
    """A reasoning item's summary as one text: its parts, a blank line between them."""
    return SUMMARY_SEPARATOR.join(_content_texts(item.get("summary")))


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
    elif kind in ("function_call_output", "custom_tool_call_output"):
        yield from _content_texts(item.get("output"))
    elif kind == "custom_tool_call":
        for key in ("name", "input"):
            value = item.get(key)
            if isinstance(value, str):
                yield value
    elif kind == "reasoning":
        yield from _content_texts(item.get("summary"))


def item_text(item: Mapping[str, Any]) -> str:
    """The text a model reads in an item ("" for types without text)."""
    if item_type(item) == "reasoning":
        return summary_text(item)
    return "".join(item_texts(item))


def is_model_output(item: Mapping[str, Any]) -> bool:
    """True for an item the model produced: an assistant message, a call, reasoning."""
    kind = item_type(item)
    if kind == "message":
        return item.get("role") == "assistant"
    return kind in MODEL_OUTPUT_TYPES


def assistant_message(text: str) -> dict[str, Any]:
    """The history form of a model message: an assistant message with one output_text part."""
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }


def function_call_item(call_id: object, name: object, arguments: object) -> dict[str, Any]:
    """The history form of a function call."""
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def history_item(
    item: Mapping[str, Any], *, include_reasoning: bool = True
) -> dict[str, Any] | None:
    """An output item as the input item a client resends in its history (module docstring).

    ``include_reasoning=False`` leaves reasoning out even when it could be resent.
    """
    kind = item_type(item)
    if kind == "message":
        return assistant_message(content_text(item.get("content")))
    if kind == "function_call":
        return function_call_item(item.get("call_id"), item.get("name"), item.get("arguments", ""))
    if kind == "reasoning" and include_reasoning and isinstance(item.get("id"), str):
        return _resent_reasoning(item)
    return None


def _resent_reasoning(item: Mapping[str, Any]) -> dict[str, Any]:
    summary = [
        {"type": "summary_text", "text": text} for text in _content_texts(item.get("summary"))
    ]
    resent: dict[str, Any] = {"type": "reasoning", "id": item["id"], "summary": summary}
    if isinstance(item.get("encrypted_content"), str):
        resent["encrypted_content"] = item["encrypted_content"]
    return resent
