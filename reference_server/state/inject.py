"""Which injected items a running multi-agent response can commit (PROTOCOL.md §2.2). Pure.

`response.inject` is "validated and committed atomically": every item must be a
`function_call_output` (the only input the upstream server accepts today: "client-owned tool
outputs that resume a waiting agent"), well formed as any input item (`validate.validate_items`),
answering a call the response emitted and still waits for, and no call twice. The first problem
found rejects the whole inject; nothing of it is committed.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from reference_server.state.validate import ValidationState, validate_items


def inject_problem(items: Sequence[Any], waiting: Collection[str]) -> str | None:
    """Why `items` cannot be committed to a response waiting for `waiting` call ids; None: ok."""
    if not items:
        return "Invalid 'input': an inject commits at least one item."
    seen: set[str] = set()
    for index, item in enumerate(items):
        kind = item.get("type") if isinstance(item, dict) else None
        if kind != "function_call_output":
            return (
                f"Invalid 'input[{index}]': a response takes only function_call_output items "
                "by inject (client-owned tool outputs that resume a waiting agent)."
            )
        call_id = item.get("call_id")
        if isinstance(call_id, str) and call_id in seen:
            return f"Invalid 'input[{index}].call_id': call {call_id!r} is answered twice."
        if isinstance(call_id, str):
            seen.add(call_id)
    state = ValidationState(issued_call_ids=frozenset(waiting))
    _, problems = validate_items(state, list(items))
    if problems:
        first = problems[0]
        if first.param.endswith(".call_id") and first.message.startswith("No tool call"):
            return (
                f"{first.message} The response waits for no such call (unknown, answered "
                "already, or not a client-owned call of this response)."
            )
        return first.message
    return None
