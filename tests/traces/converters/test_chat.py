"""The chat converter on real chat-format histories: SWE-agent's `history` is an OpenAI chat
(with SWE-agent's extra keys), so the generic converter reads it as it is."""

from __future__ import annotations

import pytest

from harness.traces.converters.chat import convert_chat
from tests.recorded import TRACE_SAMPLES, needs

REAL = TRACE_SAMPLES
pytestmark = needs(TRACE_SAMPLES)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("swe-agent-function_calling_simple.traj", (5, 5, 4)),
        ("swe-agent-6e44b9__sweagenttestrepo-1c2844.traj", (4, 4, 3)),
    ],
)
def test_real_chat_histories_convert_with_calls_linked(
    name: str, expected: tuple[int, int, int]
) -> None:
    r = convert_chat(REAL / name)
    turns = len(r.turns)
    calls = sum(len(t.function_calls) for t in r.turns)
    linked = sum(len(t.answered_call_ids) for t in r.turns)
    assert (turns, calls, linked) == expected
    assert r.source == "chat-export" and r.instructions
    for prev, turn in zip(r.turns, r.turns[1:], strict=False):
        assert turn.answered_call_ids == prev.call_ids
