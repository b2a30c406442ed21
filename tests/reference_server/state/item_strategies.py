"""Hypothesis strategies for Responses API items, shared by the state tests."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

WORDS = (
    "the", "model", "calls", "a", "tool", "def", "return", "None", "self.cache", "{", "}",
    "Traceback", "(most", "recent", "call", "last):", "ValueError:", "+++", "b/app.py", "@@",
    "internationalization", "HTTPServer", "x=1", "café", "日本語", "\n", "    ", "😀",
)  # fmt: skip
CALL_IDS = ("call_a", "call_b", "call_c", "call_d")

text = st.one_of(
    st.text(max_size=40),
    st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join),
)
json_scalar = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8))
json_value = st.recursive(
    json_scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)

text_part = st.builds(lambda t: {"type": "input_text", "text": t}, text)
output_part = st.builds(lambda t: {"type": "output_text", "text": t, "annotations": []}, text)
image_part = st.just({"type": "input_image", "image_url": "data:image/png;base64,AAAA"})
file_part = st.just({"type": "input_file", "file_id": "file_123"})
input_parts = st.lists(st.one_of(text_part, text_part, image_part, file_part), max_size=3)


def _message(role: str, content: Any, typed: bool) -> dict[str, Any]:
    item: dict[str, Any] = {"role": role, "content": content}
    if typed:
        item["type"] = "message"
    return item


user_message = st.builds(
    _message,
    st.sampled_from(("user", "system", "developer")),
    st.one_of(text, input_parts),
    st.booleans(),
)
assistant_message = st.builds(
    _message,
    st.just("assistant"),
    st.one_of(text, st.lists(output_part, max_size=2)),
    st.booleans(),
)
function_call = st.builds(
    lambda call_id, name, args: {
        "type": "function_call",
        "call_id": call_id,
        "name": name,
        "arguments": json.dumps(args),
    },
    st.sampled_from(CALL_IDS),
    st.sampled_from(("shell", "apply_patch", "read_file")),
    st.dictionaries(st.sampled_from(("cmd", "path")), text, max_size=2),
)
function_call_output = st.builds(
    lambda call_id, output: {"type": "function_call_output", "call_id": call_id, "output": output},
    st.sampled_from(CALL_IDS),
    st.one_of(text, input_parts),
)
reasoning = st.builds(
    lambda texts: {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": t} for t in texts],
    },
    st.lists(text, max_size=2),
)
valid_item = st.one_of(
    user_message, assistant_message, function_call, function_call_output, reasoning
)

# Broken items: random keys and values, wrong types, unknown types, non-objects.
invalid_item = st.one_of(
    st.dictionaries(
        st.sampled_from(("type", "role", "content", "call_id", "name", "arguments", "output",
                         "summary", "id", "status")),
        st.one_of(json_value, st.sampled_from(("message", "function_call", "function_call_output",
                                                "reasoning", "user", "assistant", "{", "")),
                  text_part.map(lambda p: [p])),
        max_size=5,
    ),
    json_scalar,
    st.builds(lambda t: {"type": t, "content": "x"}, st.sampled_from(("item_reference", "bogus"))),
    function_call.map(lambda item: {**item, "arguments": item["arguments"][:-1] or "{"}),
)  # fmt: skip
any_item = st.one_of(valid_item, valid_item, invalid_item)
