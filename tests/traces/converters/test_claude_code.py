"""Claude Code sessions: real session files (tool calls, thinking, errors, a compaction, a warm-up
sidechain), a hand-written session whose Task calls spawn two sub-agents, and input errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.traces.converters.claude_code import convert_claude_code, iter_claude_sessions
from harness.traces.format import TraceFormatError

SAMPLES = Path(__file__).resolve().parent / "samples" / "claude-code"
MAIN = SAMPLES / "c45af7b1-cb7c-4e51-93db-8cbb250a877a.jsonl"  # 2.0.76, compacted, warm-up agent
STUDIO = SAMPLES / "5da894cf-39f2-4285-8dad-323adb2d00ef.jsonl"  # 2.0.76, opus, 2 Bash calls
TASKS = SAMPLES / "handwritten" / "0f1e2d3c-4b5a-4c6d-8e7f-000000000001.jsonl"


def calls(rollout) -> int:  # type: ignore[no-untyped-def]
    return sum(len(t.function_calls) for t in rollout.turns)


def linked(rollout) -> int:  # type: ignore[no-untyped-def]
    return sum(len(t.answered_call_ids) for t in rollout.turns)


@pytest.mark.parametrize(
    ("path", "turns", "tool_calls", "links", "thinking"),
    [(MAIN, 12, 10, 10, 12), (STUDIO, 3, 2, 2, 3)],
)
def test_real_sessions_convert_with_their_counts(
    path: Path, turns: int, tool_calls: int, links: int, thinking: int
) -> None:
    session = convert_claude_code(path)[0]
    assert session.source == "claude-code" and session.meta["claude_code_version"] == "2.0.76"
    assert (len(session.turns), calls(session), linked(session)) == (turns, tool_calls, links)
    assert session.meta["thinking_blocks"] == thinking
    # every request's thinking is a reasoning item, every turn keeps its recorded usage and time
    assert all(t.output[0].type == "reasoning" for t in session.turns)
    assert all(
        {"input_tokens", "cached_tokens", "e2e_ms"} <= set(t.observed) for t in session.turns
    )


def test_parallel_calls_of_one_request_are_one_turn_and_answered_together() -> None:
    turns = convert_claude_code(MAIN)[0].turns
    assert [c.name for c in turns[8].function_calls] == ["Write", "Write"]
    assert [c.name for c in turns[9].function_calls] == ["Read", "Bash", "Bash"]
    assert turns[10].answered_call_ids == tuple(c.call_id for c in turns[9].function_calls)
    # the failed command's error text is the tool output, the recorded gap the tool wait
    assert "command not found" in turns[10].input[1]["output"]
    assert turns[10].tool_wait_ms == 2817.0
    assert turns[8].observed["output_tokens"] == 993  # the request's final count, not its first


def test_a_compaction_with_no_model_request_after_it_leaves_no_empty_rollout() -> None:
    rollouts = convert_claude_code(MAIN)
    assert [r.id for r in rollouts] == [
        "claude-c45af7b1-cb7c-4e51-93db-8cbb250a877a",
        "claude-c45af7b1-cb7c-4e51-93db-8cbb250a877a-af1ff21",
    ]
    assert rollouts[0].meta["skipped_records"]["system:compact_boundary"] == 1


def test_a_warm_up_sidechain_is_kept_but_not_attached_to_a_turn() -> None:
    warmup = convert_claude_code(MAIN)[1]
    assert warmup.model == "claude-haiku-4-5-20251001" and len(warmup.turns) == 1
    assert "parent_rollout" not in warmup.meta  # no Task call spawned it
    assert warmup.meta["session_rollout"] == "claude-c45af7b1-cb7c-4e51-93db-8cbb250a877a"
    assert warmup.meta["start_offset_ms"] < 0  # it ran before the first user message


def test_task_calls_link_their_sub_agents_by_result_and_by_prompt() -> None:
    main, first, second = convert_claude_code(TASKS)
    assert [c.name for c in main.turns[0].function_calls] == ["Task", "Task"]
    assert main.turns[1].tool_wait_ms == 7800.0  # the parent waited for both sub-agents
    assert first.meta["parent_rollout"] == second.meta["parent_rollout"] == main.id
    assert (first.meta["spawn_call_id"], first.meta["link"]) == (
        "toolu_hw_task1",
        "task result names the agent",
    )
    assert (second.meta["spawn_call_id"], second.meta["link"]) == (
        "toolu_hw_task2",
        "task prompt equals the sub-agent's first message",
    )
    assert (first.meta["spawned_after_turn"], first.meta["start_after_turn_ms"]) == (0, 700.0)
    assert first.meta["subagent_type"] == "Explore"
    assert (len(first.turns), calls(first), linked(first)) == (2, 1, 1)


def test_inline_sidechains_are_sub_agents_of_their_own(tmp_path: Path) -> None:
    """Claude Code 1.x wrote sidechain records inside the session file."""
    session = tmp_path / "session.jsonl"
    records = TASKS.read_text().splitlines()
    sub = (TASKS.parent / TASKS.stem / "subagents" / "agent-b2c3d4e.jsonl").read_text()
    session.write_text("\n".join([*records, *sub.splitlines()]) + "\n")
    main, agent = convert_claude_code(session, subagents=[])
    assert agent.meta["link"] == "task prompt equals the sub-agent's first message"
    assert agent.id == f"{main.id}-b2c3d4e"


def test_a_directory_converts_sessions_and_leaves_sub_agent_files_to_them(tmp_path: Path) -> None:
    shutil.copytree(TASKS.parent, tmp_path / "project")
    found = list(iter_claude_sessions(tmp_path / "project"))
    assert [p.name for p in found] == [TASKS.name]


def test_a_truncated_file_names_the_file_and_line(tmp_path: Path) -> None:
    text = MAIN.read_text()
    cut = tmp_path / MAIN.name
    cut.write_text(text[: text.index("toolu_01HaquTrAhq2raBg86UfK1s6") + 10])
    with pytest.raises(TraceFormatError) as err:
        convert_claude_code(cut)
    assert (err.value.path, err.value.line) == (
        str(cut),
        text[: cut.stat().st_size].count("\n") + 1,
    )
    assert "invalid JSON" in str(err.value)


@pytest.mark.parametrize(
    ("record", "field", "reason"),
    [
        ({"type": "assistant"}, "message", "(missing)"),
        ({"type": "user", "message": {"role": "user"}}, "message.content", "(missing)"),
        ({"message": {}}, "type", "(missing)"),
        (
            {"type": "user", "message": {"content": [{"type": "tool_result", "content": "x"}]}},
            "message.content[0].tool_use_id",
            "(missing)",
        ),
    ],
)
def test_bad_records_name_file_line_and_field(
    tmp_path: Path, record: dict[str, object], field: str, reason: str
) -> None:
    path = tmp_path / "s.jsonl"
    first = {"type": "user", "message": {"role": "user", "content": "hi"}}
    path.write_text(json.dumps(first) + "\n" + json.dumps(record) + "\n")
    with pytest.raises(TraceFormatError) as err:
        convert_claude_code(path)
    assert (err.value.line, err.value.field) == (2, field)
    assert reason in err.value.reason
