"""Request bodies the cases send: plain Responses API requests any target can serve.

Nothing here depends on the reference server's `wsmode` extension: prompts ask a real model for
what the case needs (a short answer, a long one, a tool call), and `tool_choice` forces calls.
"""

from __future__ import annotations

import secrets
from typing import Any, Final

SHORT_PROMPT: Final = "Reply with one short sentence about the sea."
# The output cap of every request that asks for a short answer (`CaseContext.body`): a model that
# does not stop on its own is cut here (response.incomplete, counted as answered), not at its
# context length, which a stateless replay of the history would then overflow.
SHORT_ANSWER_MAX_TOKENS: Final = 128
# ... and of a request that needs a long answer in flight (an essay: the queue and isolation cases,
# the lanes' long prompt): long enough that a model that does stop is never cut.
LONG_ANSWER_MAX_TOKENS: Final = 2048
LONG_PROMPT: Final = (
    "Write a detailed, 600-word essay on the history of the printing press, "
    "with an introduction, three sections and a conclusion."
)
WEATHER_PROMPT: Final = "What is the weather in Paris right now? Use the tool."
FILLER: Final = "lorem ipsum dolor sit amet consectetur adipiscing elit "  # ~10 tokens


def long_prompt(tokens: int = 20_000) -> str:
    """LONG_PROMPT behind about `tokens` tokens of filler notes: any model spends a while on such
    an input before its first output token (prefill), so the response stays in flight long enough
    for another lane to start. A nonce comes first: prompt caches match prefixes, so no request
    reuses another's prefill."""
    notes = FILLER * max(tokens // 10, 1)
    return (
        f"Request {secrets.token_hex(8)}. Background notes, ignore them: {notes}\n\n{LONG_PROMPT}"
    )


WEATHER_TOOL: Final[dict[str, Any]] = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
}
TIME_TOOL: Final[dict[str, Any]] = {
    "type": "function",
    "name": "get_time",
    "description": "Get the current local time for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
}


def user_message(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def function_output(
    call_id: str, output: str = '{"temperature_c": 18, "sky": "clear"}'
) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def invalid_item() -> dict[str, Any]:
    """An input item every Responses API implementation refuses with 400 (an unknown role)."""
    return {"type": "message", "role": "wsmode_no_such_role", "content": "x"}
